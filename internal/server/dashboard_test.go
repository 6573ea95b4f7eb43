package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/activity"
	"github.com/spillway-gw/spillway/internal/server"
)

// getAs sends GET path with key as a bearer token (none when empty).
func getAs(t *testing.T, h *harness, path, key string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, h.gw.URL+path, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// The dashboard's data is the admin API's: without the admin key (none, a
// wrong one, a tenant's virtual key) every endpoint is a 401, and without
// an admin key configured the endpoints do not exist. The page itself is
// static and public.
func TestDashboardEndpointsNeedTheAdminKey(t *testing.T) {
	h := newHarness(t, rungSpec{"primary", "openai"})
	paths := []string{"/v1/admin/traffic", "/v1/admin/failures", "/v1/admin/failures?limit=5"}
	for _, path := range paths {
		for _, tc := range []struct{ who, key string }{{"no key", ""}, {"a wrong key", "admin-wrong"}, {"a tenant's key", h.key}} {
			resp, b := getAs(t, h, path, tc.key)
			if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(b), "invalid_admin_key") {
				t.Errorf("%s with %s: %d %s", path, tc.who, resp.StatusCode, b)
			}
		}
		if resp, b := getAs(t, h, path, adminKey); resp.StatusCode != http.StatusOK {
			t.Errorf("%s with the admin key: %d %s", path, resp.StatusCode, b)
		} else if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("%s: Cache-Control %q, want no-store", path, cc)
		}
	}
	if resp, b := getAs(t, h, "/ui", ""); resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `src="/ui/app.js"`) ||
		!strings.Contains(resp.Header.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Errorf("GET /ui without a key: %d %v", resp.StatusCode, resp.Header)
	}

	off := newHarnessOpts(t, nil, func(o *server.Options) { o.AdminKey = "" }, rungSpec{"primary", "openai"})
	for _, path := range paths {
		if resp, b := getAs(t, off, path, adminKey); resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), "admin_disabled") {
			t.Errorf("%s with no admin key configured: %d %s", path, resp.StatusCode, b)
		}
	}
}

// GET /v1/admin/failures takes a positive limit, capped at the trail's
// capacity; anything else is the caller's error.
func TestDashboardFailuresLimit(t *testing.T) {
	h := newHarness(t, rungSpec{"primary", "openai"}, rungSpec{"secondary", "anthropic"})
	h.fault("primary", "status=503")
	for range 2 {
		served(t, h, false)
	}
	for _, tc := range []struct {
		query string
		code  int
		n     int
	}{
		{"", 200, 2},
		{"?limit=1", 200, 1},
		{"?limit=2", 200, 2},
		{"?limit=1000000000", 200, 2},
		{"?limit=0", 400, 0},
		{"?limit=-3", 400, 0},
		{"?limit=ten", 400, 0},
		{"?limit=99999999999999999999", 400, 0},
	} {
		resp, b := getAs(t, h, "/v1/admin/failures"+tc.query, adminKey)
		if resp.StatusCode != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.query, resp.StatusCode, b, tc.code)
			continue
		}
		if tc.code != 200 {
			if !strings.Contains(string(b), `"param": "limit"`) && !strings.Contains(string(b), "limit") {
				t.Errorf("%s: the error does not name limit: %s", tc.query, b)
			}
			continue
		}
		var f activity.Failures
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		if len(f.Failures) != tc.n || f.Total != 2 || f.Capacity != activity.DefaultTrail {
			t.Errorf("%s: %d failures of %d (capacity %d), want %d of 2 (capacity %d)", tc.query, len(f.Failures), f.Total,
				f.Capacity, tc.n, activity.DefaultTrail)
		}
	}
}

// A scripted outage reaches the dashboard's endpoints: the primary's
// failed attempts and the failovers to the secondary, counted as
// spillway_failovers_total counts them, and each failed attempt in the
// trail with its request id, verdict, status and duration.
func TestDashboardTrafficAndTrail(t *testing.T) {
	h := newHarness(t, rungSpec{"primary", "openai"}, rungSpec{"secondary", "anthropic"})
	served(t, h, false)
	h.fault("primary", "status=503")
	var ids []string
	for _, stream := range []bool{false, true} {
		resp, err := h.post("/v1/chat/completions", `{"model":"`+publicModel+`","max_tokens":16,"stream":`+
			map[bool]string{false: "false", true: "true"}[stream]+`,"messages":[{"role":"user","content":"hi"}]}`)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || hdr(resp, "X-Spillway-Deployment") != "secondary" {
			t.Fatalf("stream=%v: %s served by %q", stream, resp.Status, hdr(resp, "X-Spillway-Deployment"))
		}
		ids = append(ids, hdr(resp, "X-Request-Id"))
	}

	_, b := getAs(t, h, "/v1/admin/traffic", adminKey)
	var tr activity.Traffic
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatal(err)
	}
	if tr.BucketSeconds != 60 || len(tr.Buckets) != activity.DefaultBuckets {
		t.Errorf("%d buckets of %d s, want %d of 60", len(tr.Buckets), tr.BucketSeconds, activity.DefaultBuckets)
	}
	wantCounts := []activity.DeploymentCount{{Deployment: "primary", Served: 1, Failed: 2}, {Deployment: "secondary", Served: 2}}
	if !equalJSON(tr.Deployments, wantCounts) {
		t.Errorf("deployments %+v, want %+v", tr.Deployments, wantCounts)
	}
	wantFailovers := []activity.Failover{{Route: publicModel, From: "primary", To: "secondary", Count: 2}}
	if !equalJSON(tr.Failovers, wantFailovers) {
		t.Errorf("failovers %+v, want %+v", tr.Failovers, wantFailovers)
	}

	_, b = getAs(t, h, "/v1/admin/failures", adminKey)
	var f activity.Failures
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Failures) != 2 {
		t.Fatalf("trail %+v, want the 2 failed attempts", f)
	}
	for i, x := range f.Failures {
		want := ids[len(ids)-1-i] // newest first
		if x.RequestID != want || x.Route != publicModel || x.Deployment != "primary" || x.Verdict != "provider_unavailable" ||
			x.HTTPStatus != 503 || x.ServedBy != "secondary" || x.DurationMS < 0 || x.Time.IsZero() {
			t.Errorf("trail[%d] = %+v, want request %s: primary provider_unavailable 503, then secondary", i, x, want)
		}
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
