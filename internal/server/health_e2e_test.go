package server_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/spillway-gw/spillway/internal/server"
)

// served sends one request and returns the deployment that served it.
func served(t *testing.T, h *harness, stream bool) string {
	t.Helper()
	r := chat(t, h, stream, hello())
	if r.err != nil {
		t.Fatalf("request failed: %v", r.err)
	}
	return hdr(r.resp, "X-Spillway-Deployment")
}

func adminHealth(t *testing.T, h *harness) server.HealthReport {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, h.gw.URL+"/v1/admin/health", nil)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("admin health: %s", resp.Status)
	}
	var rep server.HealthReport
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

func stateOf(t *testing.T, h *harness, id string) string {
	for _, d := range adminHealth(t, h).Deployments {
		if d.Deployment == id {
			return string(d.State)
		}
	}
	t.Fatalf("no deployment %s in the health report", id)
	return ""
}

// The whole life of an outage: two failures open the primary's circuit,
// traffic goes straight to the secondary with none to the primary, then
// one probe after the open period brings the primary back.
func TestHealthOutageAndRecovery(t *testing.T) {
	modes(t, func(t *testing.T, stream bool) {
		h := newHarness(t, rungSpec{"primary", "anthropic"}, rungSpec{"secondary", "openai"})
		h.fault("primary", "status=529")
		for i := 0; i < 2; i++ {
			if got := served(t, h, stream); got != "secondary" {
				t.Fatalf("request %d served by %q", i, got)
			}
		}
		if got := stateOf(t, h, "primary"); got != "open" {
			t.Fatalf("primary is %s after 2 consecutive failures, want open", got)
		}
		before := h.mocks["primary"].Count()
		for i := 0; i < 5; i++ {
			r := chat(t, h, stream, hello())
			if r.err != nil || hdr(r.resp, "X-Spillway-Trail") != "secondary=ok" {
				t.Fatalf("while open: err %v trail %q, want straight to the secondary", r.err, hdr(r.resp, "X-Spillway-Trail"))
			}
		}
		if n := h.mocks["primary"].Count() - before; n != 0 {
			t.Fatalf("the primary got %d requests while its circuit was open", n)
		}
		// The provider recovers; after 30s one probe request goes to it and
		// closes the circuit, then traffic returns.
		h.fault("primary", "")
		h.clock.Advance(30 * time.Second)
		if got := served(t, h, stream); got != "primary" {
			t.Fatalf("probe served by %q, want the primary", got)
		}
		if got := stateOf(t, h, "primary"); got != "healthy" {
			t.Fatalf("primary is %s after a successful probe", got)
		}
		if got := served(t, h, stream); got != "primary" {
			t.Fatalf("traffic did not return: %q", got)
		}
	})
}

func TestHealthThrottleStormKeepsCircuitClosed(t *testing.T) {
	h := newHarness(t, rungSpec{"primary", "openai"}, rungSpec{"secondary", "anthropic"})
	h.fault("primary", "status=429;retry_after=20")
	if got := served(t, h, false); got != "secondary" {
		t.Fatalf("served by %q", got)
	}
	rep := adminHealth(t, h)
	p := rep.Deployments[0]
	if p.Deployment != "primary" || p.State != "throttled" || p.ThrottledUntil == nil {
		t.Fatalf("primary status = %+v, want throttled", p)
	}
	if got := p.ThrottledUntil.Sub(h.clock.Now()); got != 20*time.Second {
		t.Errorf("throttled for %v, want the provider's Retry-After of 20s", got)
	}
	before := h.mocks["primary"].Count()
	for i := 0; i < 5; i++ {
		served(t, h, i%2 == 0)
	}
	if n := h.mocks["primary"].Count() - before; n != 0 {
		t.Errorf("a throttled primary got %d requests", n)
	}
	h.clock.Advance(20 * time.Second)
	h.fault("primary", "")
	if got := served(t, h, false); got != "primary" {
		t.Fatalf("after the window: served by %q", got)
	}
	// A 429 storm never opened the failure circuit.
	if f := adminHealth(t, h).Deployments[0]; f.State != "healthy" || f.Failures["throttled"] != 1 {
		t.Errorf("after the storm: %+v", f)
	}
}

func TestHealthCredentialFailureSuppressesAtOnce(t *testing.T) {
	h := newHarness(t, rungSpec{"primary", "anthropic"}, rungSpec{"secondary", "openai"})
	h.fault("primary", "status=401")
	if got := served(t, h, true); got != "secondary" {
		t.Fatalf("served by %q", got)
	}
	if got := stateOf(t, h, "primary"); got != "suppressed" {
		t.Fatalf("primary is %s after one 401, want suppressed", got)
	}
	before := h.mocks["primary"].Count()
	served(t, h, false)
	if h.mocks["primary"].Count() != before {
		t.Error("a suppressed primary got traffic")
	}
}

// When every rung is skipped, one last-resort probe still goes out, so a
// recovered provider serves even before its circuit's time is up.
func TestHealthLastResortProbe(t *testing.T) {
	h := newHarness(t, rungSpec{"primary", "openai"}, rungSpec{"secondary", "anthropic"})
	h.fault("primary", "status=503")
	h.fault("secondary", "status=503")
	for i := 0; i < 2; i++ {
		r := chat(t, h, false, hello())
		var apiErr *openai.Error
		if !errors.As(r.err, &apiErr) || apiErr.StatusCode != 502 {
			t.Fatalf("request %d: %v, want 502 while both fail", i, r.err)
		}
	}
	if stateOf(t, h, "primary") != "open" || stateOf(t, h, "secondary") != "open" {
		t.Fatal("both circuits should be open")
	}
	// Both providers recover, well before the 30s open period ends.
	h.fault("primary", "")
	h.fault("secondary", "")
	h.clock.Advance(time.Second)
	r := chat(t, h, false, hello())
	if r.err != nil {
		t.Fatalf("the model failed purely on circuit state: %v", r.err)
	}
	if got := hdr(r.resp, "X-Spillway-Attempts"); got != "1" {
		t.Errorf("last resort made %s attempts, want one probe", got)
	}
	dep := hdr(r.resp, "X-Spillway-Deployment")
	if got := stateOf(t, h, dep); got != "healthy" {
		t.Errorf("the probed rung %s is %s after serving", dep, got)
	}
	// Probes are bounded: with the other rung still open and no time
	// passing, its last-resort probe is rate-limited, but the healthy one
	// serves.
	if got := served(t, h, true); got != dep {
		t.Errorf("next request served by %q, want %q", got, dep)
	}
}

func TestHealthLastResortIsBounded(t *testing.T) {
	h := newHarness(t, rungSpec{"primary", "openai"})
	h.fault("primary", "status=503")
	for i := 0; i < 3; i++ {
		chat(t, h, false, hello()) // 2 open the circuit, the third is the last-resort probe
	}
	before := h.mocks["primary"].Count()
	r := chat(t, h, false, hello())
	var apiErr *openai.Error
	if !errors.As(r.err, &apiErr) || apiErr.StatusCode != 503 || apiErr.Code != "no_healthy_deployment" {
		t.Fatalf("err = %v, want 503 no_healthy_deployment", r.err)
	}
	if apiErr.Response.Header.Get("Retry-After") == "" {
		t.Error("no Retry-After")
	}
	if h.mocks["primary"].Count() != before {
		t.Error("a second last-resort probe went out within the interval")
	}
}

func TestHealthCallerProblemsNeverCount(t *testing.T) {
	h := newHarness(t, rungSpec{"primary", "openai"}, rungSpec{"secondary", "anthropic"})
	h.fault("primary", "status=400")
	for i := 0; i < 5; i++ {
		chat(t, h, i%2 == 0, hello())
	}
	h.fault("primary", "stall_after=2")
	for i := 0; i < 3; i++ {
		cancelAfterChunks(t, h, 2)
	}
	st := adminHealth(t, h).Deployments[0]
	if st.State != "healthy" || st.Samples != 0 {
		t.Errorf("caller errors and cancels counted against the primary: %+v", st)
	}
}

func TestAdminHealthNeedsKey(t *testing.T) {
	h := newHarness(t, rungSpec{"primary", "openai"})
	for _, key := range []string{"", "wrong"} {
		req, _ := http.NewRequest(http.MethodGet, h.gw.URL+"/v1/admin/health", nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("key %q: %s, want 401", key, resp.Status)
		}
	}
	rep := adminHealth(t, h)
	if len(rep.Routes) != 1 || rep.Routes[0].HealthyRungs != 1 || rep.Routes[0].Rungs != 1 {
		t.Errorf("routes = %+v", rep.Routes)
	}
}
