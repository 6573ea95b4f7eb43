package server_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/server"
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

// A provider's usage is validated: an impossible figure (negative, near
// 2^63, more cached than input) before the answer reached the caller
// fails over; after a streamed answer went out it is not believed, and
// the request is priced at its reservation. Nothing impossible is stored.
func TestImpossibleUsage(t *testing.T) {
	for _, fault := range []string{"report_output=9223372036854775000", "report_output=-5", "report_input=-1", "report_input=4611686018427387904"} {
		t.Run(fault, func(t *testing.T) {
			h := newHarness(t, rungSpec{"primary", "openai"}, rungSpec{"secondary", "anthropic"})
			h.fault("primary", fault)
			// Whole answer: nothing went out, so the secondary answers.
			r := chat(t, h, false, hello())
			if r.err != nil || hdr(r.resp, "X-Spillway-Trail") != "primary=provider_unavailable, secondary=ok" {
				t.Fatalf("whole answer: err %v trail %q", r.err, hdr(r.resp, "X-Spillway-Trail"))
			}
			// Stream: OpenAI reports usage after the answer went out.
			h.fault("secondary", "status=503")
			r = chat(t, h, true, hello())
			if r.err != nil || r.text == "" || r.usage.CompletionTokens < 0 || r.usage.PromptTokens < 0 || r.usage.TotalTokens > 1<<40 {
				t.Fatalf("stream: err %v usage %+v", r.err, r.usage)
			}
			_, row, _ := h.rows(t, hdr(r.resp, "X-Request-Id"))
			if row.cost != row.reserved || row.in < 0 || row.out < 0 || row.in > 1<<30 || row.out > 1<<30 {
				t.Errorf("ledger row %+v: want the reservation's price and sane counts", row)
			}
		})
	}
}

// max_tokens above a deployment's output cap is sent capped (the
// reservation covered only the cap), and a provider that ignores the
// limit it was sent is cut there, the answer ending as max_tokens, and
// billed no more than the limit.
func TestOutputLimits(t *testing.T) {
	capture := &captureTransport{}
	h := newHarnessOpts(t, func(c *catalog.Config) { c.Deployments[0].MaxOutputTokens = 40 },
		func(o *server.Options) {
			o.Transport = func(_ *catalog.Deployment, base http.RoundTripper) http.RoundTripper {
				capture.base = base
				return capture
			}
		}, rungSpec{"primary", "openai"})
	resp, err := h.post("/v1/chat/completions", `{"model":"`+publicModel+`","max_completion_tokens":2147483647,"messages":[{"role":"user","content":"hi"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !strings.Contains(capture.body(), `"max_completion_tokens":40`) {
		t.Fatalf("sent upstream: %s", capture.body())
	}
	h.fault("primary", "tokens=5000;ignore_limit")
	for _, stream := range []bool{false, true} {
		p := hello()
		p.MaxCompletionTokens = openai.Int(20)
		r := chat(t, h, stream, p)
		if r.err != nil || r.finish != "length" {
			t.Fatalf("stream %v: err %v finish %q", stream, r.err, r.finish)
		}
		if n := len(strings.Fields(r.text)); n > 40 {
			t.Errorf("stream %v: %d words reached the caller for a limit of 20 tokens", stream, n)
		}
		_, row, _ := h.rows(t, hdr(r.resp, "X-Request-Id"))
		if row.out > 20 || row.cost > h.costOf("primary", row.in, 0, 20) {
			t.Errorf("stream %v: billed %+v past the limit of 20", stream, row)
		}
	}
}
