package server_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/catalog"
)

func TestMetrics(t *testing.T) {
	h := newHarness(t, rungSpec{"primary", "anthropic"}, rungSpec{"secondary", "openai"})
	served(t, h, false)
	h.fault("primary", "status=529")
	served(t, h, true)
	get := func(key string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, h.gw.URL+"/metrics", nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// The harness's scraper is on loopback: by default it needs no key.
	if code, _ := get(""); code != 200 {
		t.Errorf("metrics from loopback without the admin key: %d", code)
	}
	wants := []string{
		`spillway_requests_total{dialect="openai-chat",model="` + publicModel + `",outcome="ok"} 2`,
		`spillway_attempts_total{deployment="primary",verdict="ok"} 1`,
		`spillway_attempts_total{deployment="primary",verdict="provider_unavailable"} 1`,
		`spillway_attempts_total{deployment="secondary",verdict="ok"} 1`,
		`spillway_deployment_healthy{deployment="secondary",state="healthy"} 1`,
		`spillway_cost_micro_usd_total{deployment="secondary"}`,
		`spillway_first_token_seconds_bucket{deployment="primary"`,
		// Both settlements were committed before their final bytes; the
		// reservations were queued ahead of them.
		"spillway_ledger_settlements_total 2\n",
		"spillway_ledger_reservations_total 2\n",
		"spillway_ledger_lost_total 0\n",
		`spillway_ledger_settle_wait_seconds{quantile="0.99"}`,
	}
	// A request is counted once its handler returns, which for a stream is
	// just after its last byte reached the caller: a scrape at that moment
	// may miss it, so poll for a while.
	var missing []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		code, body := get(adminKey)
		if code != 200 {
			t.Fatalf("metrics: %d", code)
		}
		missing = missing[:0]
		for _, want := range wants {
			if !strings.Contains(body, want) {
				missing = append(missing, want)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, m := range missing {
		t.Errorf("metrics lack %s", m)
	}
}

// server.metrics_auth: "loopback" (default) opens /metrics to this host
// only, "admin" asks everyone for the admin key, "none" opens it to all.
func TestMetricsAuth(t *testing.T) {
	for _, tc := range []struct {
		mode   string
		remote string
		key    string
		want   int
	}{
		{"loopback", "127.0.0.1:5000", "", 200},
		{"loopback", "[::1]:5000", "", 200},
		{"loopback", "10.0.0.7:5000", "", 401},
		{"loopback", "10.0.0.7:5000", adminKey, 200},
		{"loopback", "10.0.0.7:5000", "wrong", 401},
		{"admin", "127.0.0.1:5000", "", 401},
		{"admin", "127.0.0.1:5000", adminKey, 200},
		{"none", "10.0.0.7:5000", "", 200},
	} {
		t.Run(tc.mode+" "+tc.remote+" "+tc.key, func(t *testing.T) {
			h := newHarnessWith(t, func(c *catalog.Config) { c.Server.MetricsAuth = tc.mode }, rungSpec{"primary", "openai"})
			req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			req.RemoteAddr = tc.remote
			if tc.key != "" {
				req.Header.Set("Authorization", "Bearer "+tc.key)
			}
			w := httptest.NewRecorder()
			h.handler.ServeHTTP(w, req)
			if w.Code != tc.want {
				t.Errorf("got %d, want %d: %s", w.Code, tc.want, w.Body.String())
			}
		})
	}
}
