package mock

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// request is what a wire format's decoder extracts from a generation request:
// only what shapes the mock's answer.
type request struct {
	model  string
	stream bool
	// maxTokens is the output ceiling; -1 when the request set none.
	maxTokens int
	stops     []string
	tools     []string // declared tool names, in order
	// toolChoice is "auto", "none", "required" or "tool" (with forcedTool).
	toolChoice string
	forcedTool string
	// lastIsToolResult: the conversation's last turn hands back tool results,
	// so the model answers with text.
	lastIsToolResult bool
	noParallel       bool
	includeUsage     bool // OpenAI stream_options.include_usage
	// format is the structured output the request asks for; nil: text.
	format *jsonFormat
	// thinking is what the request asks of reasoning.
	thinking thinkMode
	// schemas holds the declared tools' parameter schemas, by name.
	schemas map[string]json.RawMessage
}

// setSchema records a tool's parameter schema.
func (r *request) setSchema(name string, schema json.RawMessage) {
	if len(schema) == 0 || string(schema) == "null" {
		return
	}
	if r.schemas == nil {
		r.schemas = map[string]json.RawMessage{}
	}
	r.schemas[name] = schema
}

// toolArgs are the arguments the mock calls a tool with: the script's, else
// {"city":"Paris"} when the tool's schema takes it (most tests declare a
// weather tool), else an instance of the tool's schema.
func (r *request) toolArgs(name, word string, scripted string) string {
	if scripted != "" {
		return scripted
	}
	schema, ok := r.schemas[name]
	if !ok || fitsDefaultArgs(schema) {
		return defaultArgs
	}
	return (&jsonFormat{schema: schema}).text(word)
}

// fitsDefaultArgs reports whether {"city":"Paris"} satisfies a parameter
// schema: an object that requires nothing but city, and has room for it.
func fitsDefaultArgs(schema json.RawMessage) bool {
	var s struct {
		Type                 any                        `json:"type"`
		Properties           map[string]json.RawMessage `json:"properties"`
		Required             []string                   `json:"required"`
		AdditionalProperties json.RawMessage            `json:"additionalProperties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return true
	}
	if t, ok := s.Type.(string); ok && !strings.EqualFold(t, "object") {
		return false
	}
	for _, req := range s.Required {
		if req != "city" {
			return false
		}
	}
	if _, ok := s.Properties["city"]; len(s.Properties) > 0 && !ok && string(s.AdditionalProperties) == "false" {
		return false
	}
	return true
}

// thinkMode is a request's reasoning, as far as the mock's answer goes.
type thinkMode uint8

const (
	thinkNone thinkMode = iota
	// thinkShown: reasoning whose text the answer carries (Anthropic
	// thinking, Bedrock reasoningContent, Gemini thoughts).
	thinkShown
	// thinkHidden: reasoning that is counted and signed but whose text is
	// left out (Anthropic display "omitted", Gemini includeThoughts false,
	// OpenAI's reasoning, which no Chat answer shows).
	thinkHidden
)

// stopKind is why a mock answer ended, before a wire format names it.
type stopKind uint8

const (
	stopEnd stopKind = iota
	stopLength
	stopSequence
	stopTool
	stopRefusal
)

// answer is one deterministic, wire-neutral reply. Every element of text,
// refusal and each call's fragments is one content delta of at most 4
// bytes, so output equals the number of content deltas whatever the wire.
type answer struct {
	model   string
	text    []string
	refusal []string // OpenAI-style visible refusal deltas
	// refusalNote is Anthropic's stop_details.explanation.
	refusalNote string
	calls       []toolCall
	// thought is the reasoning, one delta per token (counted in output even
	// when hidden); signature signs it (see thoughtSignature).
	thought     []string
	thoughtHide bool
	signature   string
	stop        stopKind
	stopSeq     string
	// input counts every prompt token; cached is the part read from cache.
	input, cached, output int
}

type toolCall struct {
	name      string
	args      string
	fragments []string
}

const (
	defaultTokens  = 8
	defaultArgs    = `{"city":"Paris"}`
	defaultRefusal = "I'm sorry, but I can't help with that request."
	filler         = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor"
)

// plan builds the answer to req under the script's shaping (sc may be nil).
// refusal says whether the refusal fault applies to this request;
// refusalDeltas whether the wire format streams the refusal as text (OpenAI)
// rather than only naming it in its stop reason (Anthropic).
func plan(name, modelOverride string, req *request, body []byte, sc *Script, refusal, refusalDeltas bool) *answer {
	if sc == nil {
		sc = &Script{tokens: -1}
	}
	a := &answer{model: req.model}
	if modelOverride != "" {
		a.model = modelOverride
	}
	a.input = (len(body) + 3) / 4
	a.cached = min(sc.cached, a.input)

	switch {
	case refusal:
		a.stop = stopRefusal
		msg := sc.message
		if msg == "" {
			msg = defaultRefusal
		}
		a.refusalNote = msg
		switch {
		case refusalDeltas:
			a.refusal = pieces(msg)
		case sc.tokens > 0:
			// An explicit tokens= lets text stream before the refusal cuts
			// in (Anthropic's classifier stops an answer already under way).
			a.text = textTokens(name, sc.tokens)
		}
	case wantsTool(req):
		a.stop = stopTool
		n := 1
		if sc.tools > 0 && !req.noParallel {
			n = sc.tools
		}
		for i := range n {
			tool := pickTool(req, sc, i)
			args := req.toolArgs(tool, schemaWord(name), sc.args)
			a.calls = append(a.calls, toolCall{name: tool, args: args, fragments: pieces(args)})
		}
	case req.format != nil:
		// A JSON answer is sent whole: tokens= and stop sequences do not
		// cut it; only the request's max tokens does.
		a.text = pieces(omitJSONField(req.format.text(schemaWord(name)), sc.omitField))
		if req.maxTokens >= 0 && req.maxTokens < len(a.text) {
			a.text, a.stop = a.text[:req.maxTokens], stopLength
		}
	default:
		n := defaultTokens
		if sc.tokens >= 0 {
			n = sc.tokens
		}
		if req.maxTokens >= 0 && req.maxTokens < n && !sc.ignoreLimit {
			n = req.maxTokens
			a.stop = stopLength
		}
		a.text = textTokens(name, n)
		if seq, cut, ok := firstStop(a.text, req.stops); ok {
			a.text, a.stop, a.stopSeq = cut, stopSequence, seq
		}
	}
	if req.thinking != thinkNone && !refusal {
		// Reasoning comes first, whatever the answer is.
		text := "mock " + schemaWord(name) + " weighs the question"
		a.thought, a.thoughtHide = pieces(text), req.thinking == thinkHidden
		a.signature = thoughtSignature(text)
	}
	a.output = len(a.text) + len(a.refusal) + len(a.thought)
	for _, c := range a.calls {
		a.output += len(c.fragments)
	}
	if sc.hasReportIn {
		a.input, a.cached = int(sc.reportIn), 0
	}
	if sc.hasReportOut {
		a.output = int(sc.reportOut)
	}
	return a
}

// thoughtSignature signs a reasoning text the way the mocks check it back:
// a digest of the text, so a signature carried unchanged with its text
// verifies, and any change to either does not. It is the same for every
// mock, as Claude's signatures are the same on Anthropic and on Bedrock.
func thoughtSignature(text string) string {
	sum := sha256.Sum256([]byte("mock-thought:" + text))
	return "mocksig_" + base64.RawURLEncoding.EncodeToString(sum[:12])
}

// validThought reports whether a reasoning block sent back verifies. A
// hidden block's text comes back empty; its signature then stands alone.
func validThought(text, signature string) bool {
	if text == "" {
		return strings.HasPrefix(signature, "mocksig_")
	}
	return signature == thoughtSignature(text)
}

func wantsTool(req *request) bool {
	return len(req.tools) > 0 && !req.lastIsToolResult && req.toolChoice != "none"
}

// pickTool names the i-th parallel call: the script's tool=, else the forced
// tool_choice, else the declared tools in turn.
func pickTool(req *request, sc *Script, i int) string {
	switch {
	case sc.tool != "":
		return sc.tool
	case req.toolChoice == "tool" && req.forcedTool != "":
		return req.forcedTool
	}
	return req.tools[i%len(req.tools)]
}

// textTokens returns n deltas whose text begins "mock <name> " followed by
// filler words: the first delta is "mock", each word (with its leading space)
// is cut into pieces of at most 4 bytes.
func textTokens(name string, n int) []string {
	if n == 0 {
		return nil
	}
	out := make([]string, 0, n)
	out = append(out, "mock")
	words := strings.Fields(name)
	if len(words) == 0 {
		words = []string{"mock"}
	}
	fill := strings.Fields(filler)
	for i := 0; len(out) < n; i++ {
		var w string
		if i < len(words) {
			w = words[i]
		} else {
			w = fill[(i-len(words))%len(fill)]
		}
		for _, p := range pieces(" " + w) {
			if len(out) == n {
				break
			}
			out = append(out, p)
		}
	}
	return out
}

// pieces cuts s into chunks of at most 4 bytes without splitting a rune.
func pieces(s string) []string {
	var out []string
	for len(s) > 0 {
		end := 0
		for end < len(s) {
			_, size := utf8.DecodeRuneInString(s[end:])
			if end+size > 4 {
				break
			}
			end += size
		}
		if end == 0 { // cannot happen for valid or invalid UTF-8 (size <= 4)
			end = 1
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}

// firstStop finds the earliest stop sequence in the joined text and cuts the
// deltas just before it, as providers do (the sequence itself is not sent).
func firstStop(text []string, stops []string) (seq string, cut []string, ok bool) {
	full := strings.Join(text, "")
	at := -1
	for _, s := range stops {
		if s == "" {
			continue
		}
		if i := strings.Index(full, s); i >= 0 && (at < 0 || i < at) {
			at, seq = i, s
		}
	}
	if at < 0 {
		return "", nil, false
	}
	pos := 0
	for _, p := range text {
		if pos+len(p) <= at {
			cut = append(cut, p)
		} else if pos < at {
			cut = append(cut, p[:at-pos])
		}
		pos += len(p)
	}
	return seq, cut, true
}
