package openaichat

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/canonical"
)

func ptr[T any](v T) *T { return &v }

func userText(s string) canonical.Message {
	return canonical.Message{Role: canonical.RoleUser, Content: []canonical.Part{canonical.TextPart(s)}}
}

var decodeCases = []struct {
	name string
	body string
	want canonical.Request
}{
	{
		name: "minimal",
		body: `{"model":"gpt-4o","messages":[{"role":"user","content":"Hello"}]}`,
		want: canonical.Request{Model: "gpt-4o", Messages: []canonical.Message{userText("Hello")}},
	},
	{
		name: "whitespace and nulls for every optional field",
		body: " \n\t{ \"model\" : \"m\" , \"messages\" : [ { \"role\" : \"user\" , \"content\" : \"x\" , \"name\" : null } ] ," +
			`"temperature":null,"top_p":null,"n":null,"stop":null,"max_tokens":null,"max_completion_tokens":null,` +
			`"stream":null,"stream_options":null,"tools":null,"tool_choice":null,"parallel_tool_calls":null,` +
			`"response_format":null,"logprobs":null,"top_logprobs":null,"logit_bias":null,"audio":null,"modalities":null,` +
			`"prediction":null,"functions":null,"function_call":null,"web_search_options":null,"user":null,"seed":null,` +
			`"metadata":null,"store":null,"service_tier":null,"presence_penalty":null,"frequency_penalty":null} ` + "\r\n",
		want: canonical.Request{Model: "m", Messages: []canonical.Message{userText("x")}},
	},
	{
		name: "harmless parameters are accepted and ignored",
		body: withField(`"user":"u1","safety_identifier":"h","metadata":{"a":"b"},"store":true,"service_tier":"auto","seed":42,` +
			`"prompt_cache_key":"k","prompt_cache_retention":"24h","verbosity":"low","presence_penalty":0.5,` +
			`"frequency_penalty":-1,"logprobs":false,"top_logprobs":0,"logit_bias":{},"modalities":["text"],"n":1`),
		want: canonical.Request{Model: "m", Messages: []canonical.Message{userText("hi")}},
	},
	{
		name: "reasoning effort asks for reasoning at that effort",
		body: withField(`"reasoning_effort":"high"`),
		want: canonical.Request{Model: "m", Messages: []canonical.Message{userText("hi")},
			Reasoning: &canonical.Reasoning{Mode: canonical.ReasoningAdaptive, Effort: "high"}},
	},
	{
		name: "reasoning effort none turns reasoning off",
		body: withField(`"reasoning_effort":"none"`),
		want: canonical.Request{Model: "m", Messages: []canonical.Message{userText("hi")},
			Reasoning: &canonical.Reasoning{Mode: canonical.ReasoningOff}},
	},
	{
		name: "system and developer messages join the system prompt",
		body: withMessages(`{"role":"system","content":"Be brief."},` +
			`{"role":"developer","content":[{"type":"text","text":"Use "},{"type":"text","text":"French."}]},` +
			`{"role":"user","content":"Bonjour"},` +
			`{"role":"system","content":"Never lie."}`),
		want: canonical.Request{Model: "m", System: "Be brief.\n\nUse French.\n\nNever lie.", Messages: []canonical.Message{userText("Bonjour")}},
	},
	{
		name: "images by URL and inline",
		body: withMessages(`{"role":"user","content":[{"type":"text","text":"Compare"},` +
			`{"type":"image_url","image_url":{"url":"https://example.com/a.png","detail":"high"}},` +
			`{"type":"image_url","image_url":{"url":"data:Image/PNG;base64,iVBORw0KGgo="}}]}`),
		want: canonical.Request{Model: "m", Messages: []canonical.Message{{Role: canonical.RoleUser, Content: []canonical.Part{
			canonical.TextPart("Compare"),
			{Type: canonical.PartImage, ImageURL: "https://example.com/a.png"},
			{Type: canonical.PartImage, MediaType: "image/png", Data: "iVBORw0KGgo="},
		}}}},
	},
	{
		name: "tool loop with parallel calls answered out of order",
		body: withMessages(`{"role":"user","content":"Weather in Paris and Rome?"},` +
			`{"role":"assistant","content":null,"tool_calls":[` +
			`{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},` +
			`{"id":"call_2","type":"function","function":{"name":"get_time","arguments":""}}]},` +
			`{"role":"tool","tool_call_id":"call_2","content":"12:00"},` +
			`{"role":"tool","tool_call_id":"call_1","content":[{"type":"text","text":"sunny"}]},` +
			`{"role":"assistant","content":"Sunny, noon."},` +
			`{"role":"user","content":"Thanks"}`),
		want: canonical.Request{Model: "m", Messages: []canonical.Message{
			userText("Weather in Paris and Rome?"),
			{Role: canonical.RoleAssistant, ToolCalls: []canonical.ToolCall{
				{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`},
				{ID: "call_2", Name: "get_time", Arguments: "{}"},
			}},
			{Role: canonical.RoleTool, ToolCallID: "call_2", ToolName: "get_time", Content: []canonical.Part{canonical.TextPart("12:00")}},
			{Role: canonical.RoleTool, ToolCallID: "call_1", ToolName: "get_weather", Content: []canonical.Part{canonical.TextPart("sunny")}},
			{Role: canonical.RoleAssistant, Content: []canonical.Part{canonical.TextPart("Sunny, noon.")}},
			userText("Thanks"),
		}},
	},
	{
		name: "assistant refusals in history become text",
		body: withMessages(`{"role":"user","content":"x"},` +
			`{"role":"assistant","content":[{"type":"text","text":"Well, "},{"type":"refusal","refusal":"no."}]},` +
			`{"role":"user","content":"y"},{"role":"assistant","content":null,"refusal":"Still no."},{"role":"user","content":"z"}`),
		want: canonical.Request{Model: "m", Messages: []canonical.Message{
			userText("x"),
			{Role: canonical.RoleAssistant, Content: []canonical.Part{canonical.TextPart("Well, "), canonical.TextPart("no.")}},
			userText("y"),
			{Role: canonical.RoleAssistant, Content: []canonical.Part{canonical.TextPart("Still no.")}},
			userText("z"),
		}},
	},
	{
		name: "tools with every field",
		body: withField(`"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather now.",` +
			`"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"strict":true}},` +
			`{"type":"function","function":{"name":"noop","description":null,"parameters":null,"strict":null}}],"parallel_tool_calls":false`),
		want: canonical.Request{Model: "m", Messages: []canonical.Message{userText("hi")},
			Tools: []canonical.Tool{
				{Name: "get_weather", Description: "Weather now.", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`), Strict: true},
				{Name: "noop"},
			},
			ParallelToolCalls: ptr(false)},
	},
	{
		name: "tool_choice none",
		body: withField(okTool + `,"tool_choice":"none"`),
		want: canonical.Request{Model: "m", Messages: []canonical.Message{userText("hi")}, Tools: []canonical.Tool{{Name: "get_weather"}}, ToolChoice: &canonical.ToolChoice{Mode: canonical.ToolChoiceNone}},
	},
	{
		name: "tool_choice auto",
		body: withField(`"tool_choice":"auto",` + okTool),
		want: canonical.Request{Model: "m", Messages: []canonical.Message{userText("hi")}, Tools: []canonical.Tool{{Name: "get_weather"}}, ToolChoice: &canonical.ToolChoice{Mode: canonical.ToolChoiceAuto}},
	},
	{
		name: "tool_choice required",
		body: withField(okTool + `,"tool_choice":"required"`),
		want: canonical.Request{Model: "m", Messages: []canonical.Message{userText("hi")}, Tools: []canonical.Tool{{Name: "get_weather"}}, ToolChoice: &canonical.ToolChoice{Mode: canonical.ToolChoiceRequired}},
	},
	{
		name: "tool_choice names a function declared later",
		body: withField(`"tool_choice":{"function":{"name":"get_weather"},"type":"function"},` + okTool),
		want: canonical.Request{Model: "m", Messages: []canonical.Message{userText("hi")}, Tools: []canonical.Tool{{Name: "get_weather"}}, ToolChoice: &canonical.ToolChoice{Mode: canonical.ToolChoiceTool, Name: "get_weather"}},
	},
	{
		name: "response_format text is the default",
		body: withField(`"response_format":{"type":"text"}`),
		want: canonical.Request{Model: "m", Messages: []canonical.Message{userText("hi")}},
	},
	{
		name: "response_format json_object",
		body: withField(`"response_format":{"type":"json_object"}`),
		want: canonical.Request{Model: "m", Messages: []canonical.Message{userText("hi")}, ResponseFormat: &canonical.ResponseFormat{Type: canonical.FormatJSONObject}},
	},
	{
		name: "response_format json_schema",
		body: withField(`"response_format":{"type":"json_schema","json_schema":{"name":"person","description":"A person.","schema":{"type":"object","properties":{"name":{"type":"string"}}},"strict":true}}`),
		want: canonical.Request{Model: "m", Messages: []canonical.Message{userText("hi")}, ResponseFormat: &canonical.ResponseFormat{
			Type: canonical.FormatJSONSchema, Name: "person", Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`), Strict: true}},
	},
	{
		name: "max_completion_tokens",
		body: withField(`"max_completion_tokens":256`),
		want: canonical.Request{Model: "m", Messages: []canonical.Message{userText("hi")}, MaxTokens: 256},
	},
	{
		name: "deprecated max_tokens",
		body: withField(`"max_tokens":100`),
		want: canonical.Request{Model: "m", Messages: []canonical.Message{userText("hi")}, MaxTokens: 100},
	},
	{
		name: "both token limits, equal",
		body: withField(`"max_tokens":64,"max_completion_tokens":64`),
		want: canonical.Request{Model: "m", Messages: []canonical.Message{userText("hi")}, MaxTokens: 64},
	},
	{
		name: "sampling and stop string",
		body: withField(`"temperature":0,"top_p":0.9,"stop":"END"`),
		want: canonical.Request{Model: "m", Messages: []canonical.Message{userText("hi")}, Temperature: ptr(0.0), TopP: ptr(0.9), Stop: []string{"END"}},
	},
	{
		name: "stop array",
		body: withField(`"temperature":2,"top_p":1,"stop":["a","b","c","d"]`),
		want: canonical.Request{Model: "m", Messages: []canonical.Message{userText("hi")}, Temperature: ptr(2.0), TopP: ptr(1.0), Stop: []string{"a", "b", "c", "d"}},
	},
	{
		name: "stream without usage",
		body: withField(`"stream":true`),
		want: canonical.Request{Model: "m", Messages: []canonical.Message{userText("hi")}, Stream: true},
	},
	{
		name: "stream with include_usage",
		body: withField(`"stream_options":{"include_usage":true,"include_obfuscation":false},"stream":true`),
		want: canonical.Request{Model: "m", Messages: []canonical.Message{userText("hi")}, Stream: true, IncludeUsage: true},
	},
	{
		name: "stream_options with usage off",
		body: withField(`"stream":true,"stream_options":{"include_usage":false}`),
		want: canonical.Request{Model: "m", Messages: []canonical.Message{userText("hi")}, Stream: true},
	},
	{
		name: "string escapes decode like encoding/json",
		body: `{"model":"m\/x","messages":[{"role":"user","content":"\"q\" \\ \b\f\n\r\t \u00e9 \ud83c\udf89 \ud800 ` + "\xff" + ` é"}]}`,
		want: canonical.Request{Model: "m/x", Messages: []canonical.Message{userText("\"q\" \\ \b\f\n\r\t é 🎉 \ufffd \ufffd é")}},
	},
	{
		name: "duplicate keys: the last wins",
		body: `{"model":"a","model":"b","messages":[{"role":"user","content":"1"}],"messages":[{"role":"user","content":"2"}]}`,
		want: canonical.Request{Model: "b", Messages: []canonical.Message{userText("2")}},
	},
}

func TestDecode(t *testing.T) {
	d := New()
	for _, tc := range decodeCases {
		t.Run(tc.name, func(t *testing.T) {
			got, p := d.Decode([]byte(tc.body), nil)
			if p != nil {
				t.Fatalf("Decode: %v (param %q)", p, p.Param)
			}
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

// The request must not alias the body: the server may reuse its buffer.
func TestDecodeDoesNotAliasBody(t *testing.T) {
	body := []byte(withField(`"tools":[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object"}}}],` +
		`"response_format":{"type":"json_schema","json_schema":{"name":"s","schema":{"type":"object"}}}`))
	req, p := New().Decode(body, nil)
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
	_, p := New().Decode([]byte(`{"model":"m","n":5,"messages":[`), nil)
	if p == nil || p.Param != "" || !strings.HasPrefix(p.Message, "request body is not valid JSON: unexpected end of input at offset 31") {
		t.Fatalf("got %+v", p)
	}
}

func TestDecodeNoSideEffectsOnValidBodies(t *testing.T) {
	// Every error case that is valid JSON must be reported as a field
	// error, never as a syntax error, and vice versa.
	for _, tc := range decodeErrorCases {
		_, p := New().Decode([]byte(tc.body), nil)
		isSyntax := strings.HasPrefix(p.Message, "request body is not valid JSON")
		if json.Valid([]byte(tc.body)) == isSyntax {
			t.Errorf("%s: json.Valid=%v but message %q", tc.name, json.Valid([]byte(tc.body)), p.Message)
		}
	}
}
