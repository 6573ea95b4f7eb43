package mock

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// wire is one provider's wire format. The shared machinery (server.go,
// faults.go) decides what happens to a request; a wire renders it.
type wire interface {
	// path is the generation route, e.g. "/v1/chat/completions".
	path() string
	// other serves the format's remaining routes and reports whether the
	// path was one of them.
	other(m *Mock, c *call, w http.ResponseWriter, r *http.Request) bool
	// validate rejects script items the format cannot express.
	validate(sc *Script) error

	// admit checks credentials and required headers.
	admit(c *call, r *http.Request, apiKey string) *apiError
	// decode parses and validates a generation request body as the real
	// provider does (at least for what the mock relies on).
	decode(c *call, body []byte) (*request, *apiError)

	// statusError is the provider's real error answer for status (sc may be
	// nil; its error_type/error_code/message override the defaults).
	statusError(c *call, status int, sc *Script) *apiError
	// streamError is the in-stream error of error_after; its status is the
	// HTTP error a non-streaming request gets instead.
	streamError(c *call, sc *Script) *apiError
	badRequest(c *call, msg string) *apiError
	notFound(r *http.Request) *apiError
	methodError(r *http.Request) *apiError
	writeError(c *call, w http.ResponseWriter, e *apiError)

	// headers sets the provider's usual response headers.
	headers(c *call, h http.Header, status int)
	// body renders a non-streaming answer.
	body(c *call, a *answer) []byte
	// events renders a streaming answer, event by event.
	events(c *call, a *answer) []event
	errorEvent(c *call, e *apiError) []byte
	malformedEvent(c *call) []byte
	streamContentType() string
	// refusalDeltas reports whether refusals stream as visible text.
	refusalDeltas() bool
}

// apiError is a provider error answer before a wire format renders it.
type apiError struct {
	status  int
	typ     string
	code    string // "" renders as null where the format has a code
	message string
	param   string // "" renders as null
	// retryAfter and retryMS are sent as headers when >= 0.
	retryAfter, retryMS int
}

func newAPIError(status int, typ, code, msg, param string) *apiError {
	return &apiError{status: status, typ: typ, code: code, message: msg, param: param, retryAfter: -1, retryMS: -1}
}

// override applies a script's error_type, error_code and message.
func (e *apiError) override(sc *Script) *apiError {
	if sc == nil {
		return e
	}
	if sc.errorType != "" {
		e.typ = sc.errorType
	}
	if sc.errorCode != "" {
		e.code = sc.errorCode
	}
	if sc.message != "" {
		e.message = sc.message
	}
	return e
}

// eventKind tells the stream engine where fault points are.
type eventKind uint8

const (
	// evProtocol: framing the caller does not see (start, role, ping, block
	// start/stop).
	evProtocol eventKind = iota
	// evContent: one content delta (text, refusal, tool arguments).
	evContent
	// evFinal: the closing events (finish reason, usage, message_delta).
	evFinal
	// evTerminal: the success terminator ([DONE], message_stop).
	evTerminal
)

type event struct {
	kind eventKind
	data []byte
}

// call is the per-request state shared by the machinery and a wire.
type call struct {
	seq   uint64
	tag   uint64
	start time.Time
	req   *request // nil until the body is decoded
	name  string
	model string // Options.Model
	// stream is set by a wire whose endpoint, not its body, says the
	// answer streams (Bedrock's converse-stream); generate honours it.
	stream bool
	// routeModel is the model named by the endpoint's path (Gemini), for a
	// wire whose body does not name it; "" otherwise.
	routeModel string
	// version is the API version the request was admitted under (Anthropic's
	// anthropic-version); "" for wires without one.
	version string
}

func (m *Mock) newCall() *call {
	return &call{seq: m.seq.Add(1), tag: m.tag, start: time.Now(), name: m.opts.Name, model: m.opts.Model}
}

const idAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// id returns a deterministic provider-looking id: prefix followed by n
// characters derived from the mock, the request and salt.
func (c *call) id(prefix string, n int, salt uint64) string {
	x := c.tag ^ c.seq*0x9e3779b97f4a7c15 ^ salt*0xbf58476d1ce4e5b9
	b := make([]byte, 0, len(prefix)+n)
	b = append(b, prefix...)
	for range n {
		// splitmix64 step
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		z ^= z >> 31
		b = append(b, idAlphabet[z%uint64(len(idAlphabet))])
	}
	return string(b)
}

// hexID is like id but with lowercase hex digits.
func (c *call) hexID(prefix string, n int, salt uint64) string {
	s := []byte(c.id("", n, salt))
	for i, ch := range s {
		s[i] = "0123456789abcdef"[ch%16]
	}
	return prefix + string(s)
}

func (c *call) elapsedMS() int64 { return time.Since(c.start).Milliseconds() }

// setRetryHeaders sends the error's retry hints.
func setRetryHeaders(h http.Header, e *apiError) {
	if e.retryAfter >= 0 {
		h.Set("retry-after", strconv.Itoa(e.retryAfter))
	}
	if e.retryMS >= 0 {
		h.Set("retry-after-ms", strconv.Itoa(e.retryMS))
	}
}

// marshal encodes v as compact JSON without escaping <, > and &, as the
// providers write it.
func marshal(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("mock: cannot encode " + err.Error()) // only fixed, encodable types reach here
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// jsonText renders s as a JSON string.
func jsonText(s string) string { return string(marshal(s)) }

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// resetTime is a rate-limit reset instant as Anthropic writes it.
func resetTime(d time.Duration) string { return time.Now().Add(d).UTC().Format(time.RFC3339) }
