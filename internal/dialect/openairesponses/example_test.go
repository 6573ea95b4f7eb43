package openairesponses_test

import (
	"fmt"
	"strings"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/dialect/openairesponses"
)

// A stateless Responses request decodes into a canonical one; a stateful
// one is refused with a message that says what to do instead.
func ExampleDialect_Decode() {
	d := openairesponses.New()
	req, _ := d.Decode([]byte(`{"model":"gpt-4.1","instructions":"Be brief.","input":"Hi","max_output_tokens":64}`), nil)
	fmt.Println(req.Model, req.System, req.Messages[0].Text(), req.MaxTokens)

	_, p := d.Decode([]byte(`{"model":"gpt-4.1","input":"And?","previous_response_id":"resp_1"}`), nil)
	fmt.Println(p.Status, p.Param)
	fmt.Println(p.Message)
	// Output:
	// gpt-4.1 Be brief. Hi 64
	// 400 previous_response_id
	// 'previous_response_id' is not supported: spillway does not store responses; send the whole conversation in 'input'.
}

// The event names of a short streamed answer, each sent as an event: line
// and again as data.type, with one sequence_number across the stream.
func ExampleDialect_NewEncoder() {
	enc := openairesponses.New().NewEncoder(dialect.Meta{ID: "resp_1", Model: "gpt-4.1", Created: 1700000000}, &canonical.Request{Stream: true})
	out := enc.Start(nil)
	out = enc.Event(out, &canonical.Event{Kind: canonical.EventTextDelta, Text: "Hello"})
	out = enc.Finish(out, canonical.StopEnd, "", canonical.Usage{InputTokens: 5, OutputTokens: 1})
	for _, line := range strings.Split(string(out), "\n") {
		if name, ok := strings.CutPrefix(line, "event: "); ok {
			fmt.Println(name)
		}
	}
	// Output:
	// response.created
	// response.in_progress
	// response.output_item.added
	// response.content_part.added
	// response.output_text.delta
	// response.output_text.done
	// response.content_part.done
	// response.output_item.done
	// response.completed
}
