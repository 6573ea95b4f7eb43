package anthropicmsgs

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/canonical"
)

func ptr[T any](v T) *T { return &v }

// hdr is the header anthropic-sdk-go v1 and @anthropic-ai/sdk 0.x send.
func hdr() http.Header { return http.Header{"Anthropic-Version": {Version20230601}} }

// hdr2026 is the header anthropic-sdk-go v2 and @anthropic-ai/sdk 1.x send.
func hdr2026() http.Header { return http.Header{"Anthropic-Version": {Version20261021}} }

func userText(s string) canonical.Message {
	return canonical.Message{Role: canonical.RoleUser, Content: []canonical.Part{canonical.TextPart(s)}}
}

func assistantText(s string) canonical.Message {
	return canonical.Message{Role: canonical.RoleAssistant, Content: []canonical.Part{canonical.TextPart(s)}}
}

func text(s string) canonical.Part { return canonical.TextPart(s) }

// A minimal valid request to splice fields into.
const (
	okMsgs = `"messages":[{"role":"user","content":"hi"}]`
	okHead = `{"model":"m","max_tokens":16,` + okMsgs
	okTool = `"tools":[{"name":"get_weather","input_schema":{"type":"object"}}]`
)

func withField(f string) string { return okHead + "," + f + "}" }

func withMessages(msgs string) string {
	return `{"model":"m","max_tokens":16,"messages":[` + msgs + `]}`
}

// base is the canonical form of okHead.
func base() canonical.Request {
	return canonical.Request{Model: "m", MaxTokens: 16, Messages: []canonical.Message{userText("hi")}}
}

func with(f func(r *canonical.Request)) canonical.Request {
	r := base()
	f(&r)
	return r
}

func msgs(ms ...canonical.Message) canonical.Request {
	return canonical.Request{Model: "m", MaxTokens: 16, Messages: ms}
}

var weatherTool = canonical.Tool{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object"}`)}

var decodeCases = []struct {
	name string
	body string
	want canonical.Request
}{
	{
		name: "minimal",
		body: `{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":"Hello"}]}`,
		want: canonical.Request{Model: "claude-sonnet-4-5", MaxTokens: 1024, Messages: []canonical.Message{userText("Hello")}},
	},
	{
		name: "members in any order, whitespace, nulls for every optional field",
		body: " \n\t{ \"messages\" : [ { \"content\" : \"x\" , \"role\" : \"user\" } ] , \"max_tokens\" : 5 , \"model\" : \"m\" ," +
			`"system":null,"stop_sequences":null,"temperature":null,"top_p":null,"top_k":null,"stream":null,"tools":null,` +
			`"tool_choice":null,"metadata":null,"service_tier":null,"cache_control":null,"speed":null,"thinking":null,` +
			`"output_config":null,"inference_geo":null,"container":null,"mcp_servers":null,"context_management":null,"diagnostics":null} ` + "\r\n",
		want: canonical.Request{Model: "m", MaxTokens: 5, Messages: []canonical.Message{userText("x")}},
	},
	{
		name: "hints and bookkeeping are accepted and ignored",
		body: withField(`"metadata":{"user_id":"u-1"},"service_tier":"standard_only","cache_control":{"type":"ephemeral","ttl":"1h"},` +
			`"speed":"standard"`),
		want: base(),
	},
	{
		name: "thinking disabled",
		body: withField(`"thinking":{"type":"disabled"}`),
		want: func() canonical.Request {
			r := base()
			r.Reasoning = &canonical.Reasoning{Mode: canonical.ReasoningOff}
			return r
		}(),
	},
	{
		name: "thinking with a budget, summarized; structured output",
		body: `{"model":"m","max_tokens":4096,` + okMsgs + `,"thinking":{"type":"enabled","budget_tokens":2048,"display":"summarized"},` +
			`"output_config":{"format":{"type":"json_schema","schema":{"type":"object","properties":{"a":{"type":"string"}}}}}}`,
		want: canonical.Request{Model: "m", MaxTokens: 4096, Messages: []canonical.Message{userText("hi")},
			Reasoning:      &canonical.Reasoning{Mode: canonical.ReasoningBudget, BudgetTokens: 2048, Show: true},
			ResponseFormat: &canonical.ResponseFormat{Type: canonical.FormatJSONSchema, Schema: []byte(`{"type":"object","properties":{"a":{"type":"string"}}}`), Strict: true}},
	},
	{
		name: "adaptive thinking at an effort, omitted",
		body: withField(`"thinking":{"type":"adaptive","display":"omitted"},"output_config":{"effort":"high"}`),
		want: func() canonical.Request {
			r := base()
			r.Reasoning = &canonical.Reasoning{Mode: canonical.ReasoningAdaptive, Effort: "high", Hide: true}
			return r
		}(),
	},
	{
		name: "effort alone",
		body: withField(`"output_config":{"effort":"low"}`),
		want: func() canonical.Request {
			r := base()
			r.Reasoning = &canonical.Reasoning{Effort: "low"}
			return r
		}(),
	},
	{
		name: "thinking blocks in history keep their signatures; a marked one its family",
		body: withMessages(`{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"c2ln"},` +
			`{"type":"redacted_thinking","data":"ZW5j"},{"type":"text","text":"b"}]},{"role":"user","content":"c"},` +
			`{"role":"assistant","content":[{"type":"thinking","thinking":"","signature":"spw:gemini:Z3N"},{"type":"text","text":"d"}]},{"role":"user","content":"e"}`),
		want: canonical.Request{Model: "m", MaxTokens: 16, Messages: []canonical.Message{userText("a"),
			{Role: canonical.RoleAssistant, Content: []canonical.Part{{Type: canonical.PartThinking, Text: "hmm", Signature: "c2ln", Family: canonical.FamilyClaude},
				{Type: canonical.PartRedactedThinking, Data: "ZW5j", Family: canonical.FamilyClaude}, text("b")}},
			userText("c"),
			{Role: canonical.RoleAssistant, Content: []canonical.Part{{Type: canonical.PartThinking, Signature: "Z3N", Family: canonical.FamilyGemini}, text("d")}},
			userText("e")}},
	},
	{
		name: "system string",
		body: withField(`"system":"Be brief."`),
		want: with(func(r *canonical.Request) { r.System = "Be brief." }),
	},
	{
		name: "system blocks join with a blank line; cache_control ignored",
		body: withField(`"system":[{"type":"text","text":"Be brief."},{"text":"Use French.","cache_control":{"type":"ephemeral"},"type":"text","citations":null}]`),
		want: with(func(r *canonical.Request) { r.System = "Be brief.\n\nUse French." }),
	},
	{
		name: "one system block",
		body: withField(`"system":[{"type":"text","text":"Only."}]`),
		want: with(func(r *canonical.Request) { r.System = "Only." }),
	},
	{
		name: "text blocks, images by base64 and URL, consecutive user turns kept apart",
		body: withMessages(`{"role":"user","content":[{"type":"text","text":"Compare"},` +
			`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="},"cache_control":{"type":"ephemeral"}},` +
			`{"type":"image","source":{"type":"url","url":"https://example.com/a.jpg"}}]},` +
			`{"role":"user","content":[{"type":"text","text":"and say which is bigger","citations":[]}]}`),
		want: msgs(
			canonical.Message{Role: canonical.RoleUser, Content: []canonical.Part{
				text("Compare"),
				{Type: canonical.PartImage, MediaType: "image/png", Data: "iVBORw0KGgo="},
				{Type: canonical.PartImage, ImageURL: "https://example.com/a.jpg"},
			}},
			userText("and say which is bigger"),
		),
	},
	{
		name: "tool loop: parallel calls answered out of order, text after the results",
		body: withMessages(`{"role":"user","content":"Weather in Paris, time in Rome?"},` +
			`{"role":"assistant","content":[{"type":"text","text":"Checking."},` +
			`{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{ "city" : "Paris",` + "\n" + ` "days": [1, 2] }},` +
			`{"type":"tool_use","id":"toolu_2","name":"get_time","input":{},"cache_control":{"type":"ephemeral"}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_2","content":"12:00"},` +
			`{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"sunny"},{"type":"text","text":", 20C"}],"is_error":false},` +
			`{"type":"text","text":"Thanks, and tomorrow?"}]}`),
		want: msgs(
			userText("Weather in Paris, time in Rome?"),
			canonical.Message{Role: canonical.RoleAssistant, Content: []canonical.Part{text("Checking.")}, ToolCalls: []canonical.ToolCall{
				{ID: "toolu_1", Name: "get_weather", Arguments: `{"city":"Paris","days":[1,2]}`},
				{ID: "toolu_2", Name: "get_time", Arguments: `{}`},
			}},
			canonical.Message{Role: canonical.RoleTool, ToolCallID: "toolu_2", ToolName: "get_time", Content: []canonical.Part{text("12:00")}},
			canonical.Message{Role: canonical.RoleTool, ToolCallID: "toolu_1", ToolName: "get_weather", Content: []canonical.Part{text("sunny"), text(", 20C")}},
			userText("Thanks, and tomorrow?"),
		),
	},
	{
		name: "tool result with an error, empty content, and a turn of results split over two messages",
		body: withMessages(`{"role":"user","content":"go"},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"f","input":{"x":"\u00e9"}}]},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"b","name":"g","input":{}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","is_error":true,"content":"boom"}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"b"}]},` +
			`{"role":"assistant","content":"Done."}`),
		want: msgs(
			userText("go"),
			canonical.Message{Role: canonical.RoleAssistant, ToolCalls: []canonical.ToolCall{{ID: "a", Name: "f", Arguments: `{"x":"\u00e9"}`}}},
			canonical.Message{Role: canonical.RoleAssistant, ToolCalls: []canonical.ToolCall{{ID: "b", Name: "g", Arguments: `{}`}}},
			canonical.Message{Role: canonical.RoleTool, ToolCallID: "a", ToolName: "f", IsError: true, Content: []canonical.Part{text("boom")}},
			canonical.Message{Role: canonical.RoleTool, ToolCallID: "b", ToolName: "g"},
			assistantText("Done."),
		),
	},
	{
		name: "final assistant message is a prefill",
		body: withMessages(`{"role":"user","content":"Pick A or B"},{"role":"assistant","content":"The answer is ("}`),
		want: msgs(userText("Pick A or B"), assistantText("The answer is (")),
	},
	{
		name: "an empty final assistant message asks for nothing and is left out",
		body: withMessages(`{"role":"user","content":"hi"},{"role":"assistant","content":""}`),
		want: base(),
	},
	{
		name: "an empty final assistant block list is left out too",
		body: withMessages(`{"role":"user","content":"hi"},{"role":"assistant","content":[]}`),
		want: base(),
	},
	{
		name: "tools with every field; custom type; eager streaming ignored",
		body: withField(`"tools":[{"name":"get_weather","description":"Weather now.","input_schema":{"properties":{"city":{"type":"string"}},"type":"object","required":["city"]},"strict":true,"type":"custom","cache_control":{"type":"ephemeral"},"eager_input_streaming":true},` +
			`{"name":"noop","description":null,"input_schema":{"type":"object"},"strict":null,"type":null,"defer_loading":null,"allowed_callers":null,"input_examples":null}]`),
		want: with(func(r *canonical.Request) {
			r.Tools = []canonical.Tool{
				{Name: "get_weather", Description: "Weather now.", Parameters: json.RawMessage(`{"properties":{"city":{"type":"string"}},"type":"object","required":["city"]}`), Strict: true},
				{Name: "noop", Parameters: json.RawMessage(`{"type":"object"}`)},
			}
		}),
	},
	{
		name: "tool_choice auto",
		body: withField(okTool + `,"tool_choice":{"type":"auto"}`),
		want: with(func(r *canonical.Request) {
			r.Tools, r.ToolChoice = []canonical.Tool{weatherTool}, &canonical.ToolChoice{Mode: canonical.ToolChoiceAuto}
		}),
	},
	{
		name: "tool_choice any with parallel use disabled",
		body: withField(`"tool_choice":{"disable_parallel_tool_use":true,"type":"any"},` + okTool),
		want: with(func(r *canonical.Request) {
			r.Tools, r.ToolChoice, r.ParallelToolCalls = []canonical.Tool{weatherTool}, &canonical.ToolChoice{Mode: canonical.ToolChoiceRequired}, ptr(false)
		}),
	},
	{
		name: "tool_choice tool, parallel use explicitly allowed",
		body: withField(okTool + `,"tool_choice":{"type":"tool","name":"get_weather","disable_parallel_tool_use":false}`),
		want: with(func(r *canonical.Request) {
			r.Tools, r.ToolChoice, r.ParallelToolCalls = []canonical.Tool{weatherTool}, &canonical.ToolChoice{Mode: canonical.ToolChoiceTool, Name: "get_weather"}, ptr(true)
		}),
	},
	{
		name: "tool_choice none, even without tools",
		body: withField(`"tool_choice":{"type":"none"}`),
		want: with(func(r *canonical.Request) { r.ToolChoice = &canonical.ToolChoice{Mode: canonical.ToolChoiceNone} }),
	},
	{
		name: "sampling, stop sequences, stream",
		body: withField(`"temperature":0,"top_p":0.9,"stop_sequences":["END"," \n###"],"stream":true`),
		want: with(func(r *canonical.Request) {
			r.Temperature, r.TopP, r.Stop, r.Stream, r.IncludeUsage = ptr(0.0), ptr(0.9), []string{"END", " \n###"}, true, true
		}),
	},
	{
		name: "temperature at the top of its range, stream false",
		body: withField(`"temperature":1,"top_p":1e0,"stream":false`),
		want: with(func(r *canonical.Request) { r.Temperature, r.TopP = ptr(1.0), ptr(1.0) }),
	},
	{
		name: "string escapes decode like encoding/json",
		body: `{"model":"m\/x","max_tokens":16,"messages":[{"role":"user","content":"\"q\" \\ \b\f\n\r\t \u00e9 \ud83c\udf89 \ud800 ` + "\xff" + ` é"}]}`,
		want: canonical.Request{Model: "m/x", MaxTokens: 16, Messages: []canonical.Message{userText("\"q\" \\ \b\f\n\r\t é 🎉 \ufffd \ufffd é")}},
	},
	{
		name: "duplicate keys: the last wins",
		body: `{"model":"a","model":"b","max_tokens":16,"messages":[{"role":"user","content":"1"}],"messages":[{"role":"user","content":"2"}]}`,
		want: canonical.Request{Model: "b", MaxTokens: 16, Messages: []canonical.Message{userText("2")}},
	},
}

func TestDecode(t *testing.T) {
	d := New()
	for _, tc := range decodeCases {
		t.Run(tc.name, func(t *testing.T) {
			got, p := d.Decode([]byte(tc.body), hdr())
			if p != nil {
				t.Fatalf("Decode: %v (param %q)", p, p.Param)
			}
			tc.want.AnthropicVersion = Version20230601
			if !reflect.DeepEqual(*got, tc.want) {
				t.Fatalf("Decode mismatch\n got: %s\nwant: %s", dump(got), dump(&tc.want))
			}
		})
	}
}

func dump(r *canonical.Request) string {
	b, _ := json.MarshalIndent(r, "", "  ")
	return string(b)
}

func TestHeaders(t *testing.T) {
	body := []byte(okHead + "}")
	for _, tc := range []struct {
		name  string
		h     http.Header
		param string
		msg   string
	}{
		{"nil headers", nil, "anthropic-version", "anthropic-version: header is required"},
		{"no version", http.Header{"X-Api-Key": {"k"}}, "anthropic-version", "anthropic-version: header is required"},
		{"initial release", http.Header{"Anthropic-Version": {"2023-01-01"}}, "anthropic-version", `anthropic-version: "2023-01-01" is not a valid version`},
		{"between the two", http.Header{"Anthropic-Version": {"2025-01-01"}}, "anthropic-version", `"2025-01-01" is not a valid version`},
		{"not a date", http.Header{"Anthropic-Version": {"2026-13-45"}}, "anthropic-version", `"2026-13-45" is not a valid version`},
		{"junk", http.Header{"Anthropic-Version": {"latest"}}, "anthropic-version", `"latest" is not a valid version`},
		{"version twice", http.Header{"Anthropic-Version": {Version20230601, Version20230601}}, "anthropic-version", "send one version, not 2"},
		{"too many betas", http.Header{"Anthropic-Version": {Version20230601}, "Anthropic-Beta": {strings.Repeat("b,", 40)}}, "anthropic-beta", "too many anthropic-beta flags"},
		{"a beta too long", http.Header{"Anthropic-Version": {Version20230601}, "Anthropic-Beta": {strings.Repeat("b", 200)}}, "anthropic-beta", "too long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, p := New().Decode(body, tc.h)
			if p == nil || p.Status != 400 || p.Code != "invalid_request" || p.Param != tc.param || !strings.Contains(p.Message, tc.msg) {
				t.Fatalf("got %+v, want param %q and a message containing %q", p, tc.param, tc.msg)
			}
		})
	}
	for _, tc := range []struct {
		sent, spoken string
		betas        []string
		want         []string
	}{
		{Version20230601, Version20230601, nil, nil},
		{Version20261021, Version20261021, []string{"", " , "}, nil},
		// A later dated version is spoken as the newest the gateway knows.
		{"2027-03-01", Version20261021, nil, nil},
		{Version20261021, Version20261021, []string{"prompt-caching-2024-07-31, context-1m-2025-08-07", "oauth-2025-04-20"},
			[]string{"prompt-caching-2024-07-31", "context-1m-2025-08-07"}},
	} {
		h := http.Header{"Anthropic-Version": {tc.sent}, "Anthropic-Beta": tc.betas}
		req, p := New().Decode(body, h)
		if p != nil {
			t.Fatalf("%s %q refused: %v", tc.sent, tc.betas, p)
		}
		if req.AnthropicVersion != tc.spoken || !reflect.DeepEqual(req.Betas, tc.want) {
			t.Errorf("%s %q: version %q betas %q, want %q %q", tc.sent, tc.betas, req.AnthropicVersion, req.Betas, tc.spoken, tc.want)
		}
	}
}

// 2026-10-21 removed temperature, top_p and top_k: a 400 even at their
// defaults, as Anthropic answers; 2023-06-01 takes them.
func TestSamplingByVersion(t *testing.T) {
	for _, f := range []string{`"temperature":1`, `"top_p":0.9`, `"top_k":5`} {
		_, p := New().Decode([]byte(withField(f)), hdr2026())
		name := f[1 : strings.Index(f[1:], `"`)+1]
		if p == nil || p.Param != name || !strings.Contains(p.Message, "anthropic-version 2026-10-21") {
			t.Errorf("%s under 2026-10-21: %+v, want a 400 naming %s", f, p, name)
		}
		req, p := New().Decode([]byte(withField(f)), hdr())
		if p != nil || (req.Temperature == nil && req.TopP == nil && req.TopK == nil) {
			t.Errorf("%s under 2023-06-01: %v, %+v", f, p, req)
		}
		// null is absent under both.
		nullF := f[:strings.Index(f, ":")+1] + "null"
		if _, p := New().Decode([]byte(withField(nullF)), hdr2026()); p != nil {
			t.Errorf("%s under 2026-10-21: %v", nullF, p)
		}
	}
	if _, p := New().Decode([]byte(withField(`"top_k":-1`)), hdr()); p == nil || p.Param != "top_k" {
		t.Errorf("negative top_k: %v", p)
	}
}

// A message thread is refused with the error code the SDKs' tool runners
// read, so they resend the whole conversation without one.
func TestThreadRefusedWithErrorCode(t *testing.T) {
	_, p := New().Decode([]byte(withField(`"thread":{"type":"create"}`)), hdr2026())
	if p == nil || p.Status != 400 || p.ErrorCode != "thread_unsupported_request" || p.Param != "thread" {
		t.Fatalf("got %+v", p)
	}
	b := New().AppendError(nil, p)
	if !strings.Contains(string(b), `"details":{"error_code":"thread_unsupported_request"}`) || !strings.HasPrefix(string(b), `{"type":"error","error":{"type":"invalid_request_error"`) {
		t.Errorf("error body %s", b)
	}
	if _, p := New().Decode([]byte(withField(`"thread":null`)), hdr2026()); p != nil {
		t.Errorf("thread null: %v", p)
	}
}

// The request must not alias the body: the server may reuse its buffer.
func TestDecodeDoesNotAliasBody(t *testing.T) {
	body := []byte(withMessages(`{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","source":{"type":"base64","media_type":"image/gif","data":"R0lGOD=="}}]},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{"a":1}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"r"}]}`))
	body = append(body[:len(body)-1], `,"system":"s","tools":[{"name":"f","input_schema":{"type":"object"}}],"stop_sequences":["x"]}`...)
	req, p := New().Decode(body, hdr())
	if p != nil {
		t.Fatal(p)
	}
	want := dump(req)
	for i := range body {
		body[i] = 'X'
	}
	if got := dump(req); got != want {
		t.Fatalf("request changed when the body was overwritten:\n%s", got)
	}
}

// A syntax error anywhere wins over a field error found earlier, so the
// caller fixes the JSON first, as with a parse-then-validate server.
func TestDecodeSyntaxBeforeSemantics(t *testing.T) {
	_, p := New().Decode([]byte(`{"model":"m","top_k":5,"messages":[`), hdr())
	if p == nil || p.Param != "" || !strings.HasPrefix(p.Message, "request body is not valid JSON: unexpected end of input at offset 35") {
		t.Fatalf("got %+v", p)
	}
}

func TestDecodeErrorsMatchJSONValidity(t *testing.T) {
	// Every error case that is valid JSON must be reported as a field
	// error, never as a syntax error, and vice versa.
	for _, tc := range decodeErrorCases {
		_, p := New().Decode([]byte(tc.body), hdr())
		isSyntax := strings.HasPrefix(p.Message, "request body is not valid JSON")
		if json.Valid([]byte(tc.body)) == isSyntax {
			t.Errorf("%s: json.Valid=%v but message %q", tc.name, json.Valid([]byte(tc.body)), p.Message)
		}
	}
}
