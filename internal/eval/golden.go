package eval

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect/openaichat"
)

// Bounds of a golden file. A golden set is written by hand or generated
// from a few hundred real prompts; past these it is a mistake (or
// someone else's file), and reading it would only cost memory.
const (
	// MaxGoldenBytes bounds the whole file.
	MaxGoldenBytes = 16 << 20
	// MaxLineBytes bounds one case (one line).
	MaxLineBytes = 1 << 20
	// MaxCases bounds the cases of one file.
	MaxCases = 1000
	// maxProblems is how many bad lines are reported before giving up.
	maxProblems = 20
)

// Golden is a parsed golden file: cases in file order.
type Golden struct {
	// Path is the file as named on the command line.
	Path string
	// SHA256 is the hex digest of the file's bytes, exactly as read.
	SHA256 string
	Cases  []*Case
}

// Case is one line of a golden file: a request in OpenAI Chat Completions
// shape and what every deployment's answer must meet.
type Case struct {
	// ID names the case; unique in the file. Letters, digits, '.', '_'
	// and '-', at most 64.
	ID string
	// Line is the case's line in its file.
	Line int
	// Note is free text for the reader of the file; never compared.
	Note   string
	Expect Expect
	// req is the request decoded once, shared read-only by every
	// deployment's run (adapters do not modify requests).
	req *canonical.Request
	// schema and toolSchema are the compiled schemas of Expect.
	schema, toolSchema *jsonschema.Resolved
}

// Expect is what an answer must meet. At least one expectation is
// required; each one given is checked, and every one that fails is
// reported by its name (the JSON key, e.g. "tool_call.arguments").
type Expect struct {
	// Text is the exact answer text, for prompts whose answer is
	// deterministic.
	Text *string `json:"text,omitempty"`
	// JSON requires the answer text to be one valid JSON value.
	JSON bool `json:"json,omitempty"`
	// JSONEquals is the JSON value the answer must equal, compared
	// structurally: key order and whitespace do not matter, numbers
	// compare by value.
	JSONEquals json.RawMessage `json:"json_equals,omitempty"`
	// Schema is a JSON Schema (draft 2020-12 or draft-07) the answer's
	// JSON must meet, or the string "request" for the schema of the
	// request's response_format.
	Schema json.RawMessage `json:"schema,omitempty"`
	// Required are field paths that must be present and not null in the
	// answer's JSON: "a.b" for nested objects, "items[].sku" for every
	// element of an array.
	Required []string `json:"required,omitempty"`
	// ToolCall requires a call of a tool, with arguments of a shape.
	ToolCall *ToolCallExpect `json:"tool_call,omitempty"`
	// FinishReason is OpenAI's name for why the answer ended: stop,
	// length, tool_calls or content_filter.
	FinishReason string `json:"finish_reason,omitempty"`
	// Refusal, when given, says whether the answer must be a visible
	// refusal (true) or must not be one (false).
	Refusal *bool `json:"refusal,omitempty"`
}

// ToolCallExpect is a tool call the answer must make.
type ToolCallExpect struct {
	// Name is the tool's name. Required.
	Name string `json:"name"`
	// Arguments is the exact arguments object, compared structurally.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Schema is a JSON Schema the arguments must meet, or "request" for
	// the declared tool's parameters.
	Schema json.RawMessage `json:"schema,omitempty"`
	// Required are field paths the arguments must hold (as Expect.Required).
	Required []string `json:"required,omitempty"`
}

// Finish reasons an expectation may name (OpenAI's).
var finishReasons = []string{"stop", "length", "tool_calls", "content_filter"}

// line is one golden line as written.
type line struct {
	ID      string          `json:"id"`
	Note    string          `json:"note,omitempty"`
	Request json.RawMessage `json:"request"`
	Expect  *Expect         `json:"expect"`
}

var caseIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// LineError is one bad line of a golden file.
type LineError struct {
	File string
	Line int
	Msg  string
}

func (e *LineError) Error() string { return e.File + ":" + strconv.Itoa(e.Line) + ": " + e.Msg }

// LineErrors is every bad line found, in order; as an error it prints one
// per line, so a golden file is fixed in one pass.
type LineErrors []*LineError

func (es LineErrors) Error() string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// ParseGolden reads a golden file: one JSON object per line, blank lines
// skipped. Every line is checked (its request decoded as the gateway
// decodes an OpenAI Chat request, its schemas compiled) before anything is
// run; the error lists each bad line by number (LineErrors), or says which
// bound the file passed.
func ParseGolden(r io.Reader, path string) (*Golden, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxGoldenBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxGoldenBytes {
		return nil, fmt.Errorf("%s: larger than %d MiB: a golden set is a few hundred cases at most", path, MaxGoldenBytes>>20)
	}
	sum := sha256.Sum256(data)
	g := &Golden{Path: path, SHA256: hex.EncodeToString(sum[:])}
	var errs LineErrors
	bad := func(n int, format string, args ...any) {
		errs = append(errs, &LineError{File: path, Line: n, Msg: fmt.Sprintf(format, args...)})
	}
	seen := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	n := 0
	for sc.Scan() && len(errs) < maxProblems {
		n++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		if len(g.Cases) == MaxCases {
			return nil, fmt.Errorf("%s:%d: more than %d cases: split the golden set", path, n, MaxCases)
		}
		c, err := parseCase(text)
		if err != nil {
			bad(n, "%v", err)
			continue
		}
		c.Line = n
		if first, dup := seen[c.ID]; dup {
			bad(n, "case id %q is used on line %d already", c.ID, first)
			continue
		}
		seen[c.ID] = n
		g.Cases = append(g.Cases, c)
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		bad(n+1, "line longer than %d KiB", MaxLineBytes>>10)
	} else if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if len(g.Cases) == 0 {
		return nil, fmt.Errorf("%s: no cases (one JSON object per line: id, request, expect)", path)
	}
	return g, nil
}

// parseCase checks and decodes one line.
func parseCase(text []byte) (*Case, error) {
	var l line
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return nil, fmt.Errorf("not a golden case (%v): want one JSON object per line with id, request and expect", jsonError(err))
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value on the line")
	}
	switch {
	case !caseIDRE.MatchString(l.ID):
		return nil, fmt.Errorf("id %q: want 1 to 64 letters, digits, '.', '_' or '-'", l.ID)
	case len(l.Request) == 0 || l.Request[0] != '{':
		return nil, fmt.Errorf("case %s: request: want an OpenAI Chat Completions request object", l.ID)
	case l.Expect == nil:
		return nil, fmt.Errorf("case %s: expect: required (text, json, json_equals, schema, required, tool_call, finish_reason or refusal)", l.ID)
	}
	c := &Case{ID: l.ID, Note: l.Note, Expect: *l.Expect}
	req, err := decodeRequest(l.Request)
	if err != nil {
		return nil, fmt.Errorf("case %s: request: %v", l.ID, err)
	}
	c.req = req
	if err := c.compile(); err != nil {
		return nil, fmt.Errorf("case %s: %v", l.ID, err)
	}
	return c, nil
}

// jsonError words a decoding error without Go type names.
func jsonError(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("invalid JSON at byte %d: %v", se.Offset, se)
	case errors.As(err, &te):
		return fmt.Sprintf("%s has the wrong type (%s)", te.Field, te.Value)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// placeholderModel stands in for a request that names no model: the
// deployment's own model id is what goes upstream either way.
const placeholderModel = "golden"

// decodeRequest decodes an OpenAI Chat request as the gateway does. The
// model may be left out; stream is ignored (answers are always read as
// streams and assembled).
func decodeRequest(raw json.RawMessage) (*canonical.Request, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, errors.New(jsonError(err))
	}
	if _, ok := fields["model"]; !ok {
		fields["model"] = json.RawMessage(strconv.Quote(placeholderModel))
	}
	delete(fields, "stream")
	delete(fields, "stream_options")
	body, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	req, pub := openaichat.New().Decode(body, nil)
	if pub != nil {
		msg := pub.Message
		if pub.Param != "" && !strings.Contains(msg, pub.Param) {
			msg = pub.Param + ": " + msg
		}
		return nil, errors.New(msg)
	}
	if req.Embed != nil {
		return nil, errors.New("an embeddings request: eval compares generations")
	}
	return req, nil
}

// compile checks the expectations and compiles their schemas; the error
// starts with the field's path ("expect.schema: ...").
func (c *Case) compile() error {
	e := &c.Expect
	if e.Text == nil && !e.JSON && e.JSONEquals == nil && e.Schema == nil && len(e.Required) == 0 &&
		e.ToolCall == nil && e.FinishReason == "" && e.Refusal == nil {
		return errors.New("expect: nothing to check: give text, json, json_equals, schema, required, tool_call, finish_reason or refusal")
	}
	if e.FinishReason != "" && !slices.Contains(finishReasons, e.FinishReason) {
		return fmt.Errorf("expect.finish_reason: %q is not one of %s", e.FinishReason, strings.Join(finishReasons, ", "))
	}
	if e.JSONEquals != nil && !json.Valid(e.JSONEquals) {
		return errors.New("expect.json_equals: not JSON")
	}
	var reqSchema json.RawMessage
	if f := c.req.ResponseFormat; f != nil {
		reqSchema = f.Schema
	}
	var err error
	if c.schema, err = compileSchema(e.Schema, reqSchema, "the request has no response_format json_schema"); err != nil {
		return fmt.Errorf("expect.schema: %v", err)
	}
	if err := checkPaths(e.Required); err != nil {
		return fmt.Errorf("expect.required: %v", err)
	}
	if t := e.ToolCall; t != nil {
		if t.Name == "" {
			return errors.New("expect.tool_call.name: required")
		}
		var params json.RawMessage
		found := false
		for _, tool := range c.req.Tools {
			if tool.Name == t.Name {
				params, found = tool.Parameters, true
			}
		}
		if !found {
			return fmt.Errorf("expect.tool_call.name: the request declares no tool %q", t.Name)
		}
		if t.Arguments != nil && (!json.Valid(t.Arguments) || bytes.TrimSpace(t.Arguments)[0] != '{') {
			return errors.New("expect.tool_call.arguments: want a JSON object")
		}
		if c.toolSchema, err = compileSchema(t.Schema, params, "the tool declares no parameters"); err != nil {
			return fmt.Errorf("expect.tool_call.schema: %v", err)
		}
		if err := checkPaths(t.Required); err != nil {
			return fmt.Errorf("expect.tool_call.required: %v", err)
		}
	}
	return nil
}

// compileSchema compiles raw: a schema object, or "request" for fromRequest.
// Nil raw is no schema.
func compileSchema(raw, fromRequest json.RawMessage, none string) (*jsonschema.Resolved, error) {
	if raw == nil {
		return nil, nil
	}
	if string(bytes.TrimSpace(raw)) == `"request"` {
		if len(fromRequest) == 0 {
			return nil, errors.New(`"request": ` + none)
		}
		raw = fromRequest
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf(`want a JSON Schema object or "request": %v`, jsonError(err))
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("not a schema this checker can use: %v", err)
	}
	return rs, nil
}

// checkPaths refuses empty or malformed field paths.
func checkPaths(paths []string) error {
	for _, p := range paths {
		for seg := range strings.SplitSeq(p, ".") {
			if strings.TrimSuffix(seg, "[]") == "" {
				return fmt.Errorf("%q: want dotted field names, e.g. \"customer.name\" or \"items[].sku\"", p)
			}
		}
	}
	return nil
}
