package server_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/server"
)

const pageOrigin = "https://app.example.com"

// corsRequest sends method to path from a page on origin; preflight makes
// it the browser's OPTIONS check for a POST with the SDKs' headers.
func corsRequest(t *testing.T, h *harness, method, path, origin string, preflight bool, headers ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, h.gw.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if preflight {
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers",
			"anthropic-dangerous-direct-browser-access,anthropic-version,content-type,x-api-key,x-stainless-arch,x-stainless-retry-count,x-custom")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body)
}

func corsHeaders(r *http.Response) []string {
	var out []string
	for k := range r.Header {
		if strings.HasPrefix(k, "Access-Control-") {
			out = append(out, k)
		}
	}
	return out
}

func withCORS(c catalog.CORS) func(*catalog.Config) {
	return func(cfg *catalog.Config) { cfg.Server.CORS = c }
}

// Off by default, and for an origin not listed: no CORS header at all,
// and a preflight is not answered (the browser then refuses the page).
func TestCORSRefused(t *testing.T) {
	for name, h := range map[string]*harness{
		"off":            newHarness(t, rungSpec{"a", catalog.KindAnthropic}),
		"another origin": newHarnessWith(t, withCORS(catalog.CORS{AllowedOrigins: []string{"https://other.example.com"}}), rungSpec{"a", catalog.KindAnthropic}),
	} {
		t.Run(name, func(t *testing.T) {
			resp, _ := corsRequest(t, h, http.MethodOptions, "/v1/messages", pageOrigin, true)
			if resp.StatusCode == http.StatusNoContent || len(corsHeaders(resp)) > 0 {
				t.Errorf("preflight: %d %v", resp.StatusCode, corsHeaders(resp))
			}
			resp, _ = corsRequest(t, h, http.MethodGet, "/v1/models", pageOrigin, false, "Authorization", "Bearer "+h.key)
			if resp.StatusCode != http.StatusOK || len(corsHeaders(resp)) > 0 {
				t.Errorf("request: %d %v", resp.StatusCode, corsHeaders(resp))
			}
			if h.counts()["a"] != 0 {
				t.Error("a provider was called")
			}
		})
	}
}

// A preflight from an allowed origin is answered 204 with what the SDKs
// need, without authentication and without reaching a provider.
func TestCORSPreflight(t *testing.T) {
	h := newHarnessWith(t, withCORS(catalog.CORS{AllowedOrigins: []string{"http://localhost:5173", "HTTPS://APP.example.com"}}), rungSpec{"a", catalog.KindAnthropic})
	resp, body := corsRequest(t, h, http.MethodOptions, "/v1/messages", pageOrigin, true)
	if resp.StatusCode != http.StatusNoContent || body != "" {
		t.Fatalf("preflight: %d %q", resp.StatusCode, body)
	}
	get := resp.Header.Get
	if get("Access-Control-Allow-Origin") != pageOrigin || get("Access-Control-Allow-Credentials") != "" {
		t.Errorf("allow origin %q credentials %q", get("Access-Control-Allow-Origin"), get("Access-Control-Allow-Credentials"))
	}
	if !strings.Contains(get("Access-Control-Allow-Methods"), "POST") || get("Access-Control-Max-Age") != "600" {
		t.Errorf("methods %q max age %q", get("Access-Control-Allow-Methods"), get("Access-Control-Max-Age"))
	}
	allowed := map[string]bool{}
	for name := range strings.SplitSeq(get("Access-Control-Allow-Headers"), ",") {
		allowed[strings.TrimSpace(name)] = true
	}
	for _, want := range []string{"authorization", "content-type", "x-api-key", "anthropic-version", "anthropic-beta",
		"anthropic-dangerous-direct-browser-access", "idempotency-key", "openai-organization", "x-stainless-arch", "x-stainless-retry-count"} {
		if !allowed[want] {
			t.Errorf("%s not allowed: %s", want, get("Access-Control-Allow-Headers"))
		}
	}
	if allowed["x-custom"] {
		t.Error("a header the gateway does not read was allowed")
	}
	if vary := strings.Join(resp.Header.Values("Vary"), ", "); !strings.Contains(vary, "Origin") || !strings.Contains(vary, "Access-Control-Request-Headers") {
		t.Errorf("Vary = %q", vary)
	}
	if h.counts()["a"] != 0 {
		t.Error("a preflight reached a provider")
	}
}

// The answer to an allowed origin names it and lets the page read the
// gateway's own headers; an error (no key) is readable too.
func TestCORSActualRequest(t *testing.T) {
	h := newHarnessWith(t, withCORS(catalog.CORS{AllowedOrigins: []string{pageOrigin}, AllowCredentials: true}), rungSpec{"a", catalog.KindAnthropic})
	resp, err := h.post("/v1/messages", `{"model":"`+publicModel+`","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`,
		"Origin", pageOrigin, "Anthropic-Version", "2023-06-01")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || hdr(resp, "Access-Control-Allow-Origin") != pageOrigin || hdr(resp, "Access-Control-Allow-Credentials") != "true" {
		t.Fatalf("%d allow origin %q credentials %q", resp.StatusCode, hdr(resp, "Access-Control-Allow-Origin"), hdr(resp, "Access-Control-Allow-Credentials"))
	}
	expose := strings.ToLower(hdr(resp, "Access-Control-Expose-Headers"))
	for _, want := range []string{"x-request-id", "request-id", "x-spillway-trail", "x-spillway-deployment", "x-spillway-cost-usd", "x-spillway-cost-status", "retry-after", "x-spillway-trace-id"} {
		if !strings.Contains(expose, want) {
			t.Errorf("%s not exposed: %s", want, expose)
		}
	}
	if hdr(resp, "X-Spillway-Trail") == "" {
		t.Error("no trail to expose")
	}
	resp, _ = corsRequest(t, h, http.MethodPost, "/v1/messages", pageOrigin, false)
	if resp.StatusCode != http.StatusUnauthorized || hdr(resp, "Access-Control-Allow-Origin") != pageOrigin {
		t.Errorf("without a key: %d allow origin %q", resp.StatusCode, hdr(resp, "Access-Control-Allow-Origin"))
	}
}

func TestCORSAnyOrigin(t *testing.T) {
	h := newHarnessWith(t, withCORS(catalog.CORS{AllowedOrigins: []string{"*"}, MaxAge: catalog.Duration(3600e9)}), rungSpec{"a", catalog.KindAnthropic})
	resp, _ := corsRequest(t, h, http.MethodOptions, "/v1/chat/completions", "http://anything.test:8000", true)
	if resp.StatusCode != http.StatusNoContent || hdr(resp, "Access-Control-Allow-Origin") != "*" || hdr(resp, "Access-Control-Max-Age") != "3600" {
		t.Errorf("%d allow origin %q max age %q", resp.StatusCode, hdr(resp, "Access-Control-Allow-Origin"), hdr(resp, "Access-Control-Max-Age"))
	}
}

// A reload that lists an origin applies to the next request.
func TestCORSFollowsReload(t *testing.T) {
	var holder *catalog.Holder
	h := newHarnessOpts(t, nil, func(o *server.Options) { holder = o.Catalog.(*catalog.Holder) }, rungSpec{"a", catalog.KindAnthropic})
	if resp, _ := corsRequest(t, h, http.MethodOptions, "/v1/messages", pageOrigin, true); resp.StatusCode == http.StatusNoContent {
		t.Fatal("answered before CORS was configured")
	}
	cfg := h.cfg.Clone()
	cfg.Server.CORS.AllowedOrigins = []string{pageOrigin}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "spillway.yaml")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := holder.Reload(path); err != nil {
		t.Fatal(err)
	}
	if resp, _ := corsRequest(t, h, http.MethodOptions, "/v1/messages", pageOrigin, true); resp.StatusCode != http.StatusNoContent || hdr(resp, "Access-Control-Allow-Origin") != pageOrigin {
		t.Errorf("after the reload: %d %q", resp.StatusCode, hdr(resp, "Access-Control-Allow-Origin"))
	}
}
