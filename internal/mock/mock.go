// Package mock provides fault-injecting mock LLM providers that speak each
// provider's real wire format (success and error bodies, headers, streams).
//
// A Mock is an http.Handler. Its answers are deterministic: the reply text
// begins "mock <name> " (then filler words; structured output is JSON, see
// below), every content delta (text, refusal or tool-argument fragment) is
// at most 4 bytes, and usage reports exactly as many output tokens as there
// are content deltas, streamed or not. Prompt tokens total ceil(len(body)/4);
// cached=N takes N of them from the cache (OpenAI: cached_tokens within
// prompt_tokens; Anthropic: cache_read_input_tokens, apart from
// input_tokens).
//
// A request's max tokens below the text's token count stops it early
// (finish_reason "length", stop_reason "max_tokens"); stop sequences cut the
// text before the match. Tool-call answers are not shortened.
//
// Structured output: a request that asks for JSON gets, as its text (the
// message content, a text block, a text part), a compact JSON instance of
// its schema, streamed in the same deltas and counted the same way. Asking
// for it: OpenAI response_format json_schema (json_object answers
// {"mock":"<name>"}); Anthropic output_config.format, or the deprecated
// output_format; Gemini responseMimeType application/json with
// responseJsonSchema or responseSchema (OpenAPI types, any case; with
// neither, {"mock":"<name>"}), or text/x.enum with a schema (the bare enum
// value); Bedrock outputConfig.textFormat (its jsonSchema.schema is a JSON
// string). The instance is deterministic: strings are the mock's name
// ("mock" when unnamed; date-time, date, time, email, uri, uuid, ipv4/6
// and other formats get a plausible value; minLength/maxLength pad or cut),
// numbers 1 or a value the bounds allow, booleans true, arrays one item (or
// minItems, at most 3), objects every listed property in schema (or
// propertyOrdering) order; enum and const give their (first) value, anyOf
// and oneOf their first branch that is not null, allOf the merge of its
// branches, $ref (a JSON pointer: #/$defs/X, #/definitions/X, #) its
// target. Past 8 $refs on one path, or a budget of values, the rest is
// minimal (null where allowed, required properties only, minItems items,
// empty strings), so recursive schemas end; pattern is not honoured. The
// JSON is sent whole: tokens= and stop sequences do not cut it, only the
// request's max tokens does (with the length stop reason). Tool calls and
// refusals come first, as for text.
//
// Faults are chosen by a script (see ParseScript): mock-wide (Options.Fault,
// SetFault, or PUT /_mock/fault) or per request (header X-Mock-Fault, which
// replaces the mock-wide script for that request). Script items:
//
//	status=N          answer N with the provider's real error body for N
//	error_type=X      override the error type (with status= or error_after=)
//	error_code=Y      override the error code (OpenAI only)
//	message=...       override the error message, or the refusal text
//	retry_after=S     send retry-after: S (seconds) with the error
//	retry_after_ms=N  send retry-after-ms: N with the error
//	delay=D           wait D before the response headers
//	stall             accept the request and never send a byte
//	stall_after=K     stream K content events, then go silent
//	die_after=K       stream K content events, then cut the connection
//	error_after=K     stream K content events, then the provider's in-stream error
//	malformed_after=K after K content events, one broken JSON event (then the rest)
//	no_terminal       omit the stream's terminal event ([DONE], message_stop)
//	refusal           answer with a refusal
//	omit_field=NAME   a JSON answer leaves out its top-level field NAME (with
//	                  p=F: that share of answers, seeded)
//	event_delay=D     wait D between stream events
//	tokens=N cached=N tool=name tools=N args={json}   shape the answer
//	ignore_limit      the answer's length ignores the request's max tokens
//	report_input=N report_output=N   report these counts (any int64)
//	p=F               apply the fault part (all but the shaping items) with
//	                  probability F; seeded, and SetFault restarts the sequence
//	times=N           mock-wide only: apply to the next N requests, then heal
//
// The *_after faults fire before the (K+1)-th content event, or before the
// answer's closing events when it has K or fewer. Non-streaming requests get:
// die_after → 200 headers and half the body, then the connection is cut;
// stall_after → 200 headers and half the body, then silence; error_after →
// the HTTP error the in-stream error stands for (OpenAI 500 server_error,
// Anthropic 529 overloaded_error); malformed_after → 200 with a truncated,
// unparsable body and a clean close; no_terminal and event_delay → ignored.
//
// Refusals: OpenAI sends message.refusal (content null) or delta.refusal
// fragments; Anthropic sends no content (unless tokens= is given: text
// first, then the cut) and stop_reason "refusal" with stop_details.
//
// Stalls end when the client goes away; Close cuts those still held, so a
// server shutdown is never blocked by them. OpenAI's optional stream
// obfuscation padding is not emitted.
//
// Embeddings (embed.go): OpenAI POST /v1/embeddings, Gemini
// :batchEmbedContents and :embedContent, Bedrock InvokeModel of a model id
// containing "embed" (Titan's body, or Cohere's for "cohere."), each in its
// real wire format. Vectors derive from the input text alone (8 floats unless the
// request asks for up to 4096, unit length), so every wire agrees; prompt
// tokens are ceil(len(text)/4) per text. They are recorded, counted and
// scripted as generations: die_after and the other *_after faults act as on
// a non-streaming request.
//
// A new wire format is one new file implementing the wire interface, plus
// its case in New.
package mock

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a Mock. The zero value is a healthy mock with no name
// and no credential check.
type Options struct {
	// Name appears in reply text ("mock <name> ...") so tests can tell which
	// mock served. Empty: "mock".
	Name string
	// APIKey, when non-empty, is the only credential accepted; requests
	// without it get the provider's real 401 body.
	APIKey string
	// Fault is the mock-wide fault script applied to every request; "" is
	// healthy.
	Fault string
	// Seed seeds the random source of p= faults, so runs are repeatable.
	Seed int64
	// Model is the model id reported in answers; empty: the request's model.
	Model string
}

// Received is one generation request as the mock received it.
type Received struct {
	Path   string
	Stream bool
	Model  string
	// IdempotencyKey is the Idempotency-Key header, "" when absent.
	IdempotencyKey string
	Header         http.Header
	Body           []byte
	At             time.Time
}

// Mock is a fault-injecting mock provider. It is safe for concurrent use.
type Mock struct {
	kind string
	wire wire
	opts Options
	tag  uint64 // seeds the mock's deterministic ids
	// maxBody bounds request bodies (maxBodyDefault; tests lower it).
	maxBody int64

	seq       atomic.Uint64
	inflight  atomic.Int64 // generation requests being answered (tests watch it)
	done      chan struct{}
	closeOnce sync.Once

	mu        sync.Mutex
	script    *Script // mock-wide; nil = healthy
	remaining int     // requests the script still applies to; 0 = unlimited
	rng       *rand.Rand
	reqs      []Received
}

// New returns a mock provider of the given kind ("openai", "anthropic",
// "bedrock" or "gemini").
func New(kind string, opts Options) (*Mock, error) {
	var wf wire
	switch kind {
	case "openai":
		wf = openAIChat{}
	case "anthropic":
		wf = anthropicMessages{}
	case "bedrock":
		wf = bedrockConverse{}
	case "gemini":
		wf = geminiAPI{}
	default:
		return nil, fmt.Errorf("mock: unknown provider kind %q (want openai, anthropic, bedrock or gemini)", kind)
	}
	h := fnv.New64a()
	io.WriteString(h, kind+"\x00"+opts.Name)
	m := &Mock{kind: kind, wire: wf, opts: opts, tag: h.Sum64(), maxBody: maxBodyDefault, done: make(chan struct{})}
	if err := m.SetFault(opts.Fault); err != nil {
		return nil, err
	}
	return m, nil
}

// Kind returns the provider kind the mock speaks.
func (m *Mock) Kind() string { return m.kind }

// SetFault replaces the mock-wide fault script; "" clears it. It re-seeds
// the p= random source from Options.Seed, so a given script and seed always
// produce the same sequence of outcomes.
func (m *Mock) SetFault(script string) error {
	sc, err := m.parse(script)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.script, m.remaining = sc, 0
	if sc != nil {
		m.remaining = sc.times
	}
	m.rng = rand.New(rand.NewPCG(uint64(m.opts.Seed), 0x5eed))
	return nil
}

// parse parses a script and checks that this wire format can express it.
func (m *Mock) parse(script string) (*Script, error) {
	sc, err := ParseScript(script)
	if err != nil || sc == nil {
		return nil, err
	}
	if err := m.wire.validate(sc); err != nil {
		return nil, fmt.Errorf("mock script: %w", err)
	}
	return sc, nil
}

// Requests returns every generation request received, in order.
func (m *Mock) Requests() []Received {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Received(nil), m.reqs...)
}

// Active is the number of generation requests being answered right now
// (a stalled one stays active until its client goes away).
func (m *Mock) Active() int { return int(m.inflight.Load()) }

// Count returns the number of generation requests received.
func (m *Mock) Count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.reqs)
}

// Reset clears the request records. The fault script stays.
func (m *Mock) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reqs = nil
}

// Close releases every request held by stall or stall_after (their
// connections are cut) and makes later stalls end at once. Call it before
// shutting down the server the mock runs in; the mock keeps serving.
func (m *Mock) Close() {
	m.closeOnce.Do(func() { close(m.done) })
}

func (m *Mock) record(r *http.Request, body []byte) {
	var peek struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	_ = json.Unmarshal(body, &peek) // best effort: invalid bodies are recorded too
	rec := Received{
		Path:           r.URL.Path,
		Stream:         peek.Stream,
		Model:          peek.Model,
		IdempotencyKey: r.Header.Get("Idempotency-Key"),
		Header:         r.Header.Clone(),
		Body:           body,
		At:             time.Now(),
	}
	m.mu.Lock()
	m.reqs = append(m.reqs, rec)
	m.mu.Unlock()
}

// ServeHTTP routes generation, provider and control requests.
func (m *Mock) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/_mock/fault":
		m.controlFault(w, r)
		return
	case "/_mock/stats":
		if !allow(w, r, http.MethodGet) {
			return
		}
		writeJSON(w, http.StatusOK, map[string]int{"requests": m.Count()})
		return
	case "/_mock/reset":
		if !allow(w, r, http.MethodPost) {
			return
		}
		m.Reset()
		writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
		return
	}
	c := m.newCall()
	if r.URL.Path == m.wire.path() {
		if r.Method != http.MethodPost {
			m.wire.writeError(c, w, m.wire.methodError(r))
			return
		}
		m.inflight.Add(1)
		defer m.inflight.Add(-1)
		m.generate(c, w, r)
		return
	}
	if !m.wire.other(m, c, w, r) {
		m.wire.writeError(c, w, m.wire.notFound(r))
	}
}

func (m *Mock) controlFault(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodPut) {
		return
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	if err := m.SetFault(string(b)); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"fault": m.currentScript()})
}

func (m *Mock) currentScript() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.script.String()
}

func allow(w http.ResponseWriter, r *http.Request, method string) bool {
	if r.Method == method {
		return true
	}
	w.Header().Set("Allow", method)
	writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "use " + method})
	return false
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
