package openaichat

import (
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/json/jsonread"
)

// A minimal valid request to splice bad fields into.
const (
	okMsgs = `"messages":[{"role":"user","content":"hi"}]`
	okHead = `{"model":"m",` + okMsgs
	okTool = `"tools":[{"type":"function","function":{"name":"get_weather"}}]`
)

func withField(f string) string { return okHead + "," + f + "}" }

func withMessages(msgs string) string { return `{"model":"m","messages":[` + msgs + `]}` }

// decodeErrorCases lists every rule Decode enforces: the body, the field it
// must name (Param) and a fragment the message must contain.
var decodeErrorCases = []struct {
	name, body, param, msg string
}{
	// Not JSON, or not an object.
	{"empty body", ``, "", "not valid JSON: unexpected end of input at offset 0"},
	{"garbage", `hello`, "", "not valid JSON"},
	{"truncated", `{"model":"m"`, "", "not valid JSON: unexpected end of input"},
	{"trailing garbage", okHead + `} x`, "", "not valid JSON: invalid character after top-level value"},
	{"two objects", okHead + `}{}`, "", "not valid JSON"},
	{"trailing comma", `{"model":"m",}`, "", "not valid JSON"},
	{"single quotes", `{'model':'m'}`, "", "not valid JSON"},
	{"raw control char", "{\"model\":\"a\x01\"}", "", "not valid JSON: invalid control character"},
	{"bad escape", `{"model":"\x"}`, "", "not valid JSON: invalid escape"},
	{"bad unicode escape", `{"model":"\u12G4"}`, "", "not valid JSON: invalid \\u escape"},
	{"leading zero", `{"model":"m","n":01}`, "", "not valid JSON"},
	{"bad literal", `{"model":"m","stream":tru}`, "", "not valid JSON"},
	{"array body", `[1,2]`, "", "must be a JSON object, but got an array"},
	{"string body", `"x"`, "", "must be a JSON object"},
	{"type error before syntax error", `{"model":1,"messages":[}`, "", "not valid JSON"},
	{"too deep", `{"metadata":` + strings.Repeat("[", jsonread.MaxDepth+2) + strings.Repeat("]", jsonread.MaxDepth+2) + `}`, "", "nesting too deep"},

	// model and messages.
	{"model missing", `{` + okMsgs + `}`, "model", "Missing required parameter: 'model'"},
	{"model empty", `{"model":"",` + okMsgs + `}`, "model", "'model'"},
	{"model number", `{"model":4,` + okMsgs + `}`, "model", "Invalid type for 'model': expected a string, but got a number instead."},
	{"messages missing", `{"model":"m"}`, "messages", "Missing required parameter: 'messages'"},
	{"messages empty", `{"model":"m","messages":[]}`, "messages", "empty array"},
	{"messages object", `{"model":"m","messages":{}}`, "messages", "expected an array, but got an object"},
	{"message not object", withMessages(`"hi"`), "messages[0]", "expected an object, but got a string"},

	// Roles.
	{"role missing", withMessages(`{"content":"x"}`), "messages[0].role", "Missing required parameter"},
	{"role unknown", withMessages(`{"role":"robot","content":"x"}`), "messages[0].role", "'robot'"},
	{"role function", withMessages(`{"role":"function","name":"f","content":"x"}`), "messages[0].role", "deprecated"},
	{"role number", withMessages(`{"role":1,"content":"x"}`), "messages[0].role", "expected a string"},
	{"message unknown field", withMessages(`{"role":"user","content":"x","mood":"happy"}`), "messages[0].mood", "Unrecognized parameter"},
	{"message name number", withMessages(`{"role":"user","content":"x","name":1}`), "messages[0].name", "expected a string"},

	// Content.
	{"content wrong type", withMessages(`{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":5}`), "messages[2].content", "expected a string, an array of content parts or null, but got a number"},
	{"user content missing", withMessages(`{"role":"user"}`), "messages[0].content", "Missing required parameter"},
	{"user content null", withMessages(`{"role":"user","content":null}`), "messages[0].content", "Missing required parameter"},
	{"system content missing", withMessages(`{"role":"system"},{"role":"user","content":"x"}`), "messages[0].content", "Missing"},
	{"assistant content null without tool calls", withMessages(`{"role":"user","content":"x"},{"role":"assistant","content":null}`), "messages[1].content", "needs 'content'"},
	{"content parts empty", withMessages(`{"role":"user","content":[]}`), "messages[0].content", "empty array"},
	{"part not object", withMessages(`{"role":"user","content":["x"]}`), "messages[0].content[0]", "expected an object, but got a string"},
	{"part type missing", withMessages(`{"role":"user","content":[{"text":"x"}]}`), "messages[0].content[0].type", "Missing required parameter"},
	{"part type unknown", withMessages(`{"role":"user","content":[{"type":"video","text":"x"}]}`), "messages[0].content[0].type", "'video'"},
	{"part text missing", withMessages(`{"role":"user","content":[{"type":"text"}]}`), "messages[0].content[0].text", "Missing"},
	{"part text number", withMessages(`{"role":"user","content":[{"type":"text","text":1}]}`), "messages[0].content[0].text", "expected a string"},
	{"part unknown field", withMessages(`{"role":"user","content":[{"type":"text","text":"x","cache_control":{}}]}`), "messages[0].content[0].cache_control", "Unrecognized"},
	{"part mixed fields", withMessages(`{"role":"user","content":[{"type":"text","text":"x","image_url":{"url":"https://a/b.png"}}]}`), "messages[0].content[0].image_url", "not allowed"},
	{"input_audio part", withMessages(`{"role":"user","content":[{"type":"text","text":"x"},{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}}]}`), "messages[0].content[1].type", "'input_audio' content parts are not supported"},
	{"file part", withMessages(`{"role":"user","content":[{"type":"file","file":{"file_id":"f"}}]}`), "messages[0].content[0].type", "'file' content parts are not supported"},
	{"image in system", withMessages(`{"role":"system","content":[{"type":"image_url","image_url":{"url":"https://a/b.png"}}]},{"role":"user","content":"x"}`), "messages[0].content[0].type", "only allowed in user messages"},
	{"image in assistant", withMessages(`{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"image_url","image_url":{"url":"https://a/b.png"}}]}`), "messages[1].content[0].type", "only allowed in user messages"},
	{"refusal part in user", withMessages(`{"role":"user","content":[{"type":"refusal","refusal":"no"}]}`), "messages[0].content[0].type", "only allowed in assistant messages"},
	{"refusal part without refusal", withMessages(`{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"refusal"}]}`), "messages[1].content[0].refusal", "Missing"},

	// Images.
	{"image_url missing", withMessages(`{"role":"user","content":[{"type":"image_url"}]}`), "messages[0].content[0].image_url", "Missing"},
	{"image_url string", withMessages(`{"role":"user","content":[{"type":"image_url","image_url":"https://a/b.png"}]}`), "messages[0].content[0].image_url", "expected an object, but got a string"},
	{"image url missing", withMessages(`{"role":"user","content":[{"type":"image_url","image_url":{"detail":"low"}}]}`), "messages[0].content[0].image_url.url", "Missing"},
	{"image url scheme", withMessages(`{"role":"user","content":[{"type":"image_url","image_url":{"url":"ftp://a/b.png"}}]}`), "messages[0].content[0].image_url.url", "http(s) URL or a data URL"},
	{"image url no host", withMessages(`{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://"}}]}`), "messages[0].content[0].image_url.url", "no host"},
	{"data url not base64", withMessages(`{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png,AAAA"}}]}`), "messages[0].content[0].image_url.url", "data:image/<type>;base64"},
	{"data url not image", withMessages(`{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:text/plain;base64,AAAA"}}]}`), "messages[0].content[0].image_url.url", "data:image/<type>;base64"},
	{"data url bad payload", withMessages(`{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AA*A"}}]}`), "messages[0].content[0].image_url.url", "not valid base64"},
	{"data url empty payload", withMessages(`{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,"}}]}`), "messages[0].content[0].image_url.url", "not valid base64"},
	{"image detail unknown", withMessages(`{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://a/b.png","detail":"ultra"}}]}`), "messages[0].content[0].image_url.detail", "'ultra'"},

	// Tool loop.
	{"tool_calls not array", withMessages(`{"role":"user","content":"x"},{"role":"assistant","tool_calls":{}}`), "messages[1].tool_calls", "expected an array"},
	{"tool call id missing", withMessages(`{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]}`), "messages[1].tool_calls[0].id", "Missing"},
	{"tool call type custom", withMessages(`{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c1","type":"custom","function":{"name":"f","arguments":"{}"}}]}`), "messages[1].tool_calls[0].type", "'custom'"},
	{"tool call name missing", withMessages(`{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"arguments":"{}"}}]}`), "messages[1].tool_calls[0].function.name", "Missing"},
	{"tool call arguments object", withMessages(`{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":{}}}]}`), "messages[1].tool_calls[0].function.arguments", "expected a string, but got an object"},
	{"tool call arguments missing", withMessages(`{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f"}}]}`), "messages[1].tool_calls[0].function.arguments", "Missing"},
	{"tool call duplicate id", withMessages(`{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"c1","type":"function","function":{"name":"g","arguments":"{}"}}]}`), "messages[1].tool_calls[1].id", "duplicate"},
	{"tool_calls on user", withMessages(`{"role":"user","content":"x","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}`), "messages[0].tool_calls", "only allowed on messages with role 'assistant'"},
	{"tool without tool_call_id", withMessages(`{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","content":"r"}`), "messages[2].tool_call_id", "Missing"},
	{"tool without content", withMessages(`{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1"}`), "messages[2].content", "Missing"},
	{"tool without preceding call", withMessages(`{"role":"user","content":"x"},{"role":"tool","tool_call_id":"c1","content":"r"}`), "messages[1].role", "must be a response to a preceding message with 'tool_calls'"},
	{"tool answers unknown id", withMessages(`{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c9","content":"r"}`), "messages[2].tool_call_id", "'c9' does not match"},
	{"tool answered twice", withMessages(`{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"r"},{"role":"tool","tool_call_id":"c1","content":"r"}`), "messages[3].tool_call_id", "already has a response"},
	{"tool call left unanswered", withMessages(`{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"c2","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"r"},{"role":"user","content":"y"}`), "messages[1].tool_calls", "did not have response messages: c2"},
	{"tool call last unanswered", withMessages(`{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}`), "messages[1].tool_calls", "c1"},
	{"tool_call_id on user", withMessages(`{"role":"user","content":"x","tool_call_id":"c1"}`), "messages[0].tool_call_id", "only allowed on messages with role 'tool'"},
	{"image in tool result", withMessages(`{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":[{"type":"image_url","image_url":{"url":"https://a/b.png"}}]}`), "messages[2].content[0].type", "only allowed in user messages"},
	{"assistant function_call", withMessages(`{"role":"user","content":"x"},{"role":"assistant","function_call":{"name":"f","arguments":"{}"}}`), "messages[1].function_call", "deprecated"},
	{"assistant audio", withMessages(`{"role":"user","content":"x"},{"role":"assistant","audio":{"id":"a1"}}`), "messages[1].audio", "not supported"},
	{"refusal on user", withMessages(`{"role":"user","content":"x","refusal":"no"}`), "messages[0].refusal", "only allowed on messages with role 'assistant'"},

	// Token limits and sampling.
	{"max_tokens zero", withField(`"max_tokens":0`), "max_tokens", "Expected a value >= 1"},
	{"max_tokens negative", withField(`"max_completion_tokens":-5`), "max_completion_tokens", "Expected a value >= 1, but got -5"},
	{"max_tokens decimal", withField(`"max_completion_tokens":10.5`), "max_completion_tokens", "expected an integer, but got a decimal number"},
	{"max_tokens string", withField(`"max_tokens":"10"`), "max_tokens", "expected an integer, but got a string"},
	{"max_tokens both different", withField(`"max_tokens":10,"max_completion_tokens":20`), "max_tokens", "both given with different values"},
	{"n two", withField(`"n":2`), "n", "n>1 is not supported"},
	{"n zero", withField(`"n":0`), "n", "Expected a value >= 1"},
	{"temperature high", withField(`"temperature":2.5`), "temperature", "between 0 and 2, but got 2.5"},
	{"temperature negative", withField(`"temperature":-0.1`), "temperature", "between 0 and 2"},
	{"temperature string", withField(`"temperature":"hot"`), "temperature", "expected a number, but got a string"},
	{"top_p high", withField(`"top_p":1.01`), "top_p", "between 0 and 1"},
	{"presence_penalty range", withField(`"presence_penalty":3`), "presence_penalty", "between -2 and 2"},
	{"frequency_penalty type", withField(`"frequency_penalty":true`), "frequency_penalty", "expected a number, but got a boolean"},
	{"stop number", withField(`"stop":5`), "stop", "expected a string or an array of strings"},
	{"stop too many", withField(`"stop":["a","b","c","d","e"]`), "stop", "at most 4"},
	{"stop element number", withField(`"stop":["a",1]`), "stop[1]", "expected a string, but got a number"},
	{"stop empty string", withField(`"stop":""`), "stop", "must not be empty"},
	{"stop empty element", withField(`"stop":["a",""]`), "stop[1]", "must not be empty"},

	// Streaming.
	{"stream string", withField(`"stream":"yes"`), "stream", "expected a boolean, but got a string"},
	{"stream_options without stream", withField(`"stream_options":{"include_usage":true}`), "stream_options", "only allowed when 'stream' is enabled"},
	{"stream_options with stream false", withField(`"stream":false,"stream_options":{"include_usage":true}`), "stream_options", "only allowed when 'stream' is enabled"},
	{"stream_options unknown", withField(`"stream":true,"stream_options":{"chunk_size":3}`), "stream_options.chunk_size", "Unrecognized"},
	{"include_usage string", withField(`"stream":true,"stream_options":{"include_usage":"yes"}`), "stream_options.include_usage", "expected a boolean"},

	// Tools.
	{"tools not array", withField(`"tools":{}`), "tools", "expected an array"},
	{"tools empty", withField(`"tools":[]`), "tools", "empty array"},
	{"tool type missing", withField(`"tools":[{"function":{"name":"f"}}]`), "tools[0].type", "Missing"},
	{"tool type custom", withField(`"tools":[{"type":"custom","custom":{"name":"f"}}]`), "tools[0].type", "'custom'. Only 'function' tools"},
	{"tool type unknown", withField(`"tools":[{"type":"retrieval"}]`), "tools[0].type", "Only 'function' tools"},
	{"tool function missing", withField(`"tools":[{"type":"function"}]`), "tools[0].function", "Missing"},
	{"tool name missing", withField(`"tools":[{"type":"function","function":{"description":"d"}}]`), "tools[0].function.name", "Missing"},
	{"tool name bad", withField(`"tools":[{"type":"function","function":{"name":"get weather"}}]`), "tools[0].function.name", "^[a-zA-Z0-9_-]{1,64}$"},
	{"tool name too long", withField(`"tools":[{"type":"function","function":{"name":"` + strings.Repeat("a", 65) + `"}}]`), "tools[0].function.name", "does not match pattern"},
	{"tool name duplicate", withField(`"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}]`), "tools[1].function.name", "duplicate function name 'f'"},
	{"tool parameters array", withField(`"tools":[{"type":"function","function":{"name":"f","parameters":[]}}]`), "tools[0].function.parameters", "expected an object (a JSON Schema), but got an array"},
	{"tool strict string", withField(`"tools":[{"type":"function","function":{"name":"f","strict":"yes"}}]`), "tools[0].function.strict", "expected a boolean"},
	{"tool unknown field", withField(`"tools":[{"type":"function","function":{"name":"f","returns":{}}}]`), "tools[0].function.returns", "Unrecognized"},

	// tool_choice.
	{"tool_choice without tools", withField(`"tool_choice":"auto"`), "tool_choice", "only allowed when 'tools' are specified"},
	{"tool_choice unknown string", withField(okTool + `,"tool_choice":"any"`), "tool_choice", "'any'"},
	{"tool_choice number", withField(okTool + `,"tool_choice":1`), "tool_choice", "expected a string or an object, but got a number"},
	{"tool_choice undeclared", withField(okTool + `,"tool_choice":{"type":"function","function":{"name":"nope"}}`), "tool_choice.function.name", "no tool named 'nope'"},
	{"tool_choice type missing", withField(okTool + `,"tool_choice":{"function":{"name":"get_weather"}}`), "tool_choice.type", "Missing"},
	{"tool_choice allowed_tools", withField(okTool + `,"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[]}}`), "tool_choice.type", "'allowed_tools'"},
	{"tool_choice name missing", withField(okTool + `,"tool_choice":{"type":"function","function":{}}`), "tool_choice.function.name", "Missing"},
	{"tool_choice function missing", withField(okTool + `,"tool_choice":{"type":"function"}`), "tool_choice.function", "Missing"},
	{"parallel_tool_calls string", withField(okTool + `,"parallel_tool_calls":"no"`), "parallel_tool_calls", "expected a boolean"},

	// response_format.
	{"response_format string", withField(`"response_format":"json"`), "response_format", "expected an object, but got a string"},
	{"response_format type missing", withField(`"response_format":{}`), "response_format.type", "Missing"},
	{"response_format type unknown", withField(`"response_format":{"type":"xml"}`), "response_format.type", "'xml'"},
	{"json_schema missing", withField(`"response_format":{"type":"json_schema"}`), "response_format.json_schema", "Missing"},
	{"json_schema name missing", withField(`"response_format":{"type":"json_schema","json_schema":{"schema":{}}}`), "response_format.json_schema.name", "Missing"},
	{"json_schema name bad", withField(`"response_format":{"type":"json_schema","json_schema":{"name":"a b"}}`), "response_format.json_schema.name", "does not match pattern"},
	{"json_schema schema not object", withField(`"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":"{}"}}`), "response_format.json_schema.schema", "expected an object (a JSON Schema), but got a string"},
	{"json_schema with json_object", withField(`"response_format":{"type":"json_object","json_schema":{"name":"a"}}`), "response_format.json_schema", "only allowed when"},

	// Parameters the gateway cannot honour.
	{"logprobs", withField(`"logprobs":true`), "logprobs", "not supported"},
	{"top_logprobs", withField(`"top_logprobs":3`), "top_logprobs", "not supported"},
	{"audio", withField(`"audio":{"voice":"alloy","format":"wav"}`), "audio", "not supported"},
	{"modalities audio", withField(`"modalities":["text","audio"]`), "modalities[1]", "only the \"text\" modality"},
	{"modalities type", withField(`"modalities":"text"`), "modalities", "expected an array"},
	{"prediction", withField(`"prediction":{"type":"content","content":"x"}`), "prediction", "not supported"},
	{"logit_bias", withField(`"logit_bias":{"50256":-100}`), "logit_bias", "not supported"},
	{"functions", withField(`"functions":[{"name":"f"}]`), "functions", "use 'tools'"},
	{"function_call", withField(`"function_call":"auto"`), "function_call", "use 'tool_choice'"},
	{"web_search_options", withField(`"web_search_options":{}`), "web_search_options", "not supported"},
	{"unknown argument", withField(`"temprature":1`), "temprature", "Unrecognized request argument supplied: temprature"},

	// Ignored parameters are still type-checked.
	{"user number", withField(`"user":1`), "user", "expected a string"},
	{"metadata array", withField(`"metadata":[]`), "metadata", "expected an object"},
	{"seed decimal", withField(`"seed":1.5`), "seed", "expected an integer"},
	{"store string", withField(`"store":"yes"`), "store", "expected a boolean"},
	{"reasoning_effort number", withField(`"reasoning_effort":1`), "reasoning_effort", "expected a string"},
	{"reasoning_effort unknown", withField(`"reasoning_effort":"extreme"`), "reasoning_effort", "Supported values are: 'none'"},
}

func TestDecodeErrors(t *testing.T) {
	d := New()
	for _, tc := range decodeErrorCases {
		t.Run(tc.name, func(t *testing.T) {
			req, p := d.Decode([]byte(tc.body), nil)
			if p == nil {
				t.Fatalf("Decode accepted the body: %+v", req)
			}
			if req != nil {
				t.Errorf("Decode returned a request along with %v", p)
			}
			if p.Status != 400 || p.Code != "invalid_request" {
				t.Errorf("status/code = %d %q, want 400 invalid_request", p.Status, p.Code)
			}
			if p.Param != tc.param {
				t.Errorf("Param = %q, want %q (message %q)", p.Param, tc.param, p.Message)
			}
			if !strings.Contains(p.Message, tc.msg) {
				t.Errorf("Message = %q, want it to contain %q", p.Message, tc.msg)
			}
			if tc.param != "" && !strings.Contains(p.Message, tc.param) {
				t.Errorf("Message = %q does not name the field %q", p.Message, tc.param)
			}
			if tc.param == "" && !strings.Contains(tc.name, "body") && !strings.HasPrefix(p.Message, "request body is not valid JSON: ") {
				t.Errorf("Message = %q, want a JSON syntax error", p.Message)
			}
		})
	}
}
