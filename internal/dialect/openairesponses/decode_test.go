package openairesponses

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/canonical"
)

func userText(s string) canonical.Message {
	return canonical.Message{Role: canonical.RoleUser, Content: []canonical.Part{canonical.TextPart(s)}}
}

func assistantText(s string, calls ...canonical.ToolCall) canonical.Message {
	return canonical.Message{Role: canonical.RoleAssistant, Content: []canonical.Part{canonical.TextPart(s)}, ToolCalls: calls}
}

func toolResult(id, name, text string) canonical.Message {
	return canonical.Message{Role: canonical.RoleTool, ToolCallID: id, ToolName: name, Content: []canonical.Part{canonical.TextPart(text)}}
}

var decodeCases = []struct {
	name string
	body string
	want canonical.Request
}{
	{
		name: "string input",
		body: `{"model":"gpt-4.1","input":"Hello"}`,
		want: canonical.Request{Model: "gpt-4.1", Messages: []canonical.Message{userText("Hello")}},
	},
	{
		name: "whitespace and nulls for every optional field",
		body: " \n\t{ \"model\" : \"m\" , \"input\" : [ { \"role\" : \"user\" , \"content\" : \"x\" , \"id\" : null , \"status\" : null } ] ," +
			`"instructions":null,"max_output_tokens":null,"temperature":null,"top_p":null,"stream":null,"stream_options":null,` +
			`"tools":null,"tool_choice":null,"parallel_tool_calls":null,"text":null,"store":null,"previous_response_id":null,` +
			`"conversation":null,"background":null,"prompt":null,"include":null,"user":null,"safety_identifier":null,` +
			`"prompt_cache_key":null,"prompt_cache_retention":null,"service_tier":null,"metadata":null,"truncation":null,` +
			`"max_tool_calls":null,"reasoning":null,"top_logprobs":null} ` + "\r\n",
		want: canonical.Request{Model: "m", Messages: []canonical.Message{userText("x")}},
	},
	{
		name: "harmless parameters are accepted and ignored",
		body: withField(`"store":false,"background":false,"include":[],"user":"u1","safety_identifier":"h","metadata":{"a":"b"},` +
			`"service_tier":"auto","prompt_cache_key":"k","prompt_cache_retention":"24h","truncation":"disabled","max_tool_calls":3,` +
			`"top_logprobs":0,"previous_response_id":null,"text":{"verbosity":"low"}`),
		want: canonical.Request{Model: "m", Messages: []canonical.Message{userText("hi")}},
	},
	{
		name: "reasoning at an effort, with its summary shown",
		body: withField(`"reasoning":{"effort":"high","summary":"auto"}`),
		want: canonical.Request{Model: "m", Messages: []canonical.Message{userText("hi")},
			Reasoning: &canonical.Reasoning{Mode: canonical.ReasoningAdaptive, Effort: "high", Show: true}},
	},
	{
		name: "reasoning effort none turns it off",
		body: withField(`"reasoning":{"effort":"none"}`),
		want: canonical.Request{Model: "m", Messages: []canonical.Message{userText("hi")},
			Reasoning: &canonical.Reasoning{Mode: canonical.ReasoningOff}},
	},
	{
		name: "reasoning items spillway handed out join the assistant turn after them; others are dropped",
		body: withInput(`{"role":"user","content":"Hi"},` +
			`{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Think"},{"type":"summary_text","text":"ing."}],"encrypted_content":"spw:claude:c2ln"},` +
			`{"type":"reasoning","id":"rs_2","summary":[],"encrypted_content":"spw:claude/redacted:ZW5j"},` +
			`{"type":"reasoning","id":"rs_3","summary":[],"encrypted_content":"gAAAAB-from-elsewhere"},` +
			`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hello."}]},` +
			`{"role":"user","content":"Again"}`),
		want: canonical.Request{Model: "m", Messages: []canonical.Message{
			userText("Hi"),
			{Role: canonical.RoleAssistant, Content: []canonical.Part{
				{Type: canonical.PartThinking, Text: "Thinking.", Signature: "c2ln", Family: canonical.FamilyClaude},
				{Type: canonical.PartRedactedThinking, Data: "ZW5j", Family: canonical.FamilyClaude},
				canonical.TextPart("Hello.")}},
			userText("Again")}},
	},
	{
		name: "sampling, limits and streaming",
		body: withField(`"max_output_tokens":16,"temperature":0,"top_p":1,"stream":true,"stream_options":{"include_obfuscation":false},"parallel_tool_calls":false`),
		want: canonical.Request{Model: "m", Messages: []canonical.Message{userText("hi")}, MaxTokens: 16, Temperature: new(0.0), TopP: new(1.0),
			Stream: true, IncludeUsage: true, ParallelToolCalls: new(false)},
	},
	{
		name: "instructions then system and developer messages, in order",
		body: `{"model":"m","instructions":"Be brief.","input":[` +
			`{"role":"system","content":"Never lie."},` +
			`{"role":"user","content":"Bonjour"},` +
			`{"type":"message","role":"developer","content":[{"type":"input_text","text":"Use "},{"type":"input_text","text":"French."}]}]}`,
		want: canonical.Request{Model: "m", System: "Be brief.\n\nNever lie.\n\nUse French.", Messages: []canonical.Message{userText("Bonjour")}},
	},
	{
		name: "system messages without instructions",
		body: withInput(`{"role":"developer","content":"Dev."},{"role":"user","content":"x"}`),
		want: canonical.Request{Model: "m", System: "Dev.", Messages: []canonical.Message{userText("x")}},
	},
	{
		name: "user parts: text, images by URL and data URL",
		body: withInput(userWith(`{"type":"input_text","text":"What is this?","prompt_cache_breakpoint":{"mode":"explicit"}},` +
			`{"type":"input_image","image_url":"https://example.com/a.png","detail":"high"},` +
			`{"detail":"original","image_url":"DATA:Image/PNG;base64,iVBORw0KGgo=","type":"input_image","file_id":null}`)),
		want: canonical.Request{Model: "m", Messages: []canonical.Message{{Role: canonical.RoleUser, Content: []canonical.Part{
			canonical.TextPart("What is this?"),
			{Type: canonical.PartImage, ImageURL: "https://example.com/a.png"},
			{Type: canonical.PartImage, MediaType: "image/png", Data: "iVBORw0KGgo="},
		}}}},
	},
	{
		name: "assistant history: output_text with annotations, refusal, phase",
		body: withInput(`{"role":"user","content":"a"},` +
			`{"id":"msg_1","type":"message","status":"completed","phase":"final_answer","role":"assistant","content":[` +
			`{"type":"output_text","text":"b","annotations":[{"type":"url_citation"}],"logprobs":[]},{"type":"refusal","refusal":" no"}]},` +
			`{"role":"assistant","content":"c"},{"role":"user","content":"d"}`),
		want: canonical.Request{Model: "m", Messages: []canonical.Message{
			userText("a"),
			{Role: canonical.RoleAssistant, Content: []canonical.Part{canonical.TextPart("b"), canonical.TextPart(" no")}},
			assistantText("c"), userText("d"),
		}},
	},
	{
		name: "a message item and the function calls after it are one assistant turn",
		body: withToolsInput(`{"role":"user","content":"Weather?"},` +
			`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Checking."}]},` +
			`{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA"},` +
			`{"arguments":"{\"city\":\"Paris\"}","call_id":"call_1","name":"get_weather","type":"function_call","id":"fc_1","status":"completed"},` +
			`{"type":"function_call","call_id":"call_2","name":"get_weather","arguments":""},` +
			`{"type":"function_call_output","call_id":"call_2","output":"rain"},` +
			`{"output":[{"type":"input_text","text":"sun"},{"type":"input_image","image_url":"https://x.com/map.png"}],"call_id":"call_1","type":"function_call_output","id":"fco_1","status":"completed"},` +
			`{"role":"user","content":"Thanks"}`),
		want: canonical.Request{Model: "m", Tools: []canonical.Tool{{Name: "get_weather"}}, Messages: []canonical.Message{
			userText("Weather?"),
			assistantText("Checking.",
				canonical.ToolCall{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`},
				canonical.ToolCall{ID: "call_2", Name: "get_weather", Arguments: `{}`}),
			toolResult("call_2", "get_weather", "rain"),
			{Role: canonical.RoleTool, ToolCallID: "call_1", ToolName: "get_weather", Content: []canonical.Part{
				canonical.TextPart("sun"), {Type: canonical.PartImage, ImageURL: "https://x.com/map.png"}}},
			userText("Thanks"),
		}},
	},
	{
		name: "calls after results start a new assistant turn; a system message does not break a turn",
		body: withInput(`{"role":"user","content":"go"},` + call1 + `,{"role":"system","content":"S"},` + out1 +
			`,{"type":"function_call","call_id":"call_2","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"call_2","output":"ok"}`),
		want: canonical.Request{Model: "m", System: "S", Messages: []canonical.Message{
			userText("go"),
			{Role: canonical.RoleAssistant, ToolCalls: []canonical.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: "{}"}}},
			toolResult("call_1", "get_weather", "sunny"),
			{Role: canonical.RoleAssistant, ToolCalls: []canonical.ToolCall{{ID: "call_2", Name: "f", Arguments: "{}"}}},
			toolResult("call_2", "f", "ok"),
		}},
	},
	{
		name: "reasoning items are dropped",
		body: withInput(`{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"thinking"}],"content":[{"type":"reasoning_text","text":"x"}],"status":"completed"},{"role":"user","content":"x"}`),
		want: canonical.Request{Model: "m", Messages: []canonical.Message{userText("x")}},
	},
	{
		name: "flat function tools, named tool choice",
		body: withField(`"tools":[{"type":"function","name":"get_weather","description":"Weather.","parameters":{"type":"object","properties":{}},"strict":true},` +
			`{"name":"get_time","parameters":null,"strict":null,"description":null,"type":"function"}],"tool_choice":{"name":"get_time","type":"function"}`),
		want: canonical.Request{Model: "m", Messages: []canonical.Message{userText("hi")},
			Tools: []canonical.Tool{
				{Name: "get_weather", Description: "Weather.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`), Strict: true},
				{Name: "get_time"},
			},
			ToolChoice: &canonical.ToolChoice{Mode: canonical.ToolChoiceTool, Name: "get_time"}},
	},
	{
		name: "tool choice modes",
		body: withField(okTool + `,"tool_choice":"required"`),
		want: canonical.Request{Model: "m", Messages: []canonical.Message{userText("hi")}, Tools: []canonical.Tool{{Name: "get_weather"}},
			ToolChoice: &canonical.ToolChoice{Mode: canonical.ToolChoiceRequired}},
	},
	{
		name: "auto or none without tools is dropped",
		body: withField(`"tool_choice":"none","tools":[]`),
		want: canonical.Request{Model: "m", Messages: []canonical.Message{userText("hi")}},
	},
	{
		name: "json_schema format",
		body: withField(`"text":{"format":{"type":"json_schema","name":"answer","description":"d","schema":{"type":"object"},"strict":true}}`),
		want: canonical.Request{Model: "m", Messages: []canonical.Message{userText("hi")},
			ResponseFormat: &canonical.ResponseFormat{Type: canonical.FormatJSONSchema, Name: "answer", Schema: json.RawMessage(`{"type":"object"}`), Strict: true}},
	},
	{
		name: "json_object format",
		body: withField(`"text":{"format":{"type":"json_object"}}`),
		want: canonical.Request{Model: "m", Messages: []canonical.Message{userText("hi")}, ResponseFormat: &canonical.ResponseFormat{Type: canonical.FormatJSONObject}},
	},
	{
		name: "text format is the default",
		body: withField(`"text":{"format":{"type":"text"}}`),
		want: canonical.Request{Model: "m", Messages: []canonical.Message{userText("hi")}},
	},
	{
		name: "escapes and duplicate keys (the last wins)",
		body: `{"model":"a","model":"m\u00e9","input":"caf\u00e9 \"q\" \ud83c\udf89"}`,
		want: canonical.Request{Model: "mé", Messages: []canonical.Message{userText("café \"q\" 🎉")}},
	},
}

func TestDecode(t *testing.T) {
	d := New()
	for _, tc := range decodeCases {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte(tc.body)
			got, p := d.Decode(body, nil)
			if p != nil {
				t.Fatalf("Decode: %v (param %q)", p, p.Param)
			}
			// The request must not alias the caller's buffer.
			for i := range body {
				body[i] = 'X'
			}
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("got  %s\nwant %s", dump(got), dump(&tc.want))
			}
		})
	}
}

func dump(r *canonical.Request) string {
	b, _ := json.Marshal(r)
	return string(b)
}

// Large bodies decode as well as small ones (no fixed-size buffers).
func TestDecodeLargeInput(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"model":"m","input":[`)
	for i := range 500 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"role":"user","content":"` + strings.Repeat("x", 100) + `"},{"role":"assistant","content":"y"}`)
	}
	b.WriteString(`]}`)
	req, p := New().Decode([]byte(b.String()), nil)
	if p != nil || len(req.Messages) != 1000 {
		t.Fatalf("got %d messages, %v", len(req.Messages), p)
	}
}
