package openairesponses

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
	"time"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/dialect/openaichat"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/sse"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

var testMeta = dialect.Meta{ID: "resp_0123456789abcdef01234567", Model: "gpt-4.1", Created: 1700000000}

// testNow is the fixed clock behind completed_at.
const testNow = 1700000042

func newTestDialect() *Dialect {
	return &Dialect{now: func() time.Time { return time.Unix(testNow, 0) }}
}

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

func text(s string) canonical.Event { return canonical.Event{Kind: canonical.EventTextDelta, Text: s} }
func refusal(s string) canonical.Event {
	return canonical.Event{Kind: canonical.EventRefusalDelta, Text: s}
}
func toolStart(i int, id, name string) canonical.Event {
	return canonical.Event{Kind: canonical.EventToolCallStart, Index: i, ID: id, Name: name}
}
func toolArgs(i int, s string) canonical.Event {
	return canonical.Event{Kind: canonical.EventToolCallDelta, Index: i, Text: s}
}

// streamCase is one streamed answer: events, then Finish or Interrupt,
// and what a Responses client must reassemble from it.
type streamCase struct {
	name      string
	req       canonical.Request
	events    []canonical.Event
	stop      canonical.StopReason
	usage     canonical.Usage
	interrupt *failure.Public // when set, the stream breaks instead of finishing
	delivered int

	status, reason string // the terminal response's status and incomplete reason
	text, refusal  string
	toolCalls      []canonical.ToolCall
	types          []string // the event types in order, when the case pins them
}

var interruptErr = &failure.Public{Status: 502, Code: "stream_interrupted", Message: "the model provider failed after the answer began; the answer is incomplete (provider_unavailable); retry the request", Retryable: true}

var streamCases = []streamCase{
	{
		name:   "text",
		events: []canonical.Event{text("Hello"), text(""), text(", wörld \"quoted\" </script>\n\u2028\x01")},
		stop:   canonical.StopEnd, usage: canonical.Usage{InputTokens: 10, CachedInputTokens: 4, OutputTokens: 5, ReasoningTokens: 1},
		status: "completed", text: "Hello, wörld \"quoted\" </script>\n\u2028\x01",
		types: []string{
			"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
			"response.output_text.delta", "response.output_text.delta", "response.output_text.done",
			"response.content_part.done", "response.output_item.done", "response.completed",
		},
	},
	{
		name: "empty", stop: canonical.StopEnd, status: "completed",
		types: []string{"response.created", "response.in_progress", "response.completed"},
	},
	{
		name: "tools",
		req: canonical.Request{Tools: []canonical.Tool{{Name: "get_weather"}}, ToolChoice: &canonical.ToolChoice{Mode: canonical.ToolChoiceTool, Name: "get_weather"},
			ParallelToolCalls: new(false), MaxTokens: 256},
		events: []canonical.Event{toolStart(0, "call_1", "get_weather"), toolArgs(0, `{"city":`), toolArgs(0, ""), toolArgs(0, `"Paris"}`)},
		stop:   canonical.StopToolUse, usage: canonical.Usage{InputTokens: 40, OutputTokens: 12},
		status:    "completed",
		toolCalls: []canonical.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}},
		types: []string{
			"response.created", "response.in_progress", "response.output_item.added",
			"response.function_call_arguments.delta", "response.function_call_arguments.delta",
			"response.function_call_arguments.done", "response.output_item.done", "response.completed",
		},
	},
	{
		name: "parallel_tools",
		req:  canonical.Request{Temperature: new(0.2), TopP: new(0.9), ToolChoice: &canonical.ToolChoice{Mode: canonical.ToolChoiceRequired}},
		events: []canonical.Event{
			text("Checking both."),
			toolStart(0, "call_a", "get_weather"), toolArgs(0, `{"city":"Pa`),
			toolStart(1, "call_b", "get_time"), toolArgs(1, `{"tz":"Europe/Rome"}`),
			toolArgs(0, `ris"}`),
			toolStart(2, "call_c", "ping"),
		},
		stop: canonical.StopToolUse, usage: canonical.Usage{InputTokens: 55, OutputTokens: 30},
		status: "completed", text: "Checking both.",
		toolCalls: []canonical.ToolCall{
			{ID: "call_a", Name: "get_weather", Arguments: `{"city":"Paris"}`},
			{ID: "call_b", Name: "get_time", Arguments: `{"tz":"Europe/Rome"}`},
			{ID: "call_c", Name: "ping", Arguments: `{}`},
		},
	},
	{
		name:   "refusal",
		req:    canonical.Request{ResponseFormat: &canonical.ResponseFormat{Type: canonical.FormatJSONSchema, Name: "answer", Schema: json.RawMessage(`{"type":"object"}`), Strict: true}},
		events: []canonical.Event{refusal("I can't "), refusal("help with that.")},
		stop:   canonical.StopRefusal, usage: canonical.Usage{InputTokens: 9, OutputTokens: 6},
		status: "completed", refusal: "I can't help with that.",
		types: []string{
			"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
			"response.refusal.delta", "response.refusal.delta", "response.refusal.done",
			"response.content_part.done", "response.output_item.done", "response.completed",
		},
	},
	{
		name:   "text_then_refusal",
		events: []canonical.Event{text("Sure, "), refusal("actually no.")},
		stop:   canonical.StopRefusal,
		status: "completed", text: "Sure, ", refusal: "actually no.",
	},
	{
		name:   "incomplete",
		req:    canonical.Request{MaxTokens: 16, ResponseFormat: &canonical.ResponseFormat{Type: canonical.FormatJSONObject}},
		events: []canonical.Event{text("Once upon"), text(" a time")},
		stop:   canonical.StopMaxTokens, usage: canonical.Usage{InputTokens: 3, OutputTokens: 16},
		status: "incomplete", reason: "max_output_tokens", text: "Once upon a time",
	},
	{
		name:   "content_filter",
		events: []canonical.Event{text("Part")},
		stop:   canonical.StopContentFilter,
		status: "incomplete", reason: "content_filter", text: "Part",
	},
	{
		name:      "interrupt",
		events:    []canonical.Event{text("Once upon"), text(" a time"), toolStart(0, "call_1", "f"), toolArgs(0, `{"a":`)},
		interrupt: interruptErr, delivered: 3,
		status: "failed", text: "Once upon a time",
		toolCalls: []canonical.ToolCall{{ID: "call_1", Name: "f", Arguments: `{"a":`}},
		types: []string{
			"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
			"response.output_text.delta", "response.output_text.delta", "response.output_text.done",
			"response.content_part.done", "response.output_item.done", "response.output_item.added",
			"response.function_call_arguments.delta", "error", "response.failed",
		},
	},
}

func (tc *streamCase) render() []byte {
	req := tc.req
	req.Stream = true
	enc := newTestDialect().NewEncoder(testMeta, &req)
	dst := enc.Start(nil)
	for i := range tc.events {
		dst = enc.Event(dst, &tc.events[i])
	}
	if tc.interrupt != nil {
		return enc.Interrupt(dst, tc.interrupt, tc.delivered)
	}
	return enc.Finish(dst, tc.stop, "", tc.usage)
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
// checks the framing every Responses event shares.
func checkStreamShape(t *testing.T, tc *streamCase, out []byte) {
	t.Helper()
	r := sse.NewReader(bytes.NewReader(out))
	defer r.Release()
	var types []string
	for n := 0; ; n++ {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SSE framing: %v", err)
		}
		var data map[string]json.RawMessage
		if err := json.Unmarshal(ev.Data, &data); err != nil {
			t.Fatalf("event %d is not JSON: %v\n%s", n, err, ev.Data)
		}
		if string(data["type"]) != strconv.Quote(string(ev.Name)) {
			t.Errorf("event %d: event name %q, data.type %s", n, ev.Name, data["type"])
		}
		if string(data["sequence_number"]) != strconv.Itoa(n) {
			t.Errorf("event %d: sequence_number %s", n, data["sequence_number"])
		}
		if _, ok := data["error"]; ok {
			t.Errorf("event %d has a top-level error key, which openai-go takes for a transport error", n)
		}
		types = append(types, string(ev.Name))
	}
	if tc.types != nil && strings.Join(types, " ") != strings.Join(tc.types, " ") {
		t.Errorf("event types\n got: %v\nwant: %v", types, tc.types)
	}
	last := types[len(types)-1]
	want := map[string]string{"completed": "response.completed", "incomplete": "response.incomplete", "failed": "response.failed"}[tc.status]
	if last != want {
		t.Errorf("last event %s, want %s", last, want)
	}
	if tc.interrupt != nil && (len(types) < 2 || types[len(types)-2] != "error") {
		t.Errorf("an interrupted stream must end with error then response.failed: %v", types)
	}
	if bytes.Contains(out, []byte("[DONE]")) {
		t.Error("Responses streams carry no [DONE]")
	}
}

// Events other than text, tool and refusal deltas write nothing, and
// nothing is written after the stream ended.
func TestStreamIgnoresProtocolEvents(t *testing.T) {
	enc := newTestDialect().NewEncoder(testMeta, &canonical.Request{})
	for _, k := range []canonical.EventKind{canonical.EventStart, canonical.EventUsage, canonical.EventStop, 0, 99} {
		if out := enc.Event(nil, &canonical.Event{Kind: k, Text: "x"}); len(out) != 0 {
			t.Errorf("%v wrote %q", k, out)
		}
	}
	if out := enc.Event(nil, &canonical.Event{Kind: canonical.EventToolCallDelta, Index: 3, Text: "{}"}); len(out) != 0 {
		t.Errorf("a delta for a tool call never started wrote %q", out)
	}
	enc.Finish(nil, canonical.StopEnd, "", canonical.Usage{})
	for _, f := range []func() []byte{
		func() []byte { return enc.Event(nil, &canonical.Event{Kind: canonical.EventTextDelta, Text: "late"}) },
		func() []byte { return enc.Finish(nil, canonical.StopEnd, "", canonical.Usage{}) },
		func() []byte { return enc.Interrupt(nil, interruptErr, 1) },
	} {
		if out := f(); len(out) != 0 {
			t.Errorf("wrote %q after the end", out)
		}
	}
}

// A delta costs no allocation once the part's buffer has grown.
func TestStreamDeltaDoesNotAllocate(t *testing.T) {
	enc := newTestDialect().NewEncoder(testMeta, &canonical.Request{})
	buf := enc.Start(make([]byte, 0, 64<<10))
	ev := text(" token, \"quoted\"")
	buf = enc.Event(buf[:0], &ev)
	args := toolArgs(0, `{"a":1}`)
	allocs := testing.AllocsPerRun(10, func() {
		buf = enc.Event(buf[:0], &ev)
	})
	if allocs != 0 {
		t.Errorf("a text delta allocated %v times", allocs)
	}
	start := toolStart(0, "call_1", "f")
	buf = enc.Event(buf[:0], &start)
	buf = enc.Event(buf[:0], &args)
	if allocs := testing.AllocsPerRun(10, func() { buf = enc.Event(buf[:0], &args) }); allocs != 0 {
		t.Errorf("an argument delta allocated %v times", allocs)
	}
}

type responseCase struct {
	name string
	req  canonical.Request
	resp canonical.Response
}

var responseCases = []responseCase{
	{"text", canonical.Request{Temperature: new(0.7)}, canonical.Response{ID: "prov-1", Model: "prov-model", Text: "Hello! \"Hi\"\n", Stop: canonical.StopEnd,
		Usage: canonical.Usage{InputTokens: 20, CachedInputTokens: 8, CacheWriteTokens: 2, OutputTokens: 10, ReasoningTokens: 3}}},
	{"tools", canonical.Request{Tools: []canonical.Tool{{Name: "get_weather"}, {Name: "get_time"}}, ParallelToolCalls: new(true)}, canonical.Response{ToolCalls: []canonical.ToolCall{
		{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`},
		{ID: "call_2", Name: "get_time", Arguments: ""},
	}, Stop: canonical.StopToolUse, Usage: canonical.Usage{InputTokens: 40, OutputTokens: 12}}},
	{"text_and_tools", canonical.Request{ToolChoice: &canonical.ToolChoice{Mode: canonical.ToolChoiceTool, Name: "f"}}, canonical.Response{Text: "Let me check.", ToolCalls: []canonical.ToolCall{{ID: "toolu_1", Name: "f", Arguments: "{}"}}, Stop: canonical.StopToolUse}},
	{"refusal", canonical.Request{}, canonical.Response{Refusal: "I can't help with that.", Stop: canonical.StopRefusal, Usage: canonical.Usage{InputTokens: 9, OutputTokens: 6}}},
	{"incomplete", canonical.Request{MaxTokens: 16}, canonical.Response{Text: "abc", Stop: canonical.StopMaxTokens, Usage: canonical.Usage{InputTokens: 3, OutputTokens: 16}}},
	{"context_window", canonical.Request{}, canonical.Response{Text: "ab", Stop: canonical.StopContextWindow}},
	{"content_filter", canonical.Request{}, canonical.Response{Stop: canonical.StopContentFilter}},
	{"stop_sequence", canonical.Request{Stop: []string{", 3"}}, canonical.Response{Text: "1, 2", Stop: canonical.StopSequence, StopSequence: ", 3"}},
	{"json_schema", canonical.Request{ResponseFormat: &canonical.ResponseFormat{Type: canonical.FormatJSONSchema, Name: "answer", Schema: json.RawMessage(`{"type":"object"}`)}}, canonical.Response{Text: `{"ok":true}`, Stop: canonical.StopEnd}},
	{"empty", canonical.Request{}, canonical.Response{Stop: canonical.StopEnd}},
}

func TestResponseGolden(t *testing.T) {
	for _, tc := range responseCases {
		t.Run(tc.name, func(t *testing.T) {
			out := newTestDialect().AppendResponse(nil, testMeta, &tc.req, &tc.resp)
			golden(t, "response/"+tc.name+".json", out)
			var v struct {
				ID, Object, Model, Status string
				CreatedAt                 int64  `json:"created_at"`
				CompletedAt               *int64 `json:"completed_at"`
				Output                    []map[string]any
			}
			if err := json.Unmarshal(out, &v); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, out)
			}
			if v.ID != testMeta.ID || v.Object != "response" || v.CreatedAt != testMeta.Created || v.Model != testMeta.Model {
				t.Errorf("header: %s", out)
			}
			wantStatus, _ := outcome(tc.resp.Stop)
			if v.Status != wantStatus || (v.CompletedAt != nil) != (wantStatus == "completed") {
				t.Errorf("status %q completed_at %v, want %q", v.Status, v.CompletedAt, wantStatus)
			}
			if bytes.Contains(out, []byte("prov-")) {
				t.Errorf("the provider's id or model leaked: %s", out)
			}
		})
	}
}

// A response without a request (the engine always has one) still renders
// the API's defaults.
func TestResponseWithoutRequest(t *testing.T) {
	out := New().AppendResponse(nil, testMeta, nil, &canonical.Response{Text: "hi", Stop: canonical.StopEnd})
	if !json.Valid(out) || !bytes.Contains(out, []byte(`"parallel_tool_calls":true`)) || !bytes.Contains(out, []byte(`"max_output_tokens":null`)) {
		t.Errorf("got %s", out)
	}
}

func TestOutcome(t *testing.T) {
	for stop, want := range map[canonical.StopReason][2]string{
		canonical.StopEnd: {"completed", ""}, canonical.StopSequence: {"completed", ""}, canonical.StopRefusal: {"completed", ""},
		canonical.StopPause: {"completed", ""}, canonical.StopToolUse: {"completed", ""}, "": {"completed", ""},
		canonical.StopMaxTokens: {"incomplete", "max_output_tokens"}, canonical.StopContextWindow: {"incomplete", "max_output_tokens"},
		canonical.StopContentFilter: {"incomplete", "content_filter"},
	} {
		if status, reason := outcome(stop); status != want[0] || reason != want[1] {
			t.Errorf("outcome(%q) = %q %q, want %v", stop, status, reason, want)
		}
	}
}

var errorCases = []struct {
	e        failure.Public
	wantType string
}{
	{failure.Public{Status: 400, Code: "invalid_request", Param: "input[2].content[0].image_url", Message: "Invalid 'input[2].content[0].image_url'."}, "invalid_request_error"},
	{failure.Public{Status: 401, Code: "invalid_api_key", Message: "Incorrect API key provided."}, "authentication_error"},
	{failure.Public{Status: 403, Code: "guardrail_blocked", Message: "blocked by policy"}, "permission_error"},
	{failure.Public{Status: 404, Code: "model_not_found", Message: "The model 'x' does not exist."}, "not_found_error"},
	{failure.Public{Status: 409, Code: "idempotency_conflict", Message: "key reused with a different body"}, "conflict_error"},
	{failure.Public{Status: 413, Code: "request_too_large", Message: "body too large"}, "invalid_request_error"},
	{failure.Public{Status: 422, Code: "invalid_request", Message: "unprocessable"}, "invalid_request_error"},
	{failure.Public{Status: 429, Code: "key_budget_exceeded", Message: "budget exhausted"}, "rate_limit_error"},
	{failure.Public{Status: 499, Code: "client_closed_request", Message: "the caller closed the request"}, "client_closed_request"},
	{failure.Public{Status: 500, Code: "internal_error", Message: "internal error"}, "server_error"},
	{failure.Public{Status: 502, Code: "upstream_error", Message: "the model provider failed to answer"}, "upstream_error"},
	{failure.Public{Status: 503, Code: "upstream_error", Message: "unavailable"}, "upstream_error"},
	{failure.Public{Status: 504, Code: "upstream_timeout", Message: "the model provider did not answer in time"}, "timeout_error"},
}

func TestErrorGolden(t *testing.T) {
	for _, tc := range errorCases {
		t.Run(strconv.Itoa(tc.e.Status), func(t *testing.T) {
			out := New().AppendError(nil, &tc.e)
			golden(t, "error/"+strconv.Itoa(tc.e.Status)+".json", out)
			var v struct {
				Error struct {
					Message string
					Type    string
					Param   *string
					Code    *string
				}
			}
			d := json.NewDecoder(bytes.NewReader(out))
			d.DisallowUnknownFields()
			if err := d.Decode(&v); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if v.Error.Type != tc.wantType || v.Error.Message != tc.e.Message {
				t.Errorf("got %s", out)
			}
			if (v.Error.Param == nil) != (tc.e.Param == "") || (v.Error.Code == nil) != (tc.e.Code == "") {
				t.Errorf("param/code nullness wrong: %s", out)
			}
		})
	}
}

// Both dialects speak OpenAI's error shape (openairesponses writes it with
// openaichat's writer); this holds the two equal.
func TestErrorTypeMatchesChat(t *testing.T) {
	chat := openaichat.New()
	for status := 100; status < 600; status++ {
		e := &failure.Public{Status: status, Code: "c", Message: "m"}
		if got, want := New().AppendError(nil, e), chat.AppendError(nil, e); !bytes.Equal(got, want) {
			t.Errorf("status %d: %s, chat says %s", status, got, want)
		}
	}
}

// Long ids, models and echoed names outgrow the encoder's first buffer
// without breaking it.
func TestStreamLongMeta(t *testing.T) {
	m := dialect.Meta{ID: "resp_" + strings.Repeat("i", 3000), Model: strings.Repeat("m", 3000), Created: 1}
	req := &canonical.Request{ResponseFormat: &canonical.ResponseFormat{Type: canonical.FormatJSONSchema, Name: strings.Repeat("n", 3000)},
		ToolChoice: &canonical.ToolChoice{Mode: canonical.ToolChoiceTool, Name: strings.Repeat("t", 3000)}}
	enc := New().NewEncoder(m, req)
	out := enc.Start(nil)
	for i := range 300 {
		ev := text(strings.Repeat("x", i))
		out = enc.Event(out, &ev)
		if i%50 == 0 {
			ev = toolStart(i, "call_"+strconv.Itoa(i), "f")
			out = enc.Event(out, &ev)
		}
	}
	out = enc.Finish(out, canonical.StopEnd, "", canonical.Usage{})
	checkFuzzedStream(t, out, "response.completed")
}
