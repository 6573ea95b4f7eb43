package anthropicmsgs

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/sse"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

var testMeta = dialect.Meta{ID: "msg_spw_0001", Model: "claude-sonnet-4-5", Created: 1700000000}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file\n got: %s\nwant: %s", name, got, want)
	}
}

// wantBlock is a content block as an Anthropic client must reassemble it.
type wantBlock struct {
	typ, text    string
	id, name     string
	input        string // compact JSON
	rawArguments bool   // input wraps non-object arguments
}

func textBlock(s string) wantBlock { return wantBlock{typ: "text", text: s} }
func toolBlock(id, name, input string) wantBlock {
	return wantBlock{typ: "tool_use", id: id, name: name, input: input}
}

// streamCase is one streamed answer: events, then Finish or Interrupt.
type streamCase struct {
	name      string
	events    []canonical.Event
	stop      canonical.StopReason
	stopSeq   string
	usage     canonical.Usage
	interrupt *failure.Public // when set, the stream breaks instead of finishing
	delivered int

	// What an Anthropic client must reassemble.
	blocks     []wantBlock
	stopReason string
}

func textEv(s string) canonical.Event {
	return canonical.Event{Kind: canonical.EventTextDelta, Text: s}
}
func refusalEv(s string) canonical.Event {
	return canonical.Event{Kind: canonical.EventRefusalDelta, Text: s}
}
func toolStart(i int, id, name string) canonical.Event {
	return canonical.Event{Kind: canonical.EventToolCallStart, Index: i, ID: id, Name: name}
}
func toolArgs(i int, s string) canonical.Event {
	return canonical.Event{Kind: canonical.EventToolCallDelta, Index: i, Text: s}
}

var streamCases = []streamCase{
	{
		name:   "text",
		events: []canonical.Event{textEv("Hello"), textEv(""), textEv(", wörld \"quoted\" </script>\n\u2028\x01")},
		stop:   canonical.StopEnd, usage: canonical.Usage{InputTokens: 10, OutputTokens: 5},
		blocks: []wantBlock{textBlock("Hello, wörld \"quoted\" </script>\n\u2028\x01")}, stopReason: "end_turn",
	},
	{
		name:   "cached_usage_and_stop_sequence",
		events: []canonical.Event{textEv("1, 2")},
		stop:   canonical.StopSequence, stopSeq: ", 3",
		usage:  canonical.Usage{InputTokens: 1200, CachedInputTokens: 1000, CacheWriteTokens: 150, OutputTokens: 7, ReasoningTokens: 2},
		blocks: []wantBlock{textBlock("1, 2")}, stopReason: "stop_sequence",
	},
	{
		name: "empty",
		stop: canonical.StopEnd, stopReason: "end_turn",
	},
	{
		name:   "tools",
		events: []canonical.Event{toolStart(0, "toolu_1", "get_weather"), toolArgs(0, `{"city":`), toolArgs(0, ""), toolArgs(0, `"Paris"}`)},
		stop:   canonical.StopToolUse, usage: canonical.Usage{InputTokens: 40, OutputTokens: 12},
		blocks: []wantBlock{toolBlock("toolu_1", "get_weather", `{"city":"Paris"}`)}, stopReason: "tool_use",
	},
	{
		name: "parallel_tools",
		events: []canonical.Event{
			textEv("Checking both."),
			toolStart(0, "toolu_a", "get_weather"), toolArgs(0, `{"city":"Pa`), toolArgs(0, `ris"}`),
			toolStart(1, "toolu_b", "get_time"), toolArgs(1, `{"tz":"Europe/Rome"}`),
			toolStart(2, "toolu_c", "noop"),
		},
		stop: canonical.StopToolUse, usage: canonical.Usage{InputTokens: 55, OutputTokens: 30},
		blocks: []wantBlock{
			textBlock("Checking both."),
			toolBlock("toolu_a", "get_weather", `{"city":"Paris"}`),
			toolBlock("toolu_b", "get_time", `{"tz":"Europe/Rome"}`),
			toolBlock("toolu_c", "noop", `{}`),
		},
		stopReason: "tool_use",
	},
	{
		name:   "text_after_tool",
		events: []canonical.Event{toolStart(0, "toolu_1", "f"), toolArgs(0, `{}`), textEv("Done, "), textEv("see above.")},
		stop:   canonical.StopEnd,
		blocks: []wantBlock{toolBlock("toolu_1", "f", `{}`), textBlock("Done, see above.")}, stopReason: "end_turn",
	},
	{
		name:   "refusal",
		events: []canonical.Event{refusalEv("I can't "), refusalEv("help with that.")},
		stop:   canonical.StopEnd, usage: canonical.Usage{InputTokens: 9, OutputTokens: 6},
		blocks: []wantBlock{textBlock("I can't help with that.")}, stopReason: "refusal",
	},
	{
		name:   "content_filter",
		events: []canonical.Event{textEv("Part")},
		stop:   canonical.StopContentFilter,
		blocks: []wantBlock{textBlock("Part")}, stopReason: "refusal",
	},
	{
		name:   "max_tokens",
		events: []canonical.Event{textEv("abc")},
		stop:   canonical.StopMaxTokens, usage: canonical.Usage{InputTokens: 3, OutputTokens: 3},
		blocks: []wantBlock{textBlock("abc")}, stopReason: "max_tokens",
	},
	{
		name:      "interrupt",
		events:    []canonical.Event{textEv("Once upon"), textEv(" a time")},
		interrupt: &failure.Public{Status: 502, Code: "upstream_error", Message: "the model provider failed to answer; the request was not completed", Retryable: true},
		delivered: 3,
		blocks:    []wantBlock{textBlock("Once upon a time")},
	},
	{
		name:      "interrupt_in_tool_call",
		events:    []canonical.Event{textEv("Let me check."), toolStart(0, "toolu_1", "get_weather"), toolArgs(0, `{"city":"Pa`)},
		interrupt: &failure.Public{Status: 504, Code: "upstream_timeout", Message: "the model provider did not answer in time; the request was not completed", Retryable: true},
		delivered: 9,
	},
}

func (tc *streamCase) render() []byte {
	enc := New().NewEncoder(testMeta, &canonical.Request{Model: "claude-sonnet-4-5", Stream: true, IncludeUsage: true})
	dst := enc.Start(nil)
	for i := range tc.events {
		dst = enc.Event(dst, &tc.events[i])
	}
	if tc.interrupt != nil {
		return enc.Interrupt(dst, tc.interrupt, tc.delivered)
	}
	return enc.Finish(dst, tc.stop, tc.stopSeq, tc.usage)
}

func TestStreamGolden(t *testing.T) {
	for _, tc := range streamCases {
		t.Run(tc.name, func(t *testing.T) {
			out := tc.render()
			golden(t, "stream/"+tc.name+".sse", out)
			checkStreamShape(t, &tc, out)
		})
	}
}

// checkStreamShape reads the stream with the gateway's own SSE reader and
// checks the event grammar of §3.3: message_start, then per block
// content_block_start, deltas and content_block_stop with indexes in
// order, then message_delta and message_stop; or, interrupted, one final
// error event and no message_stop.
func checkStreamShape(t *testing.T, tc *streamCase, out []byte) {
	t.Helper()
	r := sse.NewReader(bytes.NewReader(out))
	defer r.Release()
	type event struct {
		Type         string
		Index        *int
		ContentBlock map[string]any `json:"content_block"`
		Delta        map[string]any
		Usage        map[string]any
		Message      map[string]any
		Error        map[string]any
	}
	var evs []event
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SSE framing: %v", err)
		}
		var e event
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			t.Fatalf("event data is not JSON: %v\n%s", err, ev.Data)
		}
		if e.Type != string(ev.Name) {
			t.Fatalf("event name %q but data type %q; Anthropic repeats the name", ev.Name, e.Type)
		}
		evs = append(evs, e)
	}
	if len(evs) == 0 || evs[0].Type != "message_start" {
		t.Fatalf("the stream does not open with message_start")
	}
	if m := evs[0].Message; m["id"] != testMeta.ID || m["model"] != testMeta.Model || m["stop_reason"] != nil || len(m["content"].([]any)) != 0 {
		t.Errorf("message_start: %v", m)
	}
	open, next := -1, 0
	body := evs[1:]
	if tc.interrupt != nil {
		last := body[len(body)-1]
		if last.Type != "error" || last.Error["type"] != "stream_interrupted" || last.Error["retryable"] != true ||
			last.Error["delivered_tokens"] != float64(tc.delivered) || last.Error["code"] != tc.interrupt.Code || last.Error["message"] != tc.interrupt.Message {
			t.Fatalf("last event is not the typed interruption: %+v", last)
		}
		body = body[:len(body)-1]
	} else {
		if n := len(body); n < 2 || body[n-2].Type != "message_delta" || body[n-1].Type != "message_stop" {
			t.Fatalf("the stream does not end with message_delta, message_stop")
		}
		if d := body[len(body)-2].Delta; d["stop_reason"] != tc.stopReason {
			t.Errorf("stop_reason %v, want %q", d["stop_reason"], tc.stopReason)
		}
		body = body[:len(body)-2]
	}
	for i, e := range body {
		switch {
		case e.Type == "content_block_start" && e.Index != nil && *e.Index == next && open < 0:
			open, next = next, next+1
		case e.Type == "content_block_delta" && e.Index != nil && *e.Index == open:
		case e.Type == "content_block_stop" && e.Index != nil && *e.Index == open:
			open = -1
		default:
			t.Fatalf("event %d out of order (open block %d, next %d): %+v", i+1, open, next, e)
		}
	}
	if tc.interrupt == nil && open >= 0 {
		t.Fatalf("block %d never stopped", open)
	}
	if bytes.Contains(out, []byte("message_stop")) != (tc.interrupt == nil) {
		t.Fatal("message_stop must end a complete answer and only a complete answer")
	}
}

// Events other than text, tool and refusal deltas write nothing, nor do
// deltas for a tool call that never started.
func TestStreamIgnoresProtocolEvents(t *testing.T) {
	enc := New().NewEncoder(testMeta, &canonical.Request{})
	for _, ev := range []canonical.Event{
		{Kind: canonical.EventStart, Text: "x"}, {Kind: canonical.EventUsage}, {Kind: canonical.EventStop}, {Kind: 0}, {Kind: 99},
		toolArgs(0, "{}"), toolArgs(-1, "{}"), toolStart(-1, "t", "f"),
	} {
		if out := enc.Event(nil, &ev); len(out) != 0 {
			t.Errorf("%v wrote %q", ev.Kind, out)
		}
	}
}

func TestStreamEventDoesNotAllocate(t *testing.T) {
	evs := []canonical.Event{textEv("Hello, \"world\"\n"), toolStart(0, "toolu_1", "f"), toolArgs(0, `{"a":1}`), toolStart(1, "toolu_2", "g"), refusalEv("no")}
	buf := make([]byte, 0, 4096)
	enc := New().NewEncoder(testMeta, &canonical.Request{})
	allocs := testing.AllocsPerRun(100, func() {
		buf = enc.Start(buf[:0])
		for i := range evs {
			buf = enc.Event(buf, &evs[i])
		}
		buf = enc.Finish(buf, canonical.StopEnd, "", canonical.Usage{InputTokens: 1, OutputTokens: 2})
	})
	if allocs != 0 {
		t.Fatalf("encoding a stream allocated %v times", allocs)
	}
}

type responseCase struct {
	name string
	resp canonical.Response
	// What an Anthropic client must read.
	blocks     []wantBlock
	stopReason string
}

var responseCases = []responseCase{
	{"text", canonical.Response{ID: "prov-1", Model: "prov-model", Text: "Hello! \"Hi\"\n", Stop: canonical.StopEnd,
		Usage: canonical.Usage{InputTokens: 20, CachedInputTokens: 8, CacheWriteTokens: 2, OutputTokens: 10, ReasoningTokens: 3}},
		[]wantBlock{textBlock("Hello! \"Hi\"\n")}, "end_turn"},
	{"tools", canonical.Response{ToolCalls: []canonical.ToolCall{
		{ID: "toolu_1", Name: "get_weather", Arguments: `{"city":"Paris"}`},
		{ID: "toolu_2", Name: "get_time", Arguments: ""},
		{ID: "toolu_3", Name: "pretty", Arguments: " {\n  \"a\": [1, 2]\n}\n"},
	}, Stop: canonical.StopToolUse, Usage: canonical.Usage{InputTokens: 40, OutputTokens: 12}},
		[]wantBlock{toolBlock("toolu_1", "get_weather", `{"city":"Paris"}`), toolBlock("toolu_2", "get_time", `{}`), toolBlock("toolu_3", "pretty", `{"a":[1,2]}`)}, "tool_use"},
	{"text_and_tools", canonical.Response{Text: "Let me check.", ToolCalls: []canonical.ToolCall{{ID: "toolu_1", Name: "f", Arguments: "{}"}}, Stop: canonical.StopToolUse},
		[]wantBlock{textBlock("Let me check."), toolBlock("toolu_1", "f", `{}`)}, "tool_use"},
	{"tool_arguments_not_an_object", canonical.Response{ToolCalls: []canonical.ToolCall{
		{ID: "call_1", Name: "f", Arguments: `{"city":"Par`},
		{ID: "call_2", Name: "g", Arguments: `[1,2]`},
	}, Stop: canonical.StopMaxTokens},
		[]wantBlock{
			{typ: "tool_use", id: "call_1", name: "f", input: `{"` + rawArgumentsKey + `":"{\"city\":\"Par"}`, rawArguments: true},
			{typ: "tool_use", id: "call_2", name: "g", input: `{"` + rawArgumentsKey + `":"[1,2]"}`, rawArguments: true},
		}, "max_tokens"},
	{"refusal", canonical.Response{Refusal: "I can't help with that.", Stop: canonical.StopEnd, Usage: canonical.Usage{InputTokens: 9, OutputTokens: 6}},
		[]wantBlock{textBlock("I can't help with that.")}, "refusal"},
	{"text_and_refusal", canonical.Response{Text: "Well,", Refusal: "no.", Stop: canonical.StopRefusal},
		[]wantBlock{textBlock("Well,"), textBlock("no.")}, "refusal"},
	{"max_tokens", canonical.Response{Text: "abc", Stop: canonical.StopMaxTokens, Usage: canonical.Usage{InputTokens: 3, OutputTokens: 3}},
		[]wantBlock{textBlock("abc")}, "max_tokens"},
	{"context_window", canonical.Response{Text: "ab", Stop: canonical.StopContextWindow}, []wantBlock{textBlock("ab")}, "model_context_window_exceeded"},
	{"content_filter", canonical.Response{Stop: canonical.StopContentFilter}, nil, "refusal"},
	{"stop_sequence", canonical.Response{Text: "1, 2", Stop: canonical.StopSequence, StopSequence: ", 3"}, []wantBlock{textBlock("1, 2")}, "stop_sequence"},
	{"pause", canonical.Response{Text: "…", Stop: canonical.StopPause}, []wantBlock{textBlock("…")}, "pause_turn"},
	{"empty", canonical.Response{Stop: canonical.StopEnd}, nil, "end_turn"},
}

func TestResponseGolden(t *testing.T) {
	for _, tc := range responseCases {
		t.Run(tc.name, func(t *testing.T) {
			out := New().AppendResponse(nil, testMeta, &canonical.Request{Model: "claude-sonnet-4-5"}, &tc.resp)
			golden(t, "response/"+tc.name+".json", out)
			var v struct {
				ID, Type, Role, Model string
				Content               []json.RawMessage
				StopReason            string    `json:"stop_reason"`
				StopSequence          *string   `json:"stop_sequence"`
				StopDetails           *struct{} `json:"stop_details"`
				Container             *struct{} `json:"container"`
				Usage                 map[string]any
			}
			d := json.NewDecoder(bytes.NewReader(out))
			d.DisallowUnknownFields()
			if err := d.Decode(&v); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if v.ID != testMeta.ID || v.Type != "message" || v.Role != "assistant" || v.Model != testMeta.Model {
				t.Errorf("header: %s", out)
			}
			if v.StopReason != tc.stopReason || (v.StopSequence != nil) != (tc.resp.Stop == canonical.StopSequence) {
				t.Errorf("stop_reason %q stop_sequence %v", v.StopReason, v.StopSequence)
			}
			if len(v.Content) != len(tc.blocks) {
				t.Fatalf("%d blocks, want %d: %s", len(v.Content), len(tc.blocks), out)
			}
			u := tc.resp.Usage
			num := func(k string) int { f, _ := v.Usage[k].(float64); return int(f) }
			details, _ := v.Usage["output_tokens_details"].(map[string]any)
			thinking, _ := details["thinking_tokens"].(float64)
			if num("input_tokens") != u.InputTokens-u.CachedInputTokens-u.CacheWriteTokens || num("cache_read_input_tokens") != u.CachedInputTokens ||
				num("cache_creation_input_tokens") != u.CacheWriteTokens || num("output_tokens") != u.OutputTokens || int(thinking) != u.ReasoningTokens {
				t.Errorf("usage %v for %+v", v.Usage, u)
			}
			if bytes.Contains(out, []byte("prov-")) {
				t.Errorf("the provider's id or model leaked: %s", out)
			}
		})
	}
}

func TestStopReason(t *testing.T) {
	for stop, want := range map[canonical.StopReason]string{
		canonical.StopEnd: "end_turn", canonical.StopMaxTokens: "max_tokens", canonical.StopSequence: "stop_sequence",
		canonical.StopToolUse: "tool_use", canonical.StopRefusal: "refusal", canonical.StopContentFilter: "refusal",
		canonical.StopContextWindow: "model_context_window_exceeded", canonical.StopPause: "pause_turn", "": "end_turn", "odd": "end_turn",
	} {
		if got := stopReason(stop); got != want {
			t.Errorf("stopReason(%q) = %q, want %q", stop, got, want)
		}
	}
}

var errorCases = []struct {
	e        failure.Public
	wantType string
}{
	{failure.Public{Status: 400, Code: "invalid_request", Param: "messages.2.content", Message: "messages.2.content: Field required"}, "invalid_request_error"},
	{failure.Public{Status: 401, Code: "invalid_api_key", Message: "invalid x-api-key"}, "authentication_error"},
	{failure.Public{Status: 402, Code: "org_credit_exhausted", Message: "credit exhausted"}, "billing_error"},
	{failure.Public{Status: 403, Code: "guardrail_blocked", Message: "blocked by policy"}, "permission_error"},
	{failure.Public{Status: 404, Code: "model_not_found", Message: "model: claude-x"}, "not_found_error"},
	{failure.Public{Status: 409, Code: "idempotency_conflict", Message: "key reused with a different body"}, "invalid_request_error"},
	{failure.Public{Status: 413, Code: "request_too_large", Message: "body too large"}, "request_too_large"},
	{failure.Public{Status: 422, Message: "unprocessable"}, "invalid_request_error"},
	{failure.Public{Status: 429, Code: "key_budget_exceeded", Message: "budget exhausted"}, "rate_limit_error"},
	{failure.Public{Status: 499, Code: "client_closed_request", Message: "the caller closed the request"}, "invalid_request_error"},
	{failure.Public{Status: 500, Code: "internal_error", Message: "internal error"}, "api_error"},
	{failure.Public{Status: 502, Code: "upstream_error", Message: "the model provider failed to answer"}, "api_error"},
	{failure.Public{Status: 503, Code: "upstream_error", Message: "unavailable"}, "api_error"},
	{failure.Public{Status: 504, Code: "upstream_timeout", Message: "the model provider did not answer in time"}, "timeout_error"},
	{failure.Public{Status: 529, Code: "overloaded", Message: "overloaded"}, "overloaded_error"},
}

func TestErrorGolden(t *testing.T) {
	for _, tc := range errorCases {
		t.Run(strconv.Itoa(tc.e.Status), func(t *testing.T) {
			out := New().AppendError(nil, &tc.e)
			golden(t, "error/"+strconv.Itoa(tc.e.Status)+".json", out)
			var v struct {
				Type  string
				Error struct {
					Type, Message string
					Code, Param   *string
				}
			}
			d := json.NewDecoder(bytes.NewReader(out))
			d.DisallowUnknownFields()
			if err := d.Decode(&v); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if v.Type != "error" || v.Error.Type != tc.wantType || v.Error.Message != tc.e.Message {
				t.Errorf("got %s", out)
			}
			if (v.Error.Param == nil) != (tc.e.Param == "") || (v.Error.Code == nil) != (tc.e.Code == "") {
				t.Errorf("param/code presence wrong: %s", out)
			}
			if strings.Contains(string(out), "request_id") {
				t.Errorf("unexpected request_id: %s", out)
			}
		})
	}
}
