package server_test

import (
	"fmt"
	"io"
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

// max_tokens above a deployment's output cap is a gate (as the providers
// themselves refuse it): that rung is dropped, a rung that can honour it
// serves, and when none can the caller gets a 400 and nothing is sent or
// reserved. A provider that ignores the limit it was sent is cut there,
// the answer ending as max_tokens, and billed no more than the limit.
func TestOutputLimits(t *testing.T) {
	capture := &captureTransport{}
	h := newHarnessOpts(t, func(c *catalog.Config) { c.Deployments[0].MaxOutputTokens = 40 },
		func(o *server.Options) {
			o.Transport = func(d *catalog.Deployment, base http.RoundTripper) http.RoundTripper {
				if d.ID != "primary" {
					return base
				}
				capture.base = base
				return capture
			}
		}, rungSpec{"primary", "openai"}, rungSpec{"secondary", "openai"})
	p := hello()
	p.MaxCompletionTokens = openai.Int(100)
	r := chat(t, h, false, p)
	if r.err != nil || hdr(r.resp, "X-Spillway-Trail") != "secondary=ok" || capture.body() != "" {
		t.Fatalf("max_tokens 100 over a cap of 40: err %v trail %q; primary sent %q", r.err, hdr(r.resp, "X-Spillway-Trail"), capture.body())
	}
	resp, err := h.post("/v1/chat/completions", `{"model":"`+publicModel+`","max_completion_tokens":2147483647,"messages":[{"role":"user","content":"hi"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), "unsupported_request") || !strings.Contains(string(b), "output cap of 40") || capture.body() != "" {
		t.Fatalf("max_tokens past every cap: %d %s; primary sent %q", resp.StatusCode, b, capture.body())
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
	if !strings.Contains(capture.body(), `"max_completion_tokens":20`) {
		t.Errorf("sent upstream: %s", capture.body())
	}
}

// An answer without what its wire requires (an empty or foreign JSON body,
// an event stream with no events, or events of another API) is a provider
// failure that fails over, never relayed as an empty success.
func TestForeignAnswers(t *testing.T) {
	bodies := []struct{ name, ctype, body string }{
		{"empty object", "application/json", `{}`},
		{"foreign object", "application/json", `{"id":"x","object":"list","data":[]}`},
		{"html", "text/html", `<html><body>gateway</body></html>`},
		{"empty stream", "text/event-stream", ``},
		{"empty events", "text/event-stream", "data: {}\n\ndata: {}\n\n"},
		{"foreign events", "text/event-stream", "event: ping\ndata: {\"type\":\"ping\"}\n\ndata: {\"object\":\"list\"}\n\n"},
		{"stop only", "text/event-stream", "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\ndata: [DONE]\n\n"},
		{"empty eventstream", "application/vnd.amazon.eventstream", ``},
	}
	for _, kind := range []string{"openai", "anthropic", "gemini", "bedrock"} {
		for _, b := range bodies {
			t.Run(kind+"/"+b.name, func(t *testing.T) {
				foreign := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", b.ctype)
					w.Write([]byte(b.body))
				}))
				defer foreign.Close()
				h := newHarnessWith(t, func(c *catalog.Config) { c.Deployments[0].BaseURL = foreign.URL },
					rungSpec{"primary", kind}, rungSpec{"secondary", "openai"})
				for _, stream := range []bool{false, true} {
					r := chat(t, h, stream, hello())
					trail := hdr(r.resp, "X-Spillway-Trail")
					if r.err != nil || !strings.HasPrefix(trail, "primary=") || strings.HasPrefix(trail, "primary=ok") || !strings.HasSuffix(trail, "secondary=ok") {
						t.Errorf("stream %v: err %v trail %q text %q", stream, r.err, trail, r.text)
					}
				}
			})
		}
	}
}

// Content a provider sends after its stop reason is not part of the
// answer: the caller gets the answer as the provider ended it, with the
// usage that followed.
func TestContentAfterFinishIsDropped(t *testing.T) {
	replies := map[string]struct{ ctype, body string }{
		"openai": {"text/event-stream", `data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"Hello"}}]}

data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}

data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":" EXTRA"}}]}

data: {"id":"c1","model":"m","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}

data: [DONE]

`},
		"anthropic": {"text/event-stream", `event: message_start
data: {"type":"message_start","message":{"id":"msg_1","model":"m","usage":{"input_tokens":5,"output_tokens":1}}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" EXTRA"}}

event: message_stop
data: {"type":"message_stop"}

`},
		"gemini": {"text/event-stream", `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Hello"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":1}}

data: {"candidates":[{"content":{"role":"model","parts":[{"text":" EXTRA"}]}}]}

`},
	}
	for kind, reply := range replies {
		t.Run(kind, func(t *testing.T) {
			p := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", reply.ctype)
				w.Write([]byte(reply.body))
			}))
			defer p.Close()
			h := newHarnessWith(t, func(c *catalog.Config) { c.Deployments[0].BaseURL = p.URL },
				rungSpec{"primary", kind}, rungSpec{"secondary", "openai"})
			for _, stream := range []bool{false, true} {
				r := chat(t, h, stream, hello())
				if r.err != nil || r.text != "Hello" || r.finish != "stop" || hdr(r.resp, "X-Spillway-Trail") != "primary=ok" {
					t.Errorf("stream %v: err %v text %q finish %q trail %q", stream, r.err, r.text, r.finish, hdr(r.resp, "X-Spillway-Trail"))
				}
			}
		})
	}
}

// bigAnswer is an OpenAI-wire provider streaming size bytes of text.
func bigAnswer(t *testing.T, size int) *httptest.Server {
	chunk := strings.Repeat("abcdefgh ", 455) // about 4 KiB
	p := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for sent := 0; sent < size; sent += len(chunk) {
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", chunk)
		}
		fmt.Fprint(w, "data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":100}}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(p.Close)
	return p
}

// Whole answers share server.max_answer_memory: one that would pass it is
// a 503 gateway_busy (no failover: the next rung would meet the same
// bound; not the provider's fault), a stream of the same size is served,
// and the memory of an answer comes back once it is written.
func TestAnswerMemoryBound(t *testing.T) {
	big := bigAnswer(t, 3<<20)
	h := newHarnessWith(t, func(c *catalog.Config) {
		c.Server.MaxAnswerMemory = 6 << 20
		c.Deployments[0].BaseURL = big.URL
		c.Deployments[0].MaxOutputTokens = 0 // no output cap: the answer bounds itself
		c.Deployments[0].ContextWindow = 10_000_000
	}, rungSpec{"primary", "openai"}, rungSpec{"secondary", "openai"})
	body := `{"model":"` + publicModel + `","messages":[{"role":"user","content":"hi"}]}`
	resp, err := h.post("/v1/chat/completions", body)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(b), "gateway_busy") || hdr(resp, "X-Spillway-Trail") != "primary=gateway_busy" {
		t.Fatalf("a 3 MiB answer under a 6 MiB bound: %d %s trail %q", resp.StatusCode, b, hdr(resp, "X-Spillway-Trail"))
	}
	if n := h.counts()["secondary"]; n != 0 {
		t.Errorf("the secondary was tried %d times", n)
	}
	p := hello()
	p.MaxCompletionTokens = openai.Int(2_000_000)
	r := chat(t, h, true, p)
	if r.err != nil || len(r.text) < 3<<20 || hdr(r.resp, "X-Spillway-Trail") != "primary=ok" {
		t.Fatalf("the same answer streamed: err %v, %d bytes, trail %q", r.err, len(r.text), hdr(r.resp, "X-Spillway-Trail"))
	}

	// 1.5 MiB answers fit (4.5 MiB counted): one after another, each gives
	// its memory back when written.
	small := bigAnswer(t, 3<<19)
	h2 := newHarnessWith(t, func(c *catalog.Config) {
		c.Server.MaxAnswerMemory = 6 << 20
		c.Deployments[0].BaseURL = small.URL
		c.Deployments[0].MaxOutputTokens = 0
		c.Deployments[0].ContextWindow = 10_000_000
	}, rungSpec{"primary", "openai"})
	for i := range 3 {
		resp, err := h2.post("/v1/chat/completions", body)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || n < 3<<19 {
			t.Fatalf("answer %d: %d, %d bytes", i+1, resp.StatusCode, n)
		}
	}
}

// A provider's response headers are bounded (256 KiB): past that the
// attempt is a provider failure that fails over, never megabytes held.
func TestHugeProviderHeaders(t *testing.T) {
	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := range 64 {
			w.Header().Set(fmt.Sprintf("X-Junk-%d", i), strings.Repeat("j", 8<<10))
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer huge.Close()
	h := newHarnessWith(t, func(c *catalog.Config) { c.Deployments[0].BaseURL = huge.URL },
		rungSpec{"primary", "openai"}, rungSpec{"secondary", "openai"})
	for _, stream := range []bool{false, true} {
		r := chat(t, h, stream, hello())
		// Failed over (or, once the primary's circuit opened, not tried).
		if trail := hdr(r.resp, "X-Spillway-Trail"); r.err != nil || !strings.HasSuffix(trail, "secondary=ok") || strings.Contains(trail, "primary=ok") {
			t.Errorf("stream %v: err %v trail %q", stream, r.err, trail)
		}
		if hdr(r.resp, "X-Junk-0") != "" {
			t.Error("a provider header reached the caller")
		}
	}
}
