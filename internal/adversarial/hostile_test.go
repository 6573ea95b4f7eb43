package adversarial

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A hostile provider: one httptest server whose behaviours are reached
// under /h/<name>/, so each is one deployment (base_url .../h/<name>) and
// the adapter's own path follows.
type hostile struct {
	srv *httptest.Server
	// elsewhere is where redirects point; it must never be contacted.
	elsewhere     *httptest.Server
	elsewhereHits atomic.Int64

	mu    sync.Mutex
	hits  map[string]int
	kinds map[string]string // behaviour name → the wire it speaks
	// stop ends every endless answer (at Close).
	stop chan struct{}
}

// Markers the hostile provider puts in its headers: none may reach a caller.
const (
	secretMarker = "SECRET-7f3a"
	hugeRetry    = "999999999999"
)

// behaviours: name → the wire format its deployment speaks and the handler.
func (h *hostile) behaviours() map[string]struct {
	kind string
	fn   http.HandlerFunc
} {
	type b = struct {
		kind string
		fn   http.HandlerFunc
	}
	body := func(ctype, s string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ctype)
			_, _ = w.Write([]byte(s))
		}
	}
	const (
		anthropicMessage = `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"foreign"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}}`
		openaiCompletion = `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"foreign"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`
		anthropicEvents  = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"m\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"foreign\"}}\n\n" +
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
		openaiChunks = "data: {\"id\":\"c1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"foreign\"}}]}\n\n" +
			"data: {\"id\":\"c1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"
	)
	redirect := func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, h.elsewhere.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}
	m := map[string]b{
		// Empty and foreign answers: 200 with a body that is not an answer
		// of the wire the deployment speaks.
		"empty-openai":         {"openai", body("application/json", `{}`)},
		"empty-anthropic":      {"anthropic", body("application/json", `{}`)},
		"empty-gemini":         {"gemini", body("application/json", `{}`)},
		"foreign-openai":       {"openai", body("application/json", anthropicMessage)},
		"foreign-anthropic":    {"anthropic", body("application/json", openaiCompletion)},
		"foreign-gemini":       {"gemini", body("application/json", openaiCompletion)},
		"foreignsse-openai":    {"openai", body("text/event-stream", anthropicEvents)},
		"foreignsse-anthropic": {"anthropic", body("text/event-stream", openaiChunks)},
		"foreignsse-gemini":    {"gemini", body("text/event-stream", anthropicEvents)},
		"stoponly-anthropic":   {"anthropic", body("text/event-stream", "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")},

		"redirect-openai":    {"openai", redirect},
		"redirect-anthropic": {"anthropic", redirect},
		"redirect-gemini":    {"gemini", redirect},

		// Headers with values a caller must never see.
		"headers":     {"openai", func(w http.ResponseWriter, r *http.Request) { injectHeaders(w, 0); openaiAnswer(w, "Hello") }},
		"hugeheaders": {"openai", func(w http.ResponseWriter, r *http.Request) { injectHeaders(w, 8<<20); openaiAnswer(w, "Hello") }},
		"retry429": {"openai", func(w http.ResponseWriter, r *http.Request) {
			injectHeaders(w, 0)
			openaiError(w, 429, "rate_limit_exceeded")
		}},
		"retry503": {"openai", func(w http.ResponseWriter, r *http.Request) { injectHeaders(w, 0); openaiError(w, 503, "server_error") }},

		// Endless and oversized answers.
		"endless":   {"openai", func(w http.ResponseWriter, r *http.Request) { h.endless(w, r, "word ", 256<<20) }},
		"oversized": {"openai", func(w http.ResponseWriter, r *http.Request) { h.endless(w, r, strings.Repeat("x", 32<<10), 64<<20) }},

		// Content after the stop reason.
		"afterfinish-openai":    {"openai", body("text/event-stream", afterFinish["openai"])},
		"afterfinish-anthropic": {"anthropic", body("text/event-stream", afterFinish["anthropic"])},
		"afterfinish-gemini":    {"gemini", body("text/event-stream", afterFinish["gemini"])},
	}
	return m
}

func newHostile(t *testing.T) *hostile {
	h := &hostile{hits: map[string]int{}, kinds: map[string]string{}, stop: make(chan struct{})}
	h.elsewhere = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.elsewhereHits.Add(1)
		openaiAnswer(w, "elsewhere")
	}))
	mux := http.NewServeMux()
	for name, b := range h.behaviours() {
		h.kinds[name] = b.kind
		fn := b.fn
		mux.HandleFunc("/h/"+name+"/", func(w http.ResponseWriter, r *http.Request) {
			h.mu.Lock()
			h.hits[name]++
			h.mu.Unlock()
			fn(w, r)
		})
	}
	h.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		close(h.stop)
		h.srv.CloseClientConnections()
		h.srv.Close()
		h.elsewhere.Close()
	})
	return h
}

// url is the base_url of behaviour name.
func (h *hostile) url(name string) string { return h.srv.URL + "/h/" + name }

func (h *hostile) count(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hits[name]
}

// openaiAnswer streams a whole, well-formed Chat Completions answer (the
// gateway always streams upstream).
func openaiAnswer(w http.ResponseWriter, text string) {
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "data: {\"id\":\"c1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":%s}}]}\n\n", quote(text))
	fmt.Fprint(w, "data: {\"id\":\"c1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
	fmt.Fprint(w, "data: {\"id\":\"c1\",\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1,\"total_tokens\":6}}\n\n")
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func openaiError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":{"message":"hostile %s req_%s","type":"requests","code":%q}}`, code, secretMarker, code)
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// injectHeaders sets headers a provider may send and a caller must never
// see: its request id, organisation and cookies with a secret-looking
// value, forged spillway headers, an absurd Retry-After, odd bytes, and
// (huge > 0) that many bytes of junk headers.
func injectHeaders(w http.ResponseWriter, huge int) {
	h := w.Header()
	h.Set("X-Request-Id", "req_"+secretMarker)
	h.Set("Request-Id", "req_"+secretMarker)
	h.Set("Openai-Organization", "org-"+secretMarker)
	h.Set("Anthropic-Organization-Id", secretMarker)
	h.Set("Set-Cookie", "session="+secretMarker+"; Path=/")
	h.Set("Authorization", "Bearer sk-"+secretMarker)
	h.Set("X-Spillway-Trail", "forged="+secretMarker)
	h.Set("X-Spillway-Deployment", "forged-"+secretMarker)
	h.Set("X-Spillway-Cost-Usd", "0.000000")
	h.Set("Retry-After", hugeRetry)
	h.Set("Retry-After-Ms", hugeRetry)
	h.Set("X-Ratelimit-Reset-Requests", hugeRetry+"s")
	h.Set("X-Odd", secretMarker+" \u00e9\u2603 ;,=\"\t<>")
	h.Set("X-Long", strings.Repeat("a", 60<<10)+secretMarker)
	for i := 0; huge > 0; i++ {
		v := strings.Repeat("j", 64<<10)
		h.Set("X-Junk-"+strconv.Itoa(i), v)
		huge -= len(v)
	}
}

// endless streams content deltas of delta until the client goes away,
// capBytes were sent, a minute passed, or the suite ends.
func (h *hostile) endless(w http.ResponseWriter, r *http.Request, delta string, capBytes int) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
	defer cancel()
	ev := []byte("data: {\"id\":\"c1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":" + quote(delta) + "}}]}\n\n")
	for sent := 0; sent < capBytes; sent += len(ev) {
		select {
		case <-ctx.Done():
			return
		case <-h.stop:
			return
		default:
		}
		if _, err := w.Write(ev); err != nil {
			return
		}
		fl.Flush()
	}
}

// afterFinish: answers with content after their stop reason, per wire.
var afterFinish = map[string]string{
	"openai": `data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"Hello"}}]}

data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}

data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":" EXTRA"}}]}

data: {"id":"c1","model":"m","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}

data: [DONE]

`,
	"anthropic": `event: message_start
data: {"type":"message_start","message":{"id":"msg_1","model":"m","usage":{"input_tokens":5,"output_tokens":1}}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" EXTRA"}}

event: message_stop
data: {"type":"message_stop"}

`,
	"gemini": `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Hello"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":1}}

data: {"candidates":[{"content":{"role":"model","parts":[{"text":" EXTRA"}]}}]}

`,
}
