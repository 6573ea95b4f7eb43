package anthropicmsgs

import (
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/json/jsonread"
)

// user wraps content blocks in one user message.
func user(blocks string) string { return `{"role":"user","content":[` + blocks + `]}` }

// toolTurn is an assistant turn calling tool "f" with id "t1".
const toolTurn = `{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]}`

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
	{"bad literal", withField(`"stream":tru`), "", "not valid JSON"},
	{"array body", `[1,2]`, "", "must be a JSON object, but got an array"},
	{"type error before syntax error", `{"model":1,"messages":[}`, "", "not valid JSON"},
	{"too deep", withField(`"metadata":{"user_id":` + strings.Repeat("[", jsonread.MaxDepth+2) + strings.Repeat("]", jsonread.MaxDepth+2) + `}`), "", "nesting too deep"},

	// Required fields.
	{"model missing", `{"max_tokens":1,` + okMsgs + `}`, "model", "model: Field required"},
	{"model empty", `{"model":"","max_tokens":1,` + okMsgs + `}`, "model", "model: String should have at least 1 character"},
	{"model number", `{"model":4,"max_tokens":1,` + okMsgs + `}`, "model", "model: Input should be a valid string"},
	{"max_tokens missing", `{"model":"m",` + okMsgs + `}`, "max_tokens", "max_tokens: Field required"},
	{"max_tokens zero", `{"model":"m","max_tokens":0,` + okMsgs + `}`, "max_tokens", "max_tokens 0 only warms Anthropic's prompt cache"},
	{"max_tokens negative", `{"model":"m","max_tokens":-3,` + okMsgs + `}`, "max_tokens", "greater than or equal to 1"},
	{"max_tokens decimal", `{"model":"m","max_tokens":1.5,` + okMsgs + `}`, "max_tokens", "valid integer, got a number with a fractional part"},
	{"max_tokens string", `{"model":"m","max_tokens":"5",` + okMsgs + `}`, "max_tokens", "max_tokens: Input should be a valid integer"},
	{"max_tokens null", `{"model":"m","max_tokens":null,` + okMsgs + `}`, "max_tokens", "valid integer"},
	{"messages missing", `{"model":"m","max_tokens":1}`, "messages", "messages: Field required"},
	{"messages empty", `{"model":"m","max_tokens":1,"messages":[]}`, "messages", "messages: at least one message is required"},
	{"only an empty prefill", `{"model":"m","max_tokens":1,"messages":[{"role":"assistant","content":""}]}`, "messages", "at least one message with content is required"},
	{"messages object", `{"model":"m","max_tokens":1,"messages":{}}`, "messages", "Input should be a valid list"},

	// Unknown and unsupported top-level fields.
	{"unknown field", withField(`"temprature":0.5`), "temprature", "temprature: Extra inputs are not permitted"},
	{"openai field", withField(`"response_format":{"type":"json_object"}`), "response_format", "Extra inputs are not permitted"},
	{"thinking budget at max_tokens", withField(`"thinking":{"type":"enabled","budget_tokens":2048}`), "max_tokens", "must be greater than `thinking.budget_tokens`"},
	{"thinking budget under 1024", `{"model":"m","max_tokens":4096,` + okMsgs + `,"thinking":{"type":"enabled","budget_tokens":1000}}`, "thinking.budget_tokens", "greater than or equal to 1024"},
	{"thinking enabled without a budget", withField(`"thinking":{"type":"enabled"}`), "thinking.budget_tokens", "Field required"},
	{"thinking display unknown", withField(`"thinking":{"type":"adaptive","display":"loud"}`), "thinking.display", "'summarized' or 'omitted'"},
	{"thinking between tools", withField(`"thinking":{"type":"between_tools"}`), "thinking.type", "not supported by this gateway"},
	{"thinking unknown type", withField(`"thinking":{"type":"maybe"}`), "thinking.type", "Input tag 'maybe'"},
	{"thinking without type", withField(`"thinking":{}`), "thinking.type", "Field required"},
	{"thinking disabled with a budget", withField(`"thinking":{"type":"disabled","budget_tokens":1}`), "thinking.budget_tokens", "Extra inputs"},
	{"thinking not an object", withField(`"thinking":true`), "thinking", "valid dictionary"},
	{"output_config effort unknown", withField(`"output_config":{"effort":"huge"}`), "output_config.effort", "Input should be 'low'"},
	{"output_config format not a schema", withField(`"output_config":{"format":{"type":"text"}}`), "output_config.format.type", "Input should be 'json_schema'"},
	{"output_config format without a schema", withField(`"output_config":{"format":{"type":"json_schema"}}`), "output_config.format.schema", "Field required"},
	{"output_config unknown member", withField(`"output_config":{"verbosity":"low"}`), "output_config.verbosity", "Extra inputs"},
	{"inference_geo", withField(`"inference_geo":"us"`), "inference_geo", "gateway's routes"},
	{"container", withField(`"container":"c_1"`), "container", "server-side tools"},
	{"mcp_servers", withField(`"mcp_servers":[]`), "mcp_servers", "server-side tools"},
	{"context_management", withField(`"context_management":{}`), "context_management", "not supported"},
	{"diagnostics", withField(`"diagnostics":{"previous_message_id":"msg_1"}`), "diagnostics", "not supported"},
	{"speed fast", withField(`"speed":"fast"`), "speed", "fast mode"},
	{"speed unknown", withField(`"speed":"warp"`), "speed", "Input should be 'standard' or 'fast'"},
	{"service_tier unknown", withField(`"service_tier":"priority"`), "service_tier", "Input should be 'auto' or 'standard_only'"},
	{"metadata extra key", withField(`"metadata":{"user_id":"u","team":"a"}`), "metadata.team", "Extra inputs are not permitted"},
	{"metadata user_id number", withField(`"metadata":{"user_id":7}`), "metadata.user_id", "valid string"},
	{"metadata not an object", withField(`"metadata":"x"`), "metadata", "valid dictionary"},
	{"cache_control bad type", withField(`"cache_control":{"type":"persistent"}`), "cache_control.type", "Input should be 'ephemeral'"},
	{"cache_control bad ttl", withField(`"cache_control":{"type":"ephemeral","ttl":"2h"}`), "cache_control.ttl", "'5m' or '1h'"},
	{"cache_control without type", withField(`"cache_control":{}`), "cache_control.type", "Field required"},
	{"cache_control extra", withField(`"cache_control":{"type":"ephemeral","scope":"org"}`), "cache_control.scope", "Extra inputs"},

	// Sampling and stop sequences.
	{"temperature above 1", withField(`"temperature":1.5`), "temperature", "temperature: range: 0..1"},
	{"temperature negative", withField(`"temperature":-1`), "temperature", "range: 0..1"},
	{"temperature string", withField(`"temperature":"hot"`), "temperature", "valid number"},
	{"temperature overflows", withField(`"temperature":1e400`), "temperature", "range: 0..1"},
	{"top_p above 1", withField(`"top_p":1.01`), "top_p", "top_p: range: 0..1"},
	{"stream string", withField(`"stream":"yes"`), "stream", "valid boolean"},
	{"stop_sequences string", withField(`"stop_sequences":"END"`), "stop_sequences", "valid list"},
	{"stop_sequence number", withField(`"stop_sequences":["a",1]`), "stop_sequences.1", "valid string"},
	{"stop_sequence blank", withField(`"stop_sequences":["a"," \n"]`), "stop_sequences.1", "must contain non-whitespace"},

	// System.
	{"system number", withField(`"system":1`), "system", "valid string or a valid list"},
	{"system image block", withField(`"system":[{"type":"image","source":{"type":"url","url":"https://x/y.png"}}]`), "system.0.type", "Input should be 'text'"},
	{"system block empty text", withField(`"system":[{"type":"text","text":""}]`), "system.0.text", "text content blocks must be non-empty"},
	{"system block without type", withField(`"system":[{"text":"x"}]`), "system.0.type", "Field required"},
	{"system block extra", withField(`"system":[{"type":"text","text":"x","role":"system"}]`), "system.0.role", "Extra inputs"},
	{"system block citations", withField(`"system":[{"type":"text","text":"x","citations":[{"type":"char_location"}]}]`), "system.0.citations", "not supported"},

	// Messages and roles.
	{"message not object", withMessages(`"hi"`), "messages.0", "valid dictionary"},
	{"role missing", withMessages(`{"content":"x"}`), "messages.0.role", "Field required"},
	{"role system", withMessages(`{"role":"system","content":"x"}`), "messages.0.role", "Input should be 'user' or 'assistant'"},
	{"role tool", withMessages(`{"role":"user","content":"x"},{"role":"tool","content":"x"}`), "messages.1.role", "'user' or 'assistant'"},
	{"content missing", withMessages(`{"role":"user"}`), "messages.0.content", "Field required"},
	{"content null", withMessages(`{"role":"user","content":null}`), "messages.0.content", "valid string or a valid list"},
	{"content number", withMessages(`{"role":"user","content":5}`), "messages.0.content", "valid string or a valid list"},
	{"message extra field", withMessages(`{"role":"user","content":"x","name":"bob"}`), "messages.0.name", "Extra inputs are not permitted"},
	{"user content empty string", withMessages(`{"role":"user","content":""}`), "messages.0", "all messages must have non-empty content except for the optional final assistant message"},
	{"user content empty list", withMessages(`{"role":"user","content":[]}`), "messages.0", "non-empty content"},
	{"empty assistant before the end", withMessages(`{"role":"user","content":"a"},{"role":"assistant","content":""},{"role":"user","content":"b"}`), "messages.1", "non-empty content"},
	{"prefill ends in whitespace", withMessages(`{"role":"user","content":"a"},{"role":"assistant","content":"So: "}`), "messages", "final assistant content cannot end with trailing whitespace"},
	{"prefill block ends in a newline", withMessages(`{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"text","text":"So:\n"}]}`), "messages", "trailing whitespace"},

	// Content blocks.
	{"block not object", withMessages(user(`"x"`)), "messages.0.content.0", "valid dictionary"},
	{"block type missing", withMessages(user(`{"text":"x"}`)), "messages.0.content.0.type", "Field required"},
	{"block type unknown", withMessages(user(`{"type":"video","text":"x"}`)), "messages.0.content.0.type", "Input tag 'video' found using 'type' does not match any of the expected tags"},
	{"block type number", withMessages(user(`{"type":1}`)), "messages.0.content.0.type", "valid string"},
	{"text block without text", withMessages(user(`{"type":"text"}`)), "messages.0.content.0.text", "Field required"},
	{"text block empty", withMessages(user(`{"type":"text","text":""}`)), "messages.0.content.0.text", "text content blocks must be non-empty"},
	{"text block with source", withMessages(user(`{"type":"text","text":"x","source":{"type":"url","url":"https://a/b"}}`)), "messages.0.content.0.source", "Extra inputs"},
	{"text block unknown member", withMessages(user(`{"type":"text","text":"x","lang":"en"}`)), "messages.0.content.0.lang", "Extra inputs"},
	{"text block citations", withMessages(user(`{"type":"text","text":"x","citations":[{"type":"page_location"}]}`)), "messages.0.content.0.citations", "not supported"},
	{"text block cache_control bad", withMessages(user(`{"type":"text","text":"x","cache_control":{"type":"x"}}`)), "messages.0.content.0.cache_control.type", "'ephemeral'"},
	{"document block", withMessages(user(`{"type":"document","source":{"type":"text","media_type":"text/plain","data":"x"}}`)), "messages.0.content.0", "'document' blocks are not available through every provider"},
	{"document block whose members fit no supported block", withMessages(user(`{"source":"s","citations":{"enabled":true},"type":"document"}`)), "messages.0.content.0", "'document' blocks"},
	{"text block text number, type last", withMessages(user(`{"text":5,"type":"text"}`)), "messages.0.content.0.text", "valid string"},
	{"misfit member in a block of unknown type", withMessages(user(`{"source":1,"type":"audio"}`)), "messages.0.content.0.type", "Input tag 'audio'"},
	{"misfit member in a block without type", withMessages(user(`{"source":1}`)), "messages.0.content.0.type", "Field required"},
	{"search_result block", withMessages(user(`{"type":"search_result","source":"s","title":"t","content":[]}`)), "messages.0.content.0", "not supported"},
	{"thinking block without its signature", withMessages(`{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"b"}]},{"role":"user","content":"c"}`), "messages.1.content.0.signature", "Field required"},
	{"thinking block in a user turn", withMessages(`{"role":"user","content":[{"type":"thinking","thinking":"hmm","signature":"s"}]}`), "messages.0.content.0.type", "assistant"},
	{"redacted thinking block without data", withMessages(`{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"redacted_thinking"}]}`), "messages.1.content.0.data", "Field required"},
	{"server tool use block", withMessages(`{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"server_tool_use","id":"s","name":"web_search","input":{}}]}`), "messages.1.content.0", "server-side tools"},

	// Images.
	{"image without source", withMessages(user(`{"type":"image"}`)), "messages.0.content.0.source", "Field required"},
	{"image source not object", withMessages(user(`{"type":"image","source":"https://a/b.png"}`)), "messages.0.content.0.source", "valid dictionary"},
	{"image source without type", withMessages(user(`{"type":"image","source":{"url":"https://a/b.png"}}`)), "messages.0.content.0.source.type", "Field required"},
	{"image source unknown type", withMessages(user(`{"type":"image","source":{"type":"ftp","url":"ftp://a"}}`)), "messages.0.content.0.source.type", "Input tag 'ftp'"},
	{"image base64 bad media type", withMessages(user(`{"type":"image","source":{"type":"base64","media_type":"image/bmp","data":"AAAA"}}`)), "messages.0.content.0.source.media_type", "'image/jpeg', 'image/png', 'image/gif' or 'image/webp'"},
	{"image base64 without data", withMessages(user(`{"type":"image","source":{"type":"base64","media_type":"image/png"}}`)), "messages.0.content.0.source.data", "Field required"},
	{"image base64 without media type", withMessages(user(`{"type":"image","source":{"type":"base64","data":"AAAA"}}`)), "messages.0.content.0.source.media_type", "Field required"},
	{"image base64 bad data", withMessages(user(`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"not base64!"}}`)), "messages.0.content.0.source.data", "valid base64"},
	{"image base64 with url", withMessages(user(`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA","url":"https://a/b"}}`)), "messages.0.content.0.source.url", "Extra inputs"},
	{"image url without url", withMessages(user(`{"type":"image","source":{"type":"url"}}`)), "messages.0.content.0.source.url", "Field required"},
	{"image url not http", withMessages(user(`{"type":"image","source":{"type":"url","url":"file:///etc/passwd"}}`)), "messages.0.content.0.source.url", "http(s) URL"},
	{"image url without host", withMessages(user(`{"type":"image","source":{"type":"url","url":"https://"}}`)), "messages.0.content.0.source.url", "http(s) URL"},
	{"image url extra", withMessages(user(`{"type":"image","source":{"type":"url","url":"https://a/b","detail":"low"}}`)), "messages.0.content.0.source.detail", "Extra inputs"},
	{"image file", withMessages(user(`{"type":"image","source":{"type":"file","file_id":"file_1"}}`)), "messages.0.content.0.source", "Files API"},
	{"image transformations", withMessages(user(`{"type":"image","source":{"type":"url","url":"https://a/b"},"transformations":{"crop":1}}`)), "messages.0.content.0.transformations", "not supported"},
	{"image in assistant turn", withMessages(`{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"image","source":{"type":"url","url":"https://a/b"}}]}`), "messages.1.content.0.type", "image blocks are only allowed in user messages"},

	// Tool use and results.
	{"tool_use in user turn", withMessages(user(`{"type":"tool_use","id":"t","name":"f","input":{}}`)), "messages.0.content.0.type", "tool_use blocks are only allowed in assistant messages"},
	{"tool_use without id", withMessages(`{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","name":"f","input":{}}]}`), "messages.1.content.0.id", "Field required"},
	{"tool_use empty id", withMessages(`{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"","name":"f","input":{}}]}`), "messages.1.content.0.id", "at least 1 character"},
	{"tool_use without name", withMessages(`{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"t","input":{}}]}`), "messages.1.content.0.name", "Field required"},
	{"tool_use without input", withMessages(`{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f"}]}`), "messages.1.content.0.input", "Field required"},
	{"tool_use input a string", withMessages(`{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":"{}"}]}`), "messages.1.content.0.input", "valid dictionary"},
	{"tool_use called by code execution", withMessages(`{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{},"caller":{"type":"code_execution_20250825","tool_id":"srvtoolu_1"}}]}`), "messages.1.content.0.caller", "not supported"},
	{"tool_use with text", withMessages(`{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{},"text":"x"}]}`), "messages.1.content.0.text", "Extra inputs"},
	{"tool_use ids repeat", withMessages(`{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}},{"type":"tool_use","id":"t","name":"g","input":{}}]}`), "messages.1.content.1.id", "must be unique"},
	{"tool_use without result", withMessages(toolTurn + `,{"role":"user","content":"what now?"}`), "messages.1", "`tool_use` ids were found without `tool_result` blocks immediately after: t1"},
	{"tool_use last", withMessages(toolTurn), "messages.1", "without `tool_result` blocks"},
	{"tool_use answered two turns late", withMessages(toolTurn + `,{"role":"user","content":"wait"},{"role":"assistant","content":"ok"},` + user(`{"type":"tool_result","tool_use_id":"t1"}`)), "messages.1", "without `tool_result`"},
	{"one of two calls unanswered", withMessages(`{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"f","input":{}},{"type":"tool_use","id":"b","name":"f","input":{}}]},` + user(`{"type":"tool_result","tool_use_id":"b"}`)), "messages.1", "immediately after: a."},
	{"tool_result without a call", withMessages(user(`{"type":"tool_result","tool_use_id":"t9","content":"x"}`)), "messages.0.content.0.tool_use_id", "unexpected `tool_use_id` found in `tool_result` blocks: t9"},
	{"tool_result for an unknown id", withMessages(toolTurn + `,` + user(`{"type":"tool_result","tool_use_id":"t2"}`)), "messages.2.content.0.tool_use_id", "unexpected `tool_use_id`"},
	{"tool_result twice", withMessages(toolTurn + `,` + user(`{"type":"tool_result","tool_use_id":"t1"},{"type":"tool_result","tool_use_id":"t1"}`)), "messages.2.content.1.tool_use_id", "already has a `tool_result` block"},
	{"tool_result after text", withMessages(toolTurn + `,` + user(`{"type":"text","text":"here:"},{"type":"tool_result","tool_use_id":"t1"}`)), "messages.2.content.1", "`tool_result` blocks must come first"},
	{"tool_result after text in the same turn", withMessages(toolTurn + `,{"role":"user","content":"here:"},` + user(`{"type":"tool_result","tool_use_id":"t1"}`)), "messages.3.content.0", "must come first"},
	{"tool_result in assistant turn", withMessages(`{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_result","tool_use_id":"t"}]}`), "messages.1.content.0.type", "tool_result blocks are only allowed in user messages"},
	{"tool_result without id", withMessages(toolTurn + `,` + user(`{"type":"tool_result","content":"x"}`)), "messages.2.content.0.tool_use_id", "Field required"},
	{"tool_result content number", withMessages(toolTurn + `,` + user(`{"type":"tool_result","tool_use_id":"t1","content":1}`)), "messages.2.content.0.content", "valid string or a valid list"},
	{"tool_result image", withMessages(toolTurn + `,` + user(`{"type":"tool_result","tool_use_id":"t1","content":[{"type":"image","source":{"type":"url","url":"https://a/b"}}]}`)), "messages.2.content.0.content.0", "images in tool results"},
	{"tool_result document", withMessages(toolTurn + `,` + user(`{"type":"tool_result","tool_use_id":"t1","content":[{"type":"document","source":{}}]}`)), "messages.2.content.0.content.0", "'document' blocks"},
	{"tool_result tool_reference", withMessages(toolTurn + `,` + user(`{"type":"tool_result","tool_use_id":"t1","content":[{"type":"tool_reference","tool_name":"f"}]}`)), "messages.2.content.0.content.0", "tool search"},
	{"tool_result nested tool_result", withMessages(toolTurn + `,` + user(`{"type":"tool_result","tool_use_id":"t1","content":[{"type":"tool_result","tool_use_id":"t1","content":[]}]}`)), "messages.2.content.0.content.0.type", "Input tag 'tool_result'"},
	{"tool_result empty text block", withMessages(toolTurn + `,` + user(`{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":""}]}`)), "messages.2.content.0.content.0.text", "non-empty"},
	{"tool_result is_error string", withMessages(toolTurn + `,` + user(`{"type":"tool_result","tool_use_id":"t1","is_error":"yes"}`)), "messages.2.content.0.is_error", "valid boolean"},
	{"tool_result with text member", withMessages(toolTurn + `,` + user(`{"type":"tool_result","tool_use_id":"t1","text":"x"}`)), "messages.2.content.0.text", "Extra inputs"},
	{"tool_result toolset_name", withMessages(toolTurn + `,` + user(`{"type":"tool_result","tool_use_id":"t1","toolset_name":"x"}`)), "messages.2.content.0.toolset_name", "not supported"},

	// Tools.
	{"tools not a list", withField(`"tools":{}`), "tools", "valid list"},
	{"tool not an object", withField(`"tools":["f"]`), "tools.0", "valid dictionary"},
	{"tool without name", withField(`"tools":[{"input_schema":{"type":"object"}}]`), "tools.0.name", "Field required"},
	{"tool name with a space", withField(`"tools":[{"name":"get weather","input_schema":{"type":"object"}}]`), "tools.0.name", "String should match pattern '^[a-zA-Z0-9_-]{1,64}$'"},
	{"tool name too long", withField(`"tools":[{"name":"` + strings.Repeat("a", 65) + `","input_schema":{"type":"object"}}]`), "tools.0.name", "should match pattern"},
	{"tool without schema", withField(`"tools":[{"name":"f"}]`), "tools.0.input_schema", "Field required"},
	{"tool schema not an object", withField(`"tools":[{"name":"f","input_schema":"object"}]`), "tools.0.input_schema", "valid dictionary"},
	{"tool schema without type", withField(`"tools":[{"name":"f","input_schema":{"properties":{}}}]`), "tools.0.input_schema.type", "Field required"},
	{"tool schema type array", withField(`"tools":[{"name":"f","input_schema":{"type":"array"}}]`), "tools.0.input_schema.type", "Input should be 'object'"},
	{"tool schema type list", withField(`"tools":[{"name":"f","input_schema":{"type":["object"]}}]`), "tools.0.input_schema.type", "Input should be 'object'"},
	{"tool names repeat", withField(`"tools":[{"name":"f","input_schema":{"type":"object"}},{"name":"f","input_schema":{"type":"object"}}]`), "tools", "Tool names must be unique."},
	{"tool extra member", withField(`"tools":[{"name":"f","input_schema":{"type":"object"},"parameters":{}}]`), "tools.0.parameters", "Extra inputs"},
	{"openai-style tool", withField(`"tools":[{"type":"function","function":{"name":"f"}}]`), "tools.0", "server tools such as 'function'"},
	{"server tool", withField(`"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":5}]`), "tools.0", "server tools such as 'web_search_20250305' run at Anthropic"},
	{"tool defer_loading", withField(`"tools":[{"name":"f","input_schema":{"type":"object"},"defer_loading":true}]`), "tools.0.defer_loading", "not supported"},
	{"tool input_examples", withField(`"tools":[{"name":"f","input_schema":{"type":"object"},"input_examples":[{}]}]`), "tools.0.input_examples", "not supported"},
	{"tool strict string", withField(`"tools":[{"name":"f","input_schema":{"type":"object"},"strict":"yes"}]`), "tools.0.strict", "valid boolean"},

	// tool_choice.
	{"tool_choice string", withField(okTool + `,"tool_choice":"auto"`), "tool_choice", "valid dictionary"},
	{"tool_choice without type", withField(okTool + `,"tool_choice":{}`), "tool_choice.type", "Field required"},
	{"tool_choice unknown type", withField(okTool + `,"tool_choice":{"type":"required"}`), "tool_choice.type", "Input tag 'required'"},
	{"tool_choice tool without name", withField(okTool + `,"tool_choice":{"type":"tool"}`), "tool_choice.name", "Field required"},
	{"tool_choice tool undeclared", withField(okTool + `,"tool_choice":{"type":"tool","name":"get_time"}`), "tool_choice.name", "no tool named 'get_time'"},
	{"tool_choice auto with name", withField(okTool + `,"tool_choice":{"type":"auto","name":"get_weather"}`), "tool_choice.name", "Extra inputs"},
	{"tool_choice none with parallel flag", withField(okTool + `,"tool_choice":{"type":"none","disable_parallel_tool_use":true}`), "tool_choice.disable_parallel_tool_use", "Extra inputs"},
	{"tool_choice extra", withField(okTool + `,"tool_choice":{"type":"auto","function":{}}`), "tool_choice.function", "Extra inputs"},
	{"tool_choice any without tools", withField(`"tool_choice":{"type":"any"}`), "tool_choice", "may only be specified while providing tools"},
	{"tool_choice flag not bool", withField(okTool + `,"tool_choice":{"type":"auto","disable_parallel_tool_use":1}`), "tool_choice.disable_parallel_tool_use", "valid boolean"},
}

func TestDecodeErrors(t *testing.T) {
	d := New()
	for _, tc := range decodeErrorCases {
		t.Run(tc.name, func(t *testing.T) {
			req, p := d.Decode([]byte(tc.body), hdr())
			if p == nil {
				t.Fatalf("Decode accepted it: %s", dump(req))
			}
			if p.Status != 400 || p.Code != "invalid_request" {
				t.Errorf("status %d code %q, want 400 invalid_request", p.Status, p.Code)
			}
			if p.Param != tc.param {
				t.Errorf("param %q, want %q (message %q)", p.Param, tc.param, p.Message)
			}
			if !strings.Contains(p.Message, tc.msg) {
				t.Errorf("message %q lacks %q", p.Message, tc.msg)
			}
			if tc.param != "" && !strings.HasPrefix(p.Message, tc.param+": ") {
				t.Errorf("message %q does not start with its field's path, as Anthropic's do", p.Message)
			}
		})
	}
}
