package openairesponses

import (
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/json/jsonread"
)

// A minimal valid request to splice bad fields into.
const (
	okHead = `{"model":"m","input":"hi"`
	okTool = `"tools":[{"type":"function","name":"get_weather"}]`
)

func withField(f string) string { return okHead + "," + f + "}" }

func withInput(items string) string { return `{"model":"m","input":[` + items + `]}` }

// withTools declares get_weather alongside the given input items.
func withToolsInput(items string) string {
	return `{"model":"m",` + okTool + `,"input":[` + items + `]}`
}

const (
	call1 = `{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{}"}`
	out1  = `{"type":"function_call_output","call_id":"call_1","output":"sunny"}`
)

func userWith(parts string) string { return `{"role":"user","content":[` + parts + `]}` }

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
	{"trailing comma", `{"model":"m",}`, "", "not valid JSON"},
	{"raw control char", "{\"model\":\"a\x01\"}", "", "not valid JSON: invalid control character"},
	{"bad escape in captured content", withInput(`{"role":"user","content":"\x"}`), "", "not valid JSON: invalid escape"},
	{"syntax error after a semantic one", `{"model":1,"input":[}`, "", "not valid JSON"},
	{"syntax error inside captured content", withInput(`{"role":"user","content":[{"type":"input_text","text":"a"},]}`), "", "not valid JSON"},
	{"array body", `[1,2]`, "", "must be a JSON object, but got an array"},
	{"string body", `"x"`, "", "must be a JSON object"},
	{"too deep", `{"metadata":` + strings.Repeat("[", jsonread.MaxDepth+2) + strings.Repeat("]", jsonread.MaxDepth+2) + `}`, "", "nesting too deep"},

	// model and input.
	{"model missing", `{"input":"hi"}`, "model", "Missing required parameter: 'model'"},
	{"model empty", `{"model":"","input":"hi"}`, "model", "'model'"},
	{"model number", `{"model":4,"input":"hi"}`, "model", "Invalid type for 'model': expected a string, but got a number instead."},
	{"input missing", `{"model":"m"}`, "input", "Missing required parameter: 'input'"},
	{"input null", `{"model":"m","input":null}`, "input", "expected a string or an array of input items"},
	{"input empty string", `{"model":"m","input":""}`, "input", "must not be empty"},
	{"input empty array", withInput(``), "input", "empty array"},
	{"input object", `{"model":"m","input":{}}`, "input", "expected a string or an array"},
	{"item not an object", withInput(`"hi"`), "input[0]", "expected an object"},

	// Stateless: every request carries its whole conversation.
	{"store true", withField(`"store":true`), "store", "spillway does not store responses; send the whole conversation in 'input'"},
	{"store string", withField(`"store":"no"`), "store", "expected a boolean"},
	{"previous_response_id", withField(`"previous_response_id":"resp_abc"`), "previous_response_id", "spillway does not store responses"},
	{"previous_response_id number", withField(`"previous_response_id":1`), "previous_response_id", "expected a string"},
	{"conversation id", withField(`"conversation":"conv_1"`), "conversation", "spillway does not store responses"},
	{"conversation object", withField(`"conversation":{"id":"conv_1"}`), "conversation", "spillway does not store responses"},
	{"conversation number", withField(`"conversation":1`), "conversation", "expected a string or an object"},
	{"background", withField(`"background":true`), "background", "background mode is not available"},
	{"stored prompt", withField(`"prompt":{"id":"pmpt_1"}`), "prompt", "does not store prompt templates"},
	{"item_reference", withInput(`{"type":"item_reference","id":"msg_1"}`), "input[0].type", "spillway does not store responses"},

	// Unsupported features.
	{"include", withField(`"include":["reasoning.encrypted_content"]`), "include[0]", "is not supported by spillway: including 'reasoning.encrypted_content'"},
	{"include string", withField(`"include":"x"`), "include", "expected an array"},
	{"include number", withField(`"include":[1]`), "include[0]", "expected a string"},
	{"truncation auto", withField(`"truncation":"auto"`), "truncation", "never drops input items"},
	{"truncation other", withField(`"truncation":"x"`), "truncation", "Supported values are"},
	{"top_logprobs", withField(`"top_logprobs":5`), "top_logprobs", "log probabilities"},
	{"built-in tool", withField(`"tools":[{"type":"web_search","search_context_size":"low"}]`), "tools[0].type", "built-in tools"},
	{"custom tool", withField(`"tools":[{"type":"custom","name":"x"}]`), "tools[0].type", "only 'function' tools"},
	{"built-in tool choice", withField(okTool + `,"tool_choice":{"type":"web_search_preview"}`), "tool_choice.type", "built-in tools"},
	{"allowed_tools choice", withField(okTool + `,"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[]}`), "tool_choice.type", "only {\"type\": \"function\""},
	{"file_id image", withInput(userWith(`{"type":"input_image","file_id":"file_1"}`)), "input[0].content[0].file_id", "does not store files"},
	{"input_file", withInput(userWith(`{"type":"input_file","file_id":"file_1"}`)), "input[0].content[0].type", "'input_file' content parts are not supported"},
	{"input_audio", withInput(userWith(`{"type":"input_audio","input_audio":{}}`)), "input[0].content[0].type", "'input_audio' content parts are not supported"},
	{"web search call item", withInput(`{"type":"web_search_call","id":"ws_1","status":"completed"}`), "input[0].type", "built-in tool items are not supported"},
	{"item type empty", withInput(`{"type":""}`), "input[0].type", "must not be empty"},

	// Top-level parameters.
	{"unknown argument", withField(`"temprature":1`), "temprature", "Unrecognized request argument supplied: temprature"},
	{"messages is chat's", withField(`"messages":[]`), "messages", "Unrecognized request argument supplied: messages"},
	{"max_output_tokens below 16", withField(`"max_output_tokens":15`), "max_output_tokens", "Expected a value >= 16, but got 15"},
	{"max_output_tokens decimal", withField(`"max_output_tokens":16.5`), "max_output_tokens", "expected an integer"},
	{"max_output_tokens string", withField(`"max_output_tokens":"16"`), "max_output_tokens", "expected an integer"},
	{"temperature above 2", withField(`"temperature":2.5`), "temperature", "between 0 and 2"},
	{"temperature negative", withField(`"temperature":-0.1`), "temperature", "between 0 and 2"},
	{"temperature string", withField(`"temperature":"1"`), "temperature", "expected a number"},
	{"temperature overflow", withField(`"temperature":1e999`), "temperature", "number out of range"},
	{"top_p above 1", withField(`"top_p":1.5`), "top_p", "between 0 and 1"},
	{"stream string", withField(`"stream":"true"`), "stream", "expected a boolean"},
	{"stream_options without stream", withField(`"stream_options":{"include_obfuscation":false}`), "stream_options", "only allowed when 'stream' is enabled"},
	{"stream_options unknown", withField(`"stream":true,"stream_options":{"include_usage":true}`), "stream_options.include_usage", "Unrecognized parameter"},
	{"parallel_tool_calls string", withField(`"parallel_tool_calls":"yes"`), "parallel_tool_calls", "expected a boolean"},
	{"instructions number", withField(`"instructions":1`), "instructions", "expected a string"},
	{"max_tool_calls zero", withField(`"max_tool_calls":0`), "max_tool_calls", ">= 1"},
	{"reasoning effort", withField(`"reasoning":{"effort":"extreme"}`), "reasoning.effort", "Supported values are"},
	{"reasoning unknown", withField(`"reasoning":{"budget":1}`), "reasoning.budget", "Unrecognized parameter"},
	{"reasoning string", withField(`"reasoning":"high"`), "reasoning", "expected an object"},

	// Ignored parameters are still type-checked.
	{"user number", withField(`"user":1`), "user", "expected a string"},
	{"metadata array", withField(`"metadata":[]`), "metadata", "expected an object"},
	{"service_tier number", withField(`"service_tier":1`), "service_tier", "expected a string"},
	{"prompt_cache_key number", withField(`"prompt_cache_key":1`), "prompt_cache_key", "expected a string"},

	// text.format.
	{"text string", withField(`"text":"json"`), "text", "expected an object"},
	{"text unknown", withField(`"text":{"fromat":{}}`), "text.fromat", "Unrecognized parameter"},
	{"format type missing", withField(`"text":{"format":{}}`), "text.format.type", "Missing required parameter"},
	{"format type unknown", withField(`"text":{"format":{"type":"xml"}}`), "text.format.type", "'xml'"},
	{"format schema name missing", withField(`"text":{"format":{"type":"json_schema","schema":{}}}`), "text.format.name", "Missing required parameter"},
	{"format schema name invalid", withField(`"text":{"format":{"type":"json_schema","name":"a b","schema":{}}}`), "text.format.name", "does not match pattern"},
	{"format schema missing", withField(`"text":{"format":{"type":"json_schema","name":"a"}}`), "text.format.schema", "Missing required parameter"},
	{"format schema not object", withField(`"text":{"format":{"type":"json_schema","name":"a","schema":[]}}`), "text.format.schema", "expected an object (a JSON Schema)"},
	{"format text with schema", withField(`"text":{"format":{"type":"text","schema":{}}}`), "text.format.schema", "only allowed when 'text.format.type' is 'json_schema'"},
	{"format nested chat shape", withField(`"text":{"format":{"type":"json_schema","json_schema":{"name":"a"}}}`), "text.format.json_schema", "Unrecognized parameter"},
	{"verbosity", withField(`"text":{"verbosity":"loud"}`), "text.verbosity", "Supported values are"},

	// tools.
	{"tools object", withField(`"tools":{}`), "tools", "expected an array"},
	{"tool type missing", withField(`"tools":[{"name":"f"}]`), "tools[0].type", "Missing required parameter"},
	{"tool name missing", withField(`"tools":[{"type":"function"}]`), "tools[0].name", "Missing required parameter"},
	{"tool name invalid", withField(`"tools":[{"type":"function","name":"get weather"}]`), "tools[0].name", "does not match pattern"},
	{"tool name too long", withField(`"tools":[{"type":"function","name":"` + strings.Repeat("a", 65) + `"}]`), "tools[0].name", "does not match pattern"},
	{"tool duplicate", withField(`"tools":[{"type":"function","name":"f"},{"type":"function","name":"f"}]`), "tools[1].name", "duplicate function name 'f'"},
	{"tool chat shape", withField(`"tools":[{"type":"function","function":{"name":"f"}}]`), "tools[0].function", "Unrecognized parameter"},
	{"tool parameters array", withField(`"tools":[{"type":"function","name":"f","parameters":[]}]`), "tools[0].parameters", "expected an object (a JSON Schema)"},
	{"tool strict string", withField(`"tools":[{"type":"function","name":"f","strict":"yes"}]`), "tools[0].strict", "expected a boolean"},
	{"tool description number", withField(`"tools":[{"type":"function","name":"f","description":1}]`), "tools[0].description", "expected a string"},

	// tool_choice.
	{"tool_choice unknown string", withField(okTool + `,"tool_choice":"any"`), "tool_choice", "'any'"},
	{"tool_choice number", withField(okTool + `,"tool_choice":1`), "tool_choice", "expected a string or an object"},
	{"tool_choice required without tools", withField(`"tool_choice":"required"`), "tool_choice", "needs 'tools'"},
	{"tool_choice named without tools", withField(`"tool_choice":{"type":"function","name":"f"}`), "tool_choice", "needs 'tools'"},
	{"tool_choice undeclared", withField(okTool + `,"tool_choice":{"type":"function","name":"get_time"}`), "tool_choice.name", "no function named 'get_time'"},
	{"tool_choice name missing", withField(okTool + `,"tool_choice":{"type":"function"}`), "tool_choice.name", "Missing required parameter"},
	{"tool_choice type missing", withField(okTool + `,"tool_choice":{"name":"get_weather"}`), "tool_choice.type", "Missing required parameter"},
	{"tool_choice chat shape", withField(okTool + `,"tool_choice":{"type":"function","function":{"name":"get_weather"}}`), "tool_choice.function", "Unrecognized parameter"},

	// Message items.
	{"role missing", withInput(`{"content":"hi"}`), "input[0].role", "Missing required parameter"},
	{"role unknown", withInput(`{"role":"tool","content":"hi"}`), "input[0].role", "'tool'"},
	{"content missing", withInput(`{"role":"user"}`), "input[0].content", "Missing required parameter"},
	{"content null", withInput(`{"role":"user","content":null}`), "input[0].content", "expected a string or an array of content parts"},
	{"content empty array", withInput(`{"role":"user","content":[]}`), "input[0].content", "empty array"},
	{"message unknown member", withInput(`{"role":"user","content":"hi","name":"bob"}`), "input[0].name", "not allowed on an input item of type 'message'"},
	{"message stray member", withInput(`{"role":"user","content":"hi","foo":1}`), "input[0].foo", "Unrecognized parameter"},
	{"message bad status", withInput(`{"role":"assistant","content":"hi","status":"done"}`), "input[0].status", "Supported values are"},
	{"message bad phase", withInput(`{"role":"assistant","content":"hi","phase":"draft"}`), "input[0].phase", "Supported values are"},
	{"part not object", withInput(userWith(`"hi"`)), "input[0].content[0]", "expected an object"},
	{"part type missing", withInput(userWith(`{"text":"hi"}`)), "input[0].content[0].type", "Missing required parameter"},
	{"part type unknown", withInput(userWith(`{"type":"text","text":"hi"}`)), "input[0].content[0].type", "'text'"},
	{"part text missing", withInput(userWith(`{"type":"input_text"}`)), "input[0].content[0].text", "Missing required parameter"},
	{"part text number", withInput(userWith(`{"type":"input_text","text":1}`)), "input[0].content[0].text", "expected a string"},
	{"part stray member", withInput(userWith(`{"type":"input_text","text":"a","foo":1}`)), "input[0].content[0].foo", "Unrecognized parameter"},
	{"part member of another type", withInput(userWith(`{"type":"input_text","text":"a","image_url":"https://x"}`)), "input[0].content[0].image_url", "not allowed on a content part of type 'input_text'"},
	{"output_text from user", withInput(userWith(`{"type":"output_text","text":"a"}`)), "input[0].content[0].type", "only allowed in assistant messages"},
	{"refusal from system", withInput(`{"role":"system","content":[{"type":"refusal","refusal":"no"}]}`), "input[0].content[0].type", "only allowed in assistant messages"},
	{"image from assistant", withInput(`{"role":"assistant","content":[{"type":"input_image","image_url":"https://x.com/a.png"}]}`), "input[0].content[0].type", "only allowed in user messages"},
	{"image from developer", withInput(`{"role":"developer","content":[{"type":"input_image","image_url":"https://x.com/a.png"}]}`), "input[0].content[0].type", "only allowed in user messages"},
	{"refusal missing", withInput(`{"role":"assistant","content":[{"type":"refusal"}]}`), "input[0].content[0].refusal", "Missing required parameter"},
	{"image url missing", withInput(userWith(`{"type":"input_image","detail":"auto"}`)), "input[0].content[0].image_url", "Missing required parameter"},
	{"image bad scheme", withInput(userWith(`{"type":"input_image","image_url":"ftp://x/a.png"}`)), "input[0].content[0].image_url", "http(s) URL or a data URL"},
	{"image no host", withInput(userWith(`{"type":"input_image","image_url":"https://"}`)), "input[0].content[0].image_url", "no host"},
	{"image data not image", withInput(userWith(`{"type":"input_image","image_url":"data:text/plain;base64,aGk="}`)), "input[0].content[0].image_url", "data:image/<type>;base64"},
	{"image data bad base64", withInput(userWith(`{"type":"input_image","image_url":"data:image/png;base64,@@@@"}`)), "input[0].content[0].image_url", "not valid base64"},
	{"image detail", withInput(userWith(`{"type":"input_image","image_url":"https://x.com/a.png","detail":"max"}`)), "input[0].content[0].detail", "Supported values are"},

	// Function calls and their outputs.
	{"call_id missing", withToolsInput(`{"type":"function_call","name":"get_weather","arguments":"{}"}`), "input[0].call_id", "Missing required parameter"},
	{"call_id empty", withToolsInput(`{"type":"function_call","call_id":"","name":"get_weather","arguments":"{}"}`), "input[0].call_id", "must not be empty"},
	{"call name missing", withToolsInput(`{"type":"function_call","call_id":"c","arguments":"{}"}`), "input[0].name", "Missing required parameter"},
	{"call arguments missing", withToolsInput(`{"type":"function_call","call_id":"c","name":"f"}`), "input[0].arguments", "Missing required parameter"},
	{"call arguments object", withToolsInput(`{"type":"function_call","call_id":"c","name":"f","arguments":{}}`), "input[0].arguments", "expected a string"},
	{"call with role", withToolsInput(`{"type":"function_call","role":"assistant","call_id":"c","name":"f","arguments":"{}"}`), "input[0].role", "not allowed on an input item of type 'function_call'"},
	{"call without output", withToolsInput(call1), "input[0]", "No tool output found for function call call_1"},
	{"call without output before user", withToolsInput(call1 + `,{"role":"user","content":"and?"}`), "input[0]", "No tool output found for function call call_1"},
	{"second call unanswered", withToolsInput(call1 + `,{"type":"function_call","call_id":"call_2","name":"f","arguments":"{}"},` + out1), "input[1]", "No tool output found for function call call_2"},
	{"new call before old answered", withToolsInput(call1 + `,{"type":"function_call","call_id":"call_2","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"call_2","output":"x"},{"type":"function_call","call_id":"call_3","name":"f","arguments":"{}"}`), "input[0]", "No tool output found for function call call_1"},
	{"duplicate call id", withToolsInput(call1 + `,` + call1), "input[1].call_id", "duplicate function call id 'call_1'"},
	{"output without call", withToolsInput(out1), "input[0].call_id", "No tool call found for function call output with call_id call_1"},
	{"output for other call", withToolsInput(call1 + `,{"type":"function_call_output","call_id":"call_9","output":"x"}`), "input[1].call_id", "No tool call found"},
	{"output twice", withToolsInput(call1 + `,` + out1 + `,` + out1), "input[2].call_id", "already has an output"},
	{"output for an earlier turn", withToolsInput(call1 + `,` + out1 + `,{"role":"user","content":"ok"},` + out1), "input[3].call_id", "No tool call found"},
	{"output twice in one turn", withToolsInput(call1 + `,{"type":"function_call","call_id":"call_2","name":"f","arguments":"{}"},` + out1 + `,` + out1), "input[3].call_id", "already has an output"},
	{"output missing", withToolsInput(call1 + `,{"type":"function_call_output","call_id":"call_1"}`), "input[1].output", "Missing required parameter"},
	{"output call_id missing", withToolsInput(call1 + `,{"type":"function_call_output","output":"x"}`), "input[1].call_id", "Missing required parameter"},
	{"output number", withToolsInput(call1 + `,{"type":"function_call_output","call_id":"call_1","output":1}`), "input[1].output", "expected a string or an array"},
	{"output refusal part", withToolsInput(call1 + `,{"type":"function_call_output","call_id":"call_1","output":[{"type":"refusal","refusal":"x"}]}`), "input[1].output[0].type", "'input_text' and 'input_image'"},
	{"output file part", withToolsInput(call1 + `,{"type":"function_call_output","call_id":"call_1","output":[{"type":"input_file","file_id":"f"}]}`), "input[1].output[0].type", "not supported"},
	{"output empty parts", withToolsInput(call1 + `,{"type":"function_call_output","call_id":"call_1","output":[]}`), "input[1].output", "empty array"},

	// Reasoning items (dropped, but checked).
	{"reasoning without summary", withInput(`{"type":"reasoning","id":"rs_1"},{"role":"user","content":"hi"}`), "input[0].summary", "Missing required parameter"},
	{"reasoning without id", withInput(`{"type":"reasoning","summary":[]},{"role":"user","content":"hi"}`), "input[0].id", "Missing required parameter"},
	{"reasoning summary string", withInput(`{"type":"reasoning","id":"rs_1","summary":"x"}`), "input[0].summary", "expected an array"},
	{"reasoning with role", withInput(`{"type":"reasoning","id":"rs_1","summary":[],"role":"assistant"}`), "input[0].role", "not allowed on an input item of type 'reasoning'"},
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
