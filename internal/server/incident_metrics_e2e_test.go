package server_test

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// scrapeMetrics reads /metrics with the admin key.
func scrapeMetrics(t *testing.T, h *harness) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, h.gw.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("metrics: %d", resp.StatusCode)
	}
	return string(b)
}

// sample finds one sample of a scrape by name and labels (each given as
// name=value, in any order); ok is false when there is none.
func sample(body, name string, labels ...string) (v float64, ok bool) {
	for line := range strings.SplitSeq(body, "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		series, val, found := strings.Cut(line, " ")
		if !found {
			continue
		}
		n, ls, _ := strings.Cut(series, "{")
		if n != name {
			continue
		}
		have := map[string]bool{}
		for l := range strings.SplitSeq(strings.TrimSuffix(ls, "}"), ",") {
			if k, v, ok := strings.Cut(l, "="); ok {
				have[k+"="+strings.Trim(v, `"`)] = true
			}
		}
		if len(have) != len(labels) {
			continue
		}
		all := true
		for _, l := range labels {
			all = all && have[l]
		}
		if all {
			f, err := strconv.ParseFloat(val, 64)
			return f, err == nil
		}
	}
	return 0, false
}

// An outage scripted on the primary, read back from /metrics: where
// traffic failed over from and to, which deployment served the route,
// how many rungs the route has left, the primary's circuit, the ledger's
// lag; then the recovery.
func TestIncidentMetricsAfterOutage(t *testing.T) {
	h := newHarness(t, rungSpec{"primary", "anthropic"}, rungSpec{"secondary", "openai"})
	route := "route=" + publicModel
	if got := served(t, h, false); got != "primary" {
		t.Fatalf("served by %q before the outage", got)
	}
	h.fault("primary", "status=529")
	for i := range 5 { // two failovers open the circuit; three go straight to the secondary
		if got := served(t, h, i%2 == 1); got != "secondary" {
			t.Fatalf("request %d served by %q", i, got)
		}
	}
	type want struct {
		name   string
		labels []string
		v      float64
	}
	check := func(wants []want) {
		t.Helper()
		var body string
		var bad []string
		// A request is counted when its handler returns, just after its
		// last byte: poll briefly.
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			body, bad = scrapeMetrics(t, h), nil
			for _, w := range wants {
				if v, ok := sample(body, w.name, w.labels...); !ok || v != w.v {
					bad = append(bad, w.name+"{"+strings.Join(w.labels, ",")+"}: got "+strconv.FormatFloat(v, 'g', -1, 64)+" ("+strconv.FormatBool(ok)+"), want "+strconv.FormatFloat(w.v, 'g', -1, 64))
				}
			}
			if len(bad) == 0 || time.Now().After(deadline) {
				break
			}
		}
		for _, b := range bad {
			t.Error(b)
		}
	}
	check([]want{
		{"spillway_failovers_total", []string{route, "from=primary", "to=secondary"}, 2},
		{"spillway_served_total", []string{route, "deployment=primary"}, 1},
		{"spillway_served_total", []string{route, "deployment=secondary"}, 5},
		{"spillway_route_rungs", []string{route, "pool=pool"}, 2},
		{"spillway_route_healthy_rungs", []string{route, "pool=pool"}, 1},
		{"spillway_deployment_healthy", []string{"deployment=primary", "state=open"}, 0},
		{"spillway_deployment_healthy", []string{"deployment=secondary", "state=healthy"}, 1},
	})
	body := scrapeMetrics(t, h)
	if lag, ok := sample(body, "spillway_ledger_lag_seconds"); !ok || lag < 0 || lag > 5 {
		t.Errorf("spillway_ledger_lag_seconds %v (present %v)", lag, ok)
	}
	if _, ok := sample(body, "spillway_config_last_reload_refused"); !ok {
		t.Error("no spillway_config_last_reload_refused")
	}
	// No series names anything a caller typed.
	if strings.Contains(body, "Say hello") || strings.Contains(body, "Be brief") {
		t.Error("content in /metrics")
	}

	// The provider recovers: after the open period one probe closes the
	// circuit and the route has both rungs again.
	h.fault("primary", "")
	h.clock.Advance(30 * time.Second)
	if got := served(t, h, false); got != "primary" {
		t.Fatalf("probe served by %q", got)
	}
	check([]want{
		{"spillway_route_healthy_rungs", []string{route, "pool=pool"}, 2},
		{"spillway_served_total", []string{route, "deployment=primary"}, 2},
		{"spillway_failovers_total", []string{route, "from=primary", "to=secondary"}, 2},
	})
}
