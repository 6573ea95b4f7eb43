package openaichat

// These tests read the gateway's output with OpenAI's official Go SDK, so a
// passing test means real OpenAI clients understand it, and they decode the
// requests that SDK sends.

import (
	"context"
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

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/spillway-gw/spillway/internal/canonical"
)

// fakeOpenAI answers every request with one canned reply and decodes what
// the SDK sent with the dialect.
type fakeOpenAI struct {
	t           *testing.T
	status      int
	contentType string
	body        []byte

	mu  sync.Mutex
	req *canonical.Request
}

func (f *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/chat/completions" {
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

func (f *fakeOpenAI) lastRequest() *canonical.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.req
}

func newClient(t *testing.T, f *fakeOpenAI) openai.Client {
	f.t = t
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
}

func readGolden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSDKReadsStream(t *testing.T) {
	for _, tc := range streamCases {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeOpenAI{status: 200, contentType: "text/event-stream", body: readGolden(t, "stream/"+tc.name+".sse")}
			client := newClient(t, f)
			params := openai.ChatCompletionNewParams{
				Model:    "gpt-4o",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
			}
			if tc.includeUsage {
				params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
			}
			stream := client.Chat.Completions.NewStreaming(context.Background(), params)
			defer stream.Close()
			var acc openai.ChatCompletionAccumulator
			chunks := 0
			for stream.Next() {
				chunks++
				if !acc.AddChunk(stream.Current()) {
					t.Fatalf("the accumulator rejected chunk %d", chunks)
				}
			}
			err := stream.Err()

			if req := f.lastRequest(); req == nil || !req.Stream || req.IncludeUsage != tc.includeUsage {
				t.Errorf("decoded SDK request = %+v", req)
			}
			if tc.interrupt != nil {
				// The point of the typed error event: the SDK must report a
				// failure, never a normal end.
				var se *ssestream.StreamError
				if !errors.As(err, &se) {
					t.Fatalf("stream error = %v, want an *ssestream.StreamError", err)
				}
				if !strings.Contains(se.Message, `"type":"stream_interrupted"`) || !strings.Contains(se.Message, `"delivered_tokens":3`) {
					t.Errorf("error message %q lacks the interruption details", se.Message)
				}
				if got := acc.Choices[0].Message.Content; got != tc.text {
					t.Errorf("delivered content %q, want %q", got, tc.text)
				}
				return
			}
			if err != nil {
				t.Fatalf("stream error: %v", err)
			}
			if acc.ID != testMeta.ID || acc.Model != testMeta.Model || acc.Created != testMeta.Created {
				t.Errorf("header: id %q model %q created %d", acc.ID, acc.Model, acc.Created)
			}
			if len(acc.Choices) != 1 {
				t.Fatalf("%d choices", len(acc.Choices))
			}
			ch := acc.Choices[0]
			if ch.Message.Content != tc.text || ch.Message.Refusal != tc.refusal || string(ch.Message.Role) != "assistant" {
				t.Errorf("message: role %q content %q refusal %q, want content %q refusal %q", ch.Message.Role, ch.Message.Content, ch.Message.Refusal, tc.text, tc.refusal)
			}
			if ch.FinishReason != tc.finish {
				t.Errorf("finish_reason %q, want %q", ch.FinishReason, tc.finish)
			}
			if len(ch.Message.ToolCalls) != len(tc.toolCalls) {
				t.Fatalf("tool calls %+v, want %+v", ch.Message.ToolCalls, tc.toolCalls)
			}
			for i, want := range tc.toolCalls {
				got := ch.Message.ToolCalls[i]
				if got.ID != want.ID || got.Function.Name != want.Name || got.Function.Arguments != want.Arguments || got.Type != "function" {
					t.Errorf("tool call %d = %+v, want %+v", i, got, want)
				}
			}
			u := acc.Usage
			if tc.includeUsage {
				if u.PromptTokens != int64(tc.usage.InputTokens) || u.CompletionTokens != int64(tc.usage.OutputTokens) ||
					u.TotalTokens != int64(tc.usage.InputTokens+tc.usage.OutputTokens) ||
					u.PromptTokensDetails.CachedTokens != int64(tc.usage.CachedInputTokens) ||
					u.CompletionTokensDetails.ReasoningTokens != int64(tc.usage.ReasoningTokens) {
					t.Errorf("usage %+v, want %+v", u, tc.usage)
				}
			} else if u.TotalTokens != 0 {
				t.Errorf("usage %+v without include_usage", u)
			}
		})
	}
}

func TestSDKReadsResponse(t *testing.T) {
	for _, tc := range responseCases {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeOpenAI{status: 200, contentType: "application/json", body: readGolden(t, "response/"+tc.name+".json")}
			client := newClient(t, f)
			got, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
				Model:    "gpt-4o",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
			})
			if err != nil {
				t.Fatal(err)
			}
			if got.ID != testMeta.ID || got.Model != testMeta.Model || got.Created != testMeta.Created || len(got.Choices) != 1 {
				t.Fatalf("got %+v", got)
			}
			ch, want := got.Choices[0], tc.resp
			if ch.Message.Content != want.Text || ch.Message.Refusal != want.Refusal {
				t.Errorf("content %q refusal %q, want %q %q", ch.Message.Content, ch.Message.Refusal, want.Text, want.Refusal)
			}
			if ch.FinishReason != finishReason(want.Stop) {
				t.Errorf("finish_reason %q", ch.FinishReason)
			}
			if len(ch.Message.ToolCalls) != len(want.ToolCalls) {
				t.Fatalf("tool calls %+v", ch.Message.ToolCalls)
			}
			for i, w := range want.ToolCalls {
				tc := ch.Message.ToolCalls[i]
				args := w.Arguments
				if args == "" {
					args = "{}"
				}
				if tc.ID != w.ID || tc.Function.Name != w.Name || tc.Function.Arguments != args {
					t.Errorf("tool call %d = %+v, want %+v", i, tc, w)
				}
			}
			if got.Usage.PromptTokens != int64(want.Usage.InputTokens) || got.Usage.CompletionTokens != int64(want.Usage.OutputTokens) ||
				got.Usage.PromptTokensDetails.CachedTokens != int64(want.Usage.CachedInputTokens) ||
				got.Usage.CompletionTokensDetails.ReasoningTokens != int64(want.Usage.ReasoningTokens) {
				t.Errorf("usage %+v, want %+v", got.Usage, want.Usage)
			}
		})
	}
}

func TestSDKReadsErrors(t *testing.T) {
	for _, tc := range errorCases {
		t.Run(strconv.Itoa(tc.e.Status), func(t *testing.T) {
			f := &fakeOpenAI{status: tc.e.Status, contentType: "application/json", body: readGolden(t, "error/"+strconv.Itoa(tc.e.Status)+".json")}
			client := newClient(t, f)
			_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
				Model:    "gpt-4o",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
			})
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("error %v (%T), want *openai.Error", err, err)
			}
			if apiErr.StatusCode != tc.e.Status || apiErr.Code != tc.e.Code || apiErr.Type != tc.wantType ||
				apiErr.Param != tc.e.Param || apiErr.Message != tc.e.Message {
				t.Errorf("SDK saw status %d code %q type %q param %q message %q; want %+v type %q",
					apiErr.StatusCode, apiErr.Code, apiErr.Type, apiErr.Param, apiErr.Message, tc.e, tc.wantType)
			}
		})
	}
}

// TestSDKToolLoop runs a whole tool round trip as an OpenAI client would:
// a rich first request, the streamed parallel tool calls accumulated by the
// SDK, then the follow-up built from the accumulated message, which Decode
// must map back with the tool names.
func TestSDKToolLoop(t *testing.T) {
	f := &fakeOpenAI{status: 200, contentType: "text/event-stream", body: readGolden(t, "stream/parallel_tools.sse")}
	client := newClient(t, f)
	tools := []openai.ChatCompletionToolUnionParam{
		openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:        "get_weather",
			Description: openai.String("Current weather."),
			Parameters:  shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
			Strict:      openai.Bool(true),
		}),
		openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_time"}),
	}
	first := openai.ChatCompletionNewParams{
		Model: "gpt-4o",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("Be brief."),
			openai.DeveloperMessage("Use metric units."),
			openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
				openai.TextContentPart("Weather here and time in Rome?"),
				openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "https://example.com/where.png", Detail: "low"}),
				openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "data:image/jpeg;base64,/9j/4AAQ"}),
			}),
		},
		Tools:               tools,
		ToolChoice:          openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")},
		ParallelToolCalls:   openai.Bool(true),
		MaxCompletionTokens: openai.Int(300),
		Temperature:         openai.Float(0.2),
		TopP:                openai.Float(0.9),
		Stop:                openai.ChatCompletionNewParamsStopUnion{OfStringArray: []string{"END"}},
		Seed:                openai.Int(7),
		User:                openai.String("u-1"),
		Metadata:            shared.Metadata{"team": "a"},
		ReasoningEffort:     shared.ReasoningEffortLow,
		StreamOptions:       openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	stream := client.Chat.Completions.NewStreaming(context.Background(), first)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
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
		req.Messages[0].Content[1].ImageURL != "https://example.com/where.png" || req.Messages[0].Content[2].MediaType != "image/jpeg" {
		t.Errorf("first request: %s", dump(req))
	}
	if len(req.Tools) != 2 || req.Tools[0].Name != "get_weather" || !req.Tools[0].Strict || req.Tools[0].Description != "Current weather." ||
		req.ToolChoice == nil || req.ToolChoice.Mode != canonical.ToolChoiceRequired || req.ParallelToolCalls == nil || !*req.ParallelToolCalls ||
		req.MaxTokens != 300 || *req.Temperature != 0.2 || *req.TopP != 0.9 || len(req.Stop) != 1 || !req.Stream || !req.IncludeUsage {
		t.Errorf("first request: %s", dump(req))
	}

	// The follow-up: the accumulated assistant message plus both results,
	// asking for structured output and naming one tool.
	f.contentType, f.body = "application/json", readGolden(t, "response/text.json")
	msg := acc.Choices[0].Message
	second := openai.ChatCompletionNewParams{
		Model:      "gpt-4o",
		Messages:   append(first.Messages, msg.ToParam(), openai.ToolMessage("14:05", msg.ToolCalls[1].ID), openai.ToolMessage("sunny", msg.ToolCalls[0].ID)),
		Tools:      tools,
		ToolChoice: openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_time"}),
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "answer", Schema: map[string]any{"type": "object"}, Strict: openai.Bool(true)},
		}},
		MaxTokens: openai.Int(50),
	}
	if _, err := client.Chat.Completions.New(context.Background(), second); err != nil {
		t.Fatal(err)
	}
	req = f.lastRequest()
	if req == nil || len(req.Messages) != 4 {
		t.Fatalf("second request: %s", dump(req))
	}
	asst, r1, r2 := req.Messages[1], req.Messages[2], req.Messages[3]
	if asst.Role != canonical.RoleAssistant || asst.Text() != "Checking both." || len(asst.ToolCalls) != 2 ||
		asst.ToolCalls[0] != (canonical.ToolCall{ID: "call_a", Name: "get_weather", Arguments: `{"city":"Paris"}`}) {
		t.Errorf("assistant turn: %+v", asst)
	}
	if r1.Role != canonical.RoleTool || r1.ToolCallID != "call_b" || r1.ToolName != "get_time" || r1.Text() != "14:05" ||
		r2.ToolCallID != "call_a" || r2.ToolName != "get_weather" || r2.Text() != "sunny" {
		t.Errorf("tool results: %+v %+v", r1, r2)
	}
	if req.ToolChoice == nil || *req.ToolChoice != (canonical.ToolChoice{Mode: canonical.ToolChoiceTool, Name: "get_time"}) ||
		req.ResponseFormat == nil || req.ResponseFormat.Type != canonical.FormatJSONSchema || req.ResponseFormat.Name != "answer" ||
		string(req.ResponseFormat.Schema) != `{"type":"object"}` || !req.ResponseFormat.Strict || req.MaxTokens != 50 || req.Stream {
		t.Errorf("second request: %s", dump(req))
	}
}
