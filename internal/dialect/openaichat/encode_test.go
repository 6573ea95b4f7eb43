package openaichat

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

var testMeta = dialect.Meta{ID: "chatcmpl-spw-0001", Model: "gpt-4o", Created: 1700000000}

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

// streamCase is one streamed answer: events, then Finish or Interrupt.
type streamCase struct {
	name         string
	includeUsage bool
	events       []canonical.Event
	stop         canonical.StopReason
	usage        canonical.Usage
	interrupt    *failure.Public // when set, the stream breaks instead of finishing
	delivered    int

	// What an OpenAI client must reassemble.
	text, refusal, finish string
	toolCalls             []canonical.ToolCall
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

var streamCases = []streamCase{
	{
		name:   "text",
		events: []canonical.Event{text("Hello"), text(""), text(", wörld \"quoted\" </script>\n\u2028\x01")},
		stop:   canonical.StopEnd, usage: canonical.Usage{InputTokens: 10, OutputTokens: 5},
		text: "Hello, wörld \"quoted\" </script>\n\u2028\x01", finish: "stop",
	},
	{
		name: "text_usage", includeUsage: true,
		events: []canonical.Event{text("Hi"), text(" there")},
		stop:   canonical.StopMaxTokens, usage: canonical.Usage{InputTokens: 12, CachedInputTokens: 4, OutputTokens: 7, ReasoningTokens: 2},
		text: "Hi there", finish: "length",
	},
	{
		name:   "empty",
		stop:   canonical.StopEnd,
		finish: "stop",
	},
	{
		name:   "tools",
		events: []canonical.Event{toolStart(0, "call_1", "get_weather"), toolArgs(0, `{"city":`), toolArgs(0, ""), toolArgs(0, `"Paris"}`)},
		stop:   canonical.StopToolUse, usage: canonical.Usage{InputTokens: 40, OutputTokens: 12},
		finish:    "tool_calls",
		toolCalls: []canonical.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}},
	},
	{
		name: "parallel_tools", includeUsage: true,
		events: []canonical.Event{
			text("Checking both."),
			toolStart(0, "call_a", "get_weather"), toolArgs(0, `{"city":"Pa`),
			toolStart(1, "call_b", "get_time"), toolArgs(1, `{"tz":"Europe/Rome"}`),
			toolArgs(0, `ris"}`),
		},
		stop: canonical.StopToolUse, usage: canonical.Usage{InputTokens: 55, OutputTokens: 30},
		text: "Checking both.", finish: "tool_calls",
		toolCalls: []canonical.ToolCall{
			{ID: "call_a", Name: "get_weather", Arguments: `{"city":"Paris"}`},
			{ID: "call_b", Name: "get_time", Arguments: `{"tz":"Europe/Rome"}`},
		},
	},
	{
		name: "refusal", includeUsage: true,
		events: []canonical.Event{refusal("I can't "), refusal("help with that.")},
		stop:   canonical.StopRefusal, usage: canonical.Usage{InputTokens: 9, OutputTokens: 6},
		refusal: "I can't help with that.", finish: "stop",
	},
	{
		name:   "content_filter",
		events: []canonical.Event{text("Part")},
		stop:   canonical.StopContentFilter,
		text:   "Part", finish: "content_filter",
	},
	{
		name: "interrupt", includeUsage: true,
		events:    []canonical.Event{text("Once upon"), text(" a time")},
		interrupt: &failure.Public{Status: 502, Code: "upstream_error", Message: "the model provider failed to answer; the request was not completed", Retryable: true},
		delivered: 3,
		text:      "Once upon a time",
	},
}

func (tc *streamCase) request() *canonical.Request {
	return &canonical.Request{Model: "gpt-4o", Stream: true, IncludeUsage: tc.includeUsage}
}

func (tc *streamCase) render() []byte {
	enc := New().NewEncoder(testMeta, tc.request())
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
// checks every chunk against the Chat Completions chunk schema.
func checkStreamShape(t *testing.T, tc *streamCase, out []byte) {
	t.Helper()
	r := sse.NewReader(bytes.NewReader(out))
	defer r.Release()
	var datas []string
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SSE framing: %v", err)
		}
		if len(ev.Name) != 0 {
			t.Errorf("event has a name %q; Chat Completions streams use data lines only", ev.Name)
		}
		datas = append(datas, string(ev.Data))
	}
	last := datas[len(datas)-1]
	if tc.interrupt == nil {
		if last != "[DONE]" {
			t.Fatalf("stream does not end with [DONE]: %q", last)
		}
		datas = datas[:len(datas)-1]
	} else {
		if strings.Contains(string(out), "[DONE]") {
			t.Fatal("an interrupted stream must not carry [DONE]")
		}
		var e struct {
			Error map[string]any `json:"error"`
		}
		if err := json.Unmarshal([]byte(last), &e); err != nil || e.Error == nil {
			t.Fatalf("last event is not an error event: %q (%v)", last, err)
		}
		if e.Error["type"] != "stream_interrupted" || e.Error["retryable"] != true || e.Error["delivered_tokens"] != float64(tc.delivered) || e.Error["code"] != tc.interrupt.Code {
			t.Errorf("error event = %v", e.Error)
		}
		datas = datas[:len(datas)-1]
	}
	for i, d := range datas {
		var chunk map[string]json.RawMessage
		if err := json.Unmarshal([]byte(d), &chunk); err != nil {
			t.Fatalf("chunk %d is not JSON: %v\n%s", i, err, d)
		}
		if _, ok := chunk["error"]; ok {
			t.Fatalf("chunk %d has a top-level error key", i)
		}
		want := []string{"id", "object", "created", "model", "system_fingerprint", "choices"}
		if tc.includeUsage {
			want = append(want, "usage")
		}
		if len(chunk) != len(want) {
			t.Errorf("chunk %d has keys %v, want %v", i, keys(chunk), want)
		}
		for _, k := range want {
			if _, ok := chunk[k]; !ok {
				t.Errorf("chunk %d lacks %q", i, k)
			}
		}
		if string(chunk["id"]) != strconv.Quote(testMeta.ID) || string(chunk["object"]) != `"chat.completion.chunk"` ||
			string(chunk["created"]) != "1700000000" || string(chunk["model"]) != `"gpt-4o"` {
			t.Errorf("chunk %d header: %s", i, d)
		}
		usageChunk := tc.includeUsage && tc.interrupt == nil && i == len(datas)-1
		if usageChunk != (string(chunk["choices"]) == "[]") {
			t.Errorf("chunk %d: choices %s (usage chunk: %v)", i, chunk["choices"], usageChunk)
		}
		if tc.includeUsage && !usageChunk && string(chunk["usage"]) != "null" {
			t.Errorf("chunk %d: usage %s, want null before the usage chunk", i, chunk["usage"])
		}
	}
}

func keys(m map[string]json.RawMessage) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// Events other than text, tool and refusal deltas write nothing.
func TestStreamIgnoresProtocolEvents(t *testing.T) {
	enc := New().NewEncoder(testMeta, &canonical.Request{})
	for _, k := range []canonical.EventKind{canonical.EventStart, canonical.EventUsage, canonical.EventStop, 0, 99} {
		if out := enc.Event(nil, &canonical.Event{Kind: k, Text: "x"}); len(out) != 0 {
			t.Errorf("%v wrote %q", k, out)
		}
	}
}

func TestStreamEventDoesNotAllocate(t *testing.T) {
	enc := New().NewEncoder(testMeta, &canonical.Request{IncludeUsage: true})
	evs := []canonical.Event{text("Hello, \"world\"\n"), toolStart(0, "call_1", "f"), toolArgs(0, `{"a":1}`), refusal("no")}
	buf := make([]byte, 0, 4096)
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
}

var responseCases = []responseCase{
	{"text", canonical.Response{ID: "prov-1", Model: "prov-model", Text: "Hello! \"Hi\"\n", Stop: canonical.StopEnd,
		Usage: canonical.Usage{InputTokens: 20, CachedInputTokens: 8, OutputTokens: 10, ReasoningTokens: 3}}},
	{"tools", canonical.Response{ToolCalls: []canonical.ToolCall{
		{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`},
		{ID: "call_2", Name: "get_time", Arguments: ""},
	}, Stop: canonical.StopToolUse, Usage: canonical.Usage{InputTokens: 40, OutputTokens: 12}}},
	{"text_and_tools", canonical.Response{Text: "Let me check.", ToolCalls: []canonical.ToolCall{{ID: "call_1", Name: "f", Arguments: "{}"}}, Stop: canonical.StopToolUse}},
	{"refusal", canonical.Response{Refusal: "I can't help with that.", Stop: canonical.StopRefusal, Usage: canonical.Usage{InputTokens: 9, OutputTokens: 6}}},
	{"length", canonical.Response{Text: "abc", Stop: canonical.StopMaxTokens, Usage: canonical.Usage{InputTokens: 3, OutputTokens: 3}}},
	{"context_window", canonical.Response{Text: "ab", Stop: canonical.StopContextWindow}},
	{"content_filter", canonical.Response{Stop: canonical.StopContentFilter}},
	{"stop_sequence", canonical.Response{Text: "1, 2", Stop: canonical.StopSequence, StopSequence: ", 3"}},
	{"pause", canonical.Response{Text: "…", Stop: canonical.StopPause}},
	{"empty", canonical.Response{Stop: canonical.StopEnd}},
}

func TestResponseGolden(t *testing.T) {
	for _, tc := range responseCases {
		t.Run(tc.name, func(t *testing.T) {
			out := New().AppendResponse(nil, testMeta, &canonical.Request{Model: "gpt-4o"}, &tc.resp)
			golden(t, "response/"+tc.name+".json", out)
			var v struct {
				ID, Object, Model string
				Created           int64
				Choices           []struct {
					Index        int
					FinishReason string `json:"finish_reason"`
					Message      struct {
						Role    string
						Content *string
						Refusal *string
					}
				}
				Usage map[string]any
			}
			if err := json.Unmarshal(out, &v); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, out)
			}
			if v.ID != testMeta.ID || v.Object != "chat.completion" || v.Created != testMeta.Created || v.Model != testMeta.Model {
				t.Errorf("header: %s", out)
			}
			if len(v.Choices) != 1 || v.Choices[0].Message.Role != "assistant" {
				t.Fatalf("choices: %s", out)
			}
			if bytes.Contains(out, []byte("prov-")) {
				t.Errorf("the provider's id or model leaked: %s", out)
			}
		})
	}
}

func TestFinishReason(t *testing.T) {
	for stop, want := range map[canonical.StopReason]string{
		canonical.StopEnd: "stop", canonical.StopSequence: "stop", canonical.StopRefusal: "stop", canonical.StopPause: "stop",
		canonical.StopMaxTokens: "length", canonical.StopContextWindow: "length",
		canonical.StopToolUse: "tool_calls", canonical.StopContentFilter: "content_filter", "": "stop",
	} {
		if got := finishReason(stop); got != want {
			t.Errorf("finishReason(%q) = %q, want %q", stop, got, want)
		}
	}
}

var errorCases = []struct {
	e        failure.Public
	wantType string
}{
	{failure.Public{Status: 400, Code: "invalid_request", Param: "messages[2].content", Message: "Invalid type for 'messages[2].content'."}, "invalid_request_error"},
	{failure.Public{Status: 401, Code: "invalid_api_key", Message: "Incorrect API key provided."}, "authentication_error"},
	{failure.Public{Status: 403, Code: "guardrail_blocked", Message: "blocked by policy"}, "permission_error"},
	{failure.Public{Status: 404, Code: "model_not_found", Message: "The model 'x' does not exist."}, "not_found_error"},
	{failure.Public{Status: 409, Code: "idempotency_conflict", Message: "key reused with a different body"}, "conflict_error"},
	{failure.Public{Status: 413, Code: "request_too_large", Message: "body too large"}, "invalid_request_error"},
	{failure.Public{Status: 422, Code: "invalid_request", Message: "unprocessable"}, "invalid_request_error"},
	{failure.Public{Status: 418, Code: "", Message: "teapot"}, "invalid_request_error"},
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
