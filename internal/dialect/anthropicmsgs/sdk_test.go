package anthropicmsgs

// These tests read the gateway's output with Anthropic's official Go SDK,
// so a passing test means real Anthropic clients understand it, and they
// decode the requests that SDK sends.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/spillway-gw/spillway/internal/canonical"
)

// fakeAnthropic answers every request with one canned reply and decodes
// what the SDK sent with the dialect.
type fakeAnthropic struct {
	t           *testing.T
	status      int
	contentType string
	body        []byte

	mu  sync.Mutex
	req *canonical.Request
}

func (f *fakeAnthropic) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/messages" {
		f.t.Errorf("SDK called %s", r.URL.Path)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		f.t.Error(err)
	}
	req, p := New().Decode(body, r.Header)
	if p != nil {
		f.t.Errorf("Decode rejected the SDK's request: %v (param %q)\n%s", p, p.Param, body)
	}
	f.mu.Lock()
	f.req = req
	f.mu.Unlock()
	w.Header().Set("Content-Type", f.contentType)
	w.WriteHeader(f.status)
	w.Write(f.body)
}

func (f *fakeAnthropic) lastRequest() *canonical.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.req
}

func newClient(t *testing.T, f *fakeAnthropic) anthropic.Client {
	f.t = t
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-ant-test"), option.WithMaxRetries(0))
}

func readGolden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func simpleParams() anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 256,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	}
}

// compact normalises JSON for comparison.
func compact(t *testing.T, raw []byte) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatalf("not JSON: %v: %s", err, raw)
	}
	return b.String()
}

// checkBlocks compares the SDK's content blocks with what the case wants.
func checkBlocks(t *testing.T, got []anthropic.ContentBlockUnion, want []wantBlock) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d content blocks, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Type != w.typ {
			t.Errorf("block %d type %q, want %q", i, g.Type, w.typ)
			continue
		}
		switch w.typ {
		case "text":
			if g.Text != w.text {
				t.Errorf("block %d text %q, want %q", i, g.Text, w.text)
			}
		case "tool_use":
			if g.ID != w.id || g.Name != w.name || compact(t, g.Input) != w.input {
				t.Errorf("block %d tool_use %s %s %s, want %+v", i, g.ID, g.Name, g.Input, w)
			}
		}
	}
}

func TestSDKReadsStream(t *testing.T) {
	for _, tc := range streamCases {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeAnthropic{status: 200, contentType: "text/event-stream; charset=utf-8", body: readGolden(t, "stream/"+tc.name+".sse")}
			client := newClient(t, f)
			stream := client.Messages.NewStreaming(context.Background(), simpleParams())
			defer stream.Close()
			var msg anthropic.Message
			for stream.Next() {
				if err := msg.Accumulate(stream.Current()); err != nil {
					t.Fatalf("Accumulate: %v", err)
				}
			}
			err := stream.Err()
			if req := f.lastRequest(); req == nil || !req.Stream || req.MaxTokens != 256 || req.Model != "claude-sonnet-4-5" {
				t.Errorf("decoded SDK request = %+v", req)
			}
			if tc.interrupt != nil {
				// The point of the typed error event: the SDK must report a
				// failure, never a normal end.
				var apiErr *anthropic.Error
				if !errors.As(err, &apiErr) {
					t.Fatalf("stream error = %v (%T), want an *anthropic.Error", err, err)
				}
				if apiErr.Type() != "stream_interrupted" || !strings.Contains(apiErr.RawJSON(), `"delivered_tokens":`+strconv.Itoa(tc.delivered)) ||
					!strings.Contains(apiErr.RawJSON(), `"retryable":true`) {
					t.Errorf("error type %q, body %s", apiErr.Type(), apiErr.RawJSON())
				}
				if tc.blocks != nil {
					checkBlocks(t, msg.Content, tc.blocks)
				}
				if msg.StopReason != "" {
					t.Errorf("an interrupted stream reported stop_reason %q", msg.StopReason)
				}
				return
			}
			if err != nil {
				t.Fatalf("stream error: %v", err)
			}
			if msg.ID != testMeta.ID || string(msg.Model) != testMeta.Model || msg.Role != "assistant" {
				t.Errorf("header: id %q model %q role %q", msg.ID, msg.Model, msg.Role)
			}
			checkBlocks(t, msg.Content, tc.blocks)
			if string(msg.StopReason) != tc.stopReason || msg.StopSequence != tc.stopSeq {
				t.Errorf("stop_reason %q stop_sequence %q, want %q %q", msg.StopReason, msg.StopSequence, tc.stopReason, tc.stopSeq)
			}
			checkUsage(t, msg.Usage, tc.usage)
		})
	}
}

func checkUsage(t *testing.T, got anthropic.Usage, want canonical.Usage) {
	t.Helper()
	if got.InputTokens != int64(want.InputTokens-want.CachedInputTokens-want.CacheWriteTokens) ||
		got.CacheReadInputTokens != int64(want.CachedInputTokens) || got.CacheCreationInputTokens != int64(want.CacheWriteTokens) ||
		got.OutputTokens != int64(want.OutputTokens) {
		t.Errorf("usage %+v, want %+v", got, want)
	}
	// The whole prompt is recoverable the way Anthropic documents it.
	if total := got.InputTokens + got.CacheReadInputTokens + got.CacheCreationInputTokens; total != int64(want.InputTokens) {
		t.Errorf("total input %d, want %d", total, want.InputTokens)
	}
}

func TestSDKReadsResponse(t *testing.T) {
	for _, tc := range responseCases {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeAnthropic{status: 200, contentType: "application/json", body: readGolden(t, "response/"+tc.name+".json")}
			client := newClient(t, f)
			got, err := client.Messages.New(context.Background(), simpleParams())
			if err != nil {
				t.Fatal(err)
			}
			if got.ID != testMeta.ID || string(got.Model) != testMeta.Model || got.Role != "assistant" || got.Type != "message" {
				t.Fatalf("header %+v", got)
			}
			checkBlocks(t, got.Content, tc.blocks)
			if string(got.StopReason) != tc.stopReason {
				t.Errorf("stop_reason %q, want %q", got.StopReason, tc.stopReason)
			}
			if tc.resp.Stop == canonical.StopSequence && got.StopSequence != tc.resp.StopSequence {
				t.Errorf("stop_sequence %q", got.StopSequence)
			}
			checkUsage(t, got.Usage, tc.resp.Usage)
			for i, b := range tc.blocks {
				if !b.rawArguments {
					continue
				}
				// A caller can still recover what the model produced.
				var in map[string]string
				if err := json.Unmarshal(got.Content[i].Input, &in); err != nil || in[rawArgumentsKey] != tc.resp.ToolCalls[i].Arguments {
					t.Errorf("block %d raw arguments %s (%v)", i, got.Content[i].Input, err)
				}
			}
		})
	}
}

func TestSDKReadsErrors(t *testing.T) {
	for _, tc := range errorCases {
		t.Run(strconv.Itoa(tc.e.Status), func(t *testing.T) {
			f := &fakeAnthropic{status: tc.e.Status, contentType: "application/json", body: readGolden(t, "error/"+strconv.Itoa(tc.e.Status)+".json")}
			client := newClient(t, f)
			_, err := client.Messages.New(context.Background(), simpleParams())
			var apiErr *anthropic.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("error %v (%T), want *anthropic.Error", err, err)
			}
			if apiErr.StatusCode != tc.e.Status || string(apiErr.Type()) != tc.wantType {
				t.Errorf("SDK saw status %d type %q; want %d %q", apiErr.StatusCode, apiErr.Type(), tc.e.Status, tc.wantType)
			}
			var body struct {
				Error struct{ Message, Code string }
			}
			if err := json.Unmarshal([]byte(apiErr.RawJSON()), &body); err != nil || body.Error.Message != tc.e.Message || body.Error.Code != tc.e.Code {
				t.Errorf("SDK body %s (%v)", apiErr.RawJSON(), err)
			}
		})
	}
}

// TestSDKToolLoop runs a whole tool round trip as an Anthropic client
// would: a rich first request, the streamed parallel tool calls
// accumulated by the SDK, then the follow-up built from the accumulated
// message with ToParam, which Decode must map back with the tool names.
func TestSDKToolLoop(t *testing.T) {
	f := &fakeAnthropic{status: 200, contentType: "text/event-stream", body: readGolden(t, "stream/parallel_tools.sse")}
	client := newClient(t, f)
	tools := []anthropic.ToolUnionParam{
		{OfTool: &anthropic.ToolParam{
			Name:         "get_weather",
			Description:  anthropic.String("Current weather."),
			InputSchema:  anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}, Required: []string{"city"}},
			Strict:       anthropic.Bool(true),
			CacheControl: anthropic.NewCacheControlEphemeralParam(),
		}},
		// An empty schema is omitted by the SDK (omitzero), which the API
		// refuses as a missing input_schema; an empty property map is not.
		{OfTool: &anthropic.ToolParam{Name: "get_time", InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"tz": map[string]any{"type": "string"}}}}},
		{OfTool: &anthropic.ToolParam{Name: "noop", InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{}}}},
	}
	first := anthropic.MessageNewParams{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 300,
		System: []anthropic.TextBlockParam{
			{Text: "Be brief."},
			{Text: "Use metric units.", CacheControl: anthropic.NewCacheControlEphemeralParam()},
		},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(
			anthropic.NewTextBlock("Weather here and time in Rome?"),
			anthropic.NewImageBlock(anthropic.URLImageSourceParam{URL: "https://example.com/where.png"}),
			anthropic.NewImageBlockBase64("image/jpeg", "/9j/4AAQ"),
		)},
		Tools:         tools,
		ToolChoice:    anthropic.ToolChoiceUnionParam{OfAny: &anthropic.ToolChoiceAnyParam{DisableParallelToolUse: anthropic.Bool(false)}},
		StopSequences: []string{"END"},
		Metadata:      anthropic.MetadataParam{UserID: anthropic.String("u-1")},
		ServiceTier:   anthropic.MessageNewParamsServiceTierAuto,
		Thinking:      anthropic.ThinkingConfigParamUnion{OfDisabled: &anthropic.ThinkingConfigDisabledParam{}},
	}
	stream := client.Messages.NewStreaming(context.Background(), first)
	var msg anthropic.Message
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	stream.Close()

	req := f.lastRequest()
	if req == nil {
		t.Fatal("no request decoded")
	}
	if req.System != "Be brief.\n\nUse metric units." || len(req.Messages) != 1 || len(req.Messages[0].Content) != 3 ||
		req.Messages[0].Content[1].ImageURL != "https://example.com/where.png" || req.Messages[0].Content[2].MediaType != "image/jpeg" ||
		req.Messages[0].Content[2].Data != "/9j/4AAQ" {
		t.Errorf("first request: %s", dump(req))
	}
	if len(req.Tools) != 3 || req.Tools[0].Name != "get_weather" || !req.Tools[0].Strict || req.Tools[0].Description != "Current weather." ||
		compact(t, req.Tools[0].Parameters) != `{"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"}` ||
		req.ToolChoice == nil || req.ToolChoice.Mode != canonical.ToolChoiceRequired || req.ParallelToolCalls == nil || !*req.ParallelToolCalls ||
		req.MaxTokens != 300 || req.Temperature != nil || req.AnthropicVersion != Version20261021 || len(req.Stop) != 1 || !req.Stream {
		t.Errorf("first request: %s", dump(req))
	}

	// The follow-up: the accumulated assistant message plus the results,
	// out of order, one an error, then a question, naming one tool.
	f.contentType, f.body = "application/json", readGolden(t, "response/text.json")
	second := first
	second.Messages = append(first.Messages, msg.ToParam(), anthropic.NewUserMessage(
		anthropic.NewToolResultBlock(msg.Content[2].ID, "14:05", false),
		anthropic.NewToolResultBlock(msg.Content[1].ID, "no station nearby", true),
		anthropic.NewToolResultBlock(msg.Content[3].ID, "ok", false),
		anthropic.NewTextBlock("And tomorrow?"),
	))
	second.ToolChoice = anthropic.ToolChoiceParamOfTool("get_time")
	second.Thinking = anthropic.ThinkingConfigParamUnion{}
	if _, err := client.Messages.New(context.Background(), second); err != nil {
		t.Fatal(err)
	}
	req = f.lastRequest()
	if req == nil || len(req.Messages) != 6 {
		t.Fatalf("second request: %s", dump(req))
	}
	asst, r1, r2, r3, q := req.Messages[1], req.Messages[2], req.Messages[3], req.Messages[4], req.Messages[5]
	if asst.Role != canonical.RoleAssistant || asst.Text() != "Checking both." || len(asst.ToolCalls) != 3 ||
		asst.ToolCalls[0] != (canonical.ToolCall{ID: "toolu_a", Name: "get_weather", Arguments: `{"city":"Paris"}`}) ||
		asst.ToolCalls[2] != (canonical.ToolCall{ID: "toolu_c", Name: "noop", Arguments: `{}`}) {
		t.Errorf("assistant turn: %+v", asst)
	}
	if r1.Role != canonical.RoleTool || r1.ToolCallID != "toolu_b" || r1.ToolName != "get_time" || r1.Text() != "14:05" || r1.IsError ||
		r2.ToolCallID != "toolu_a" || r2.ToolName != "get_weather" || r2.Text() != "no station nearby" || !r2.IsError ||
		r3.ToolCallID != "toolu_c" || r3.ToolName != "noop" {
		t.Errorf("tool results: %+v %+v %+v", r1, r2, r3)
	}
	if q.Role != canonical.RoleUser || q.Text() != "And tomorrow?" {
		t.Errorf("question: %+v", q)
	}
	if req.ToolChoice == nil || *req.ToolChoice != (canonical.ToolChoice{Mode: canonical.ToolChoiceTool, Name: "get_time"}) ||
		req.ParallelToolCalls != nil || req.Stream {
		t.Errorf("second request: %s", dump(req))
	}
}
