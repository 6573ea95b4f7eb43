package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/server"
)

func explain(t *testing.T, h *harness, method, query, body string, headers ...string) server.Explanation {
	t.Helper()
	req, _ := http.NewRequest(method, h.gw.URL+"/v1/admin/explain"+query, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+adminKey)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("explain: %s", resp.Status)
	}
	var ex server.Explanation
	if err := json.NewDecoder(resp.Body).Decode(&ex); err != nil {
		t.Fatal(err)
	}
	return ex
}

func rungsOf(ex server.Explanation) string {
	var b []string
	for _, r := range ex.Rungs {
		s := r.Deployment + ":"
		if r.Kept {
			s += "kept"
		} else {
			s += r.Reason
		}
		b = append(b, s)
	}
	return strings.Join(b, " ")
}

func TestRouteExplain(t *testing.T) {
	h := newHarnessWith(t, func(c *catalog.Config) {
		c.Deployments[1].Price = nil // unpriced: never routed at $0
	}, rungSpec{"primary", "openai"}, rungSpec{"unpriced", "anthropic"}, rungSpec{"third", "openai"})
	ex := explain(t, h, http.MethodGet, "?model="+publicModel, "")
	if got := rungsOf(ex); got != "primary:kept unpriced:price_unknown third:kept" {
		t.Errorf("rungs = %q", got)
	}
	if strings.Join(ex.Order, ",") != "primary,third" || ex.ExactModel != exactModel || ex.Pool != "pool" {
		t.Errorf("explanation = %+v", ex)
	}
	// A credential failure suppresses the primary; explain says so.
	h.fault("primary", "status=401")
	served(t, h, false)
	ex = explain(t, h, http.MethodPost, "", `{"model":"`+publicModel+`","messages":[{"role":"user","content":"hi"}]}`)
	if got := rungsOf(ex); got != "primary:suppressed unpriced:price_unknown third:kept" {
		t.Errorf("after a 401: rungs = %q", got)
	}
	if ex.Rungs[0].Health != "suppressed" {
		t.Errorf("health = %q", ex.Rungs[0].Health)
	}
	// Every healthy rung down: explain names the last-resort rung.
	h.fault("third", "status=401")
	chat(t, h, false, hello()) // primary suppressed, third fails: nobody serves
	ex = explain(t, h, http.MethodGet, "?model="+publicModel, "")
	if len(ex.Order) != 0 || ex.LastResort == "" {
		t.Errorf("explanation = %+v, want no order and a last-resort rung", ex)
	}
}

// A beta only Claude's APIs honour skips the rungs that are not Claude's,
// with the beta named in explain; with no rung left the caller is refused
// in Anthropic's shape, naming it; hints skip no rung.
func TestBetaEligibility(t *testing.T) {
	h := newHarness(t, rungSpec{"openai", "openai"}, rungSpec{"claude", "anthropic"}, rungSpec{"gemini", "gemini"})
	body := `{"model":"` + publicModel + `","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`
	ex := explain(t, h, http.MethodPost, "", body, "anthropic-version", "2026-10-21", "anthropic-beta", "context-1m-2025-08-07")
	if got := rungsOf(ex); got != "openai:unsupported claude:kept gemini:unsupported" {
		t.Fatalf("rungs = %q", got)
	}
	if !strings.Contains(ex.Rungs[0].Detail, "beta context-1m-2025-08-07") {
		t.Errorf("detail %q does not name the beta", ex.Rungs[0].Detail)
	}
	ex = explain(t, h, http.MethodPost, "", body, "anthropic-version", "2026-10-21", "anthropic-beta", "prompt-caching-2024-07-31")
	if got := rungsOf(ex); got != "openai:kept claude:kept gemini:kept" {
		t.Errorf("a hint beta: rungs = %q", got)
	}
	// Served by the Claude rung, which receives the flag.
	resp, err := h.post("/v1/messages", body, "anthropic-version", "2026-10-21", "anthropic-beta", "context-1m-2025-08-07")
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("X-Spillway-Deployment") != "claude" {
		t.Fatalf("served: %v %v %q", resp.Status, err, resp.Header.Get("X-Spillway-Deployment"))
	}
	resp.Body.Close()
	// No Claude rung: refused, naming the beta, in Anthropic's shape.
	h2 := newHarness(t, rungSpec{"openai", "openai"})
	resp, err = h2.post("/v1/messages", body, "anthropic-version", "2026-10-21", "anthropic-beta", "context-1m-2025-08-07")
	if err != nil {
		t.Fatal(err)
	}
	var e struct {
		Type  string
		Error struct{ Type, Code, Message string }
	}
	_ = json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if resp.StatusCode != 400 || e.Type != "error" || e.Error.Code != "unsupported_request" || !strings.Contains(e.Error.Message, "context-1m-2025-08-07") {
		t.Errorf("no rung for the beta: %d %+v", resp.StatusCode, e)
	}
}
