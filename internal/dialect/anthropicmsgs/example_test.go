package anthropicmsgs_test

import (
	"fmt"
	"net/http"
	"os"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/dialect/anthropicmsgs"
)

// A tool round trip in Anthropic's shape becomes canonical turns: the
// tool_result block is a tool message that knows its tool's name, and the
// text after it a user message of its own.
func ExampleDialect_Decode() {
	body := []byte(`{"model":"claude-sonnet-4-5","max_tokens":256,"system":"Be brief.","messages":[
		{"role":"user","content":"Weather in Paris?"},
		{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city": "Paris"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"sunny"},{"type":"text","text":"And tomorrow?"}]}],
		"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}]}`)
	h := http.Header{"Anthropic-Version": {anthropicmsgs.Version20261021}}
	req, p := anthropicmsgs.New().Decode(body, h)
	if p != nil {
		fmt.Println(p.Message)
		return
	}
	for _, m := range req.Messages {
		fmt.Printf("%-9s %q", m.Role, m.Text())
		for _, tc := range m.ToolCalls {
			fmt.Printf(" calls %s %s(%s)", tc.ID, tc.Name, tc.Arguments)
		}
		if m.Role == canonical.RoleTool {
			fmt.Printf(" answers %s %s", m.ToolCallID, m.ToolName)
		}
		fmt.Println()
	}

	_, p = anthropicmsgs.New().Decode([]byte(`{"model":"m","max_tokens":1,"top_k":5,"messages":[{"role":"user","content":"hi"}]}`), h)
	fmt.Println(p.Param, "->", p.Message)
	// Output:
	// user      "Weather in Paris?"
	// assistant "" calls toolu_1 get_weather({"city":"Paris"})
	// tool      "sunny" answers toolu_1 get_weather
	// user      "And tomorrow?"
	// top_k -> top_k: top_k is not accepted with anthropic-version 2026-10-21, which removed temperature, top_p and top_k; leave it out (the model samples with its defaults), or send anthropic-version 2023-06-01
}

// A streamed answer: the engine calls Start at commit, Event per semantic
// event, then Finish (or Interrupt when the provider broke mid-stream).
func ExampleDialect_NewEncoder() {
	enc := anthropicmsgs.New().NewEncoder(dialect.Meta{ID: "msg_01", Model: "claude-sonnet-4-5"}, &canonical.Request{Stream: true})
	out := enc.Start(nil)
	out = enc.Event(out, &canonical.Event{Kind: canonical.EventTextDelta, Text: "Hi"})
	out = enc.Finish(out, canonical.StopEnd, "", canonical.Usage{InputTokens: 12, OutputTokens: 1})
	os.Stdout.Write(out)
	// Output:
	// event: message_start
	// data: {"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"stop_details":null,"container":null,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}}
	//
	// event: content_block_start
	// data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":"","citations":null}}
	//
	// event: content_block_delta
	// data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}
	//
	// event: content_block_stop
	// data: {"type":"content_block_stop","index":0}
	//
	// event: message_delta
	// data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null,"stop_details":null},"usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}
	//
	// event: message_stop
	// data: {"type":"message_stop"}
}
