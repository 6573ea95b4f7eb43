package server_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/spillway-gw/spillway/internal/catalog"
)

// A provider's redirect is never followed: the credential and the prompt
// stay with the deployment's own host, and the 3xx fails the rung over.
func TestRedirectsAreNotFollowed(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
	}))
	defer other.Close()
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer redirecting.Close()
	for _, kind := range []string{"openai", "anthropic", "gemini", "bedrock"} {
		t.Run(kind, func(t *testing.T) {
			h := newHarnessWith(t, func(c *catalog.Config) { c.Deployments[0].BaseURL = redirecting.URL },
				rungSpec{"primary", kind}, rungSpec{"secondary", "openai"})
			for _, stream := range []bool{false, true} {
				r := chat(t, h, stream, hello())
				if r.err != nil || hdr(r.resp, "X-Spillway-Trail") != "primary=provider_unavailable, secondary=ok" {
					t.Fatalf("stream %v: err %v trail %q", stream, r.err, hdr(r.resp, "X-Spillway-Trail"))
				}
			}
			if n := elsewhere.Load(); n != 0 {
				t.Fatalf("the redirect was followed %d times", n)
			}
		})
	}
}
