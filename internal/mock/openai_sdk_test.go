package mock

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// The official openai-go SDK is the judge of the OpenAI mock's wire format.

func openAIClient(t *testing.T, opts Options) (openai.Client, *Mock) {
	t.Helper()
	if opts.APIKey == "" {
		opts.APIKey = "sk-test-key-0123456789"
	}
	m, srv := newMock(t, "openai", opts)
	c := openai.NewClient(
		option.WithBaseURL(srv.URL+"/v1/"),
		option.WithAPIKey(opts.APIKey),
		option.WithMaxRetries(0),
		option.WithHTTPClient(srv.Client()),
	)
	return c, m
}

func weatherTool() openai.ChatCompletionToolUnionParam {
	return openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name: "get_weather",
		Parameters: shared.FunctionParameters{
			"type":       "object",
			"properties": map[string]any{"city": map[string]any{"type": "string"}},
		},
	})
}

func oaParams(fault ...string) (openai.ChatCompletionNewParams, []option.RequestOption) {
	p := openai.ChatCompletionNewParams{
		Model:    "gpt-4o",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?")},
	}
	var opts []option.RequestOption
	if len(fault) > 0 {
		opts = append(opts, option.WithHeader("X-Mock-Fault", fault[0]))
	}
	return p, opts
}

func TestOpenAISDKText(t *testing.T) {
	client, m := openAIClient(t, Options{Name: "primary"})
	p, _ := oaParams()
	res, err := client.Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	got := res.Choices[0].Message.Content
	if !strings.HasPrefix(got, "mock primary ") {
		t.Errorf("content %q, want it to start %q", got, "mock primary ")
	}
	if res.Choices[0].FinishReason != "stop" || res.Object != "chat.completion" || res.Model != "gpt-4o" {
		t.Errorf("finish %q object %q model %q", res.Choices[0].FinishReason, res.Object, res.Model)
	}
	body := m.Requests()[0].Body
	if want := int64((len(body) + 3) / 4); res.Usage.PromptTokens != want {
		t.Errorf("prompt tokens %d, want ceil(%d/4)=%d", res.Usage.PromptTokens, len(body), want)
	}
	if res.Usage.CompletionTokens != defaultTokens || res.Usage.TotalTokens != res.Usage.PromptTokens+defaultTokens {
		t.Errorf("usage %+v", res.Usage)
	}
}

func TestOpenAISDKStreamAccumulates(t *testing.T) {
	client, _ := openAIClient(t, Options{Name: "b"})
	p, opts := oaParams("tokens=13;cached=4")
	want, err := client.Chat.Completions.New(context.Background(), p, opts...)
	if err != nil {
		t.Fatal(err)
	}

	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := client.Chat.Completions.NewStreaming(context.Background(), p, opts...)
	var acc openai.ChatCompletionAccumulator
	deltas, finished := 0, false
	for stream.Next() {
		chunk := stream.Current()
		if !acc.AddChunk(chunk) {
			t.Fatalf("accumulator rejected chunk %s", chunk.RawJSON())
		}
		for _, ch := range chunk.Choices {
			if ch.Delta.Content != "" {
				deltas++
				if len(ch.Delta.Content) > 4 {
					t.Errorf("delta %q longer than 4 bytes", ch.Delta.Content)
				}
			}
		}
		if _, ok := acc.JustFinishedContent(); ok {
			finished = true
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	got := acc.Choices[0].Message.Content
	if got != want.Choices[0].Message.Content || !strings.HasPrefix(got, "mock b ") {
		t.Errorf("streamed %q, non-streamed %q", got, want.Choices[0].Message.Content)
	}
	if !finished || acc.Choices[0].FinishReason != "stop" {
		t.Errorf("finished %v, finish reason %q", finished, acc.Choices[0].FinishReason)
	}
	if deltas != 13 || acc.Usage.CompletionTokens != 13 || want.Usage.CompletionTokens != 13 {
		t.Errorf("deltas %d, stream usage %d, non-stream usage %d; want 13", deltas, acc.Usage.CompletionTokens, want.Usage.CompletionTokens)
	}
	if acc.Usage.PromptTokensDetails.CachedTokens != 4 || want.Usage.PromptTokensDetails.CachedTokens != 4 {
		t.Errorf("cached %d / %d, want 4", acc.Usage.PromptTokensDetails.CachedTokens, want.Usage.PromptTokensDetails.CachedTokens)
	}
}

func TestOpenAISDKToolCalls(t *testing.T) {
	client, _ := openAIClient(t, Options{})
	p, opts := oaParams("tools=2")
	p.Tools = []openai.ChatCompletionToolUnionParam{weatherTool()}

	res, err := client.Chat.Completions.New(context.Background(), p, opts...)
	if err != nil {
		t.Fatal(err)
	}
	msg := res.Choices[0].Message
	if res.Choices[0].FinishReason != "tool_calls" || len(msg.ToolCalls) != 2 {
		t.Fatalf("finish %q, %d tool calls", res.Choices[0].FinishReason, len(msg.ToolCalls))
	}
	for _, tc := range msg.ToolCalls {
		if tc.Function.Name != "get_weather" || tc.Function.Arguments != `{"city":"Paris"}` || !strings.HasPrefix(tc.ID, "call_") {
			t.Errorf("tool call %+v", tc)
		}
	}
	if msg.ToolCalls[0].ID == msg.ToolCalls[1].ID {
		t.Error("parallel calls share an id")
	}

	stream := client.Chat.Completions.NewStreaming(context.Background(), p, opts...)
	var acc openai.ChatCompletionAccumulator
	var done []openai.FinishedChatCompletionToolCall
	for stream.Next() {
		acc.AddChunk(stream.Current())
		if tc, ok := acc.JustFinishedToolCall(); ok {
			done = append(done, tc)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(done) != 2 || done[0].Arguments != `{"city":"Paris"}` || done[1].Index != 1 {
		t.Errorf("finished tool calls %+v", done)
	}
	if acc.Choices[0].FinishReason != "tool_calls" || !strings.HasPrefix(acc.Choices[0].Message.ToolCalls[0].ID, "call_") {
		t.Errorf("accumulated %+v", acc.Choices[0])
	}

	// The tool result goes back: now the model answers with text.
	p.Messages = append(p.Messages, msg.ToParam(),
		openai.ToolMessage("18C and sunny", msg.ToolCalls[0].ID),
		openai.ToolMessage("18C and sunny", msg.ToolCalls[1].ID))
	res, err = client.Chat.Completions.New(context.Background(), p, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if res.Choices[0].FinishReason != "stop" || !strings.HasPrefix(res.Choices[0].Message.Content, "mock") {
		t.Errorf("after tool result: %+v", res.Choices[0])
	}
}

func TestOpenAISDKForcedToolAndArgs(t *testing.T) {
	client, _ := openAIClient(t, Options{})
	p, opts := oaParams(`args={"city":"Lyon","days":3}`)
	p.Tools = []openai.ChatCompletionToolUnionParam{weatherTool(), openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_time"})}
	p.ToolChoice = openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_time"})
	res, err := client.Chat.Completions.New(context.Background(), p, opts...)
	if err != nil {
		t.Fatal(err)
	}
	tc := res.Choices[0].Message.ToolCalls
	if len(tc) != 1 || tc[0].Function.Name != "get_time" || tc[0].Function.Arguments != `{"city":"Lyon","days":3}` {
		t.Errorf("tool calls %+v", tc)
	}
	p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("none")}
	res, err = client.Chat.Completions.New(context.Background(), p, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Choices[0].Message.ToolCalls) != 0 || res.Choices[0].Message.Content == "" {
		t.Errorf("tool_choice none: %+v", res.Choices[0].Message)
	}
}

func TestOpenAISDKRefusal(t *testing.T) {
	client, _ := openAIClient(t, Options{})
	p, opts := oaParams("refusal")
	res, err := client.Chat.Completions.New(context.Background(), p, opts...)
	if err != nil {
		t.Fatal(err)
	}
	msg := res.Choices[0].Message
	if msg.Refusal != defaultRefusal || msg.Content != "" {
		t.Errorf("refusal %q content %q", msg.Refusal, msg.Content)
	}
	if msg.JSON.Content.Raw() != "null" {
		t.Errorf("content is %s, want null", msg.JSON.Content.Raw())
	}

	stream := client.Chat.Completions.NewStreaming(context.Background(), p, opts...)
	var acc openai.ChatCompletionAccumulator
	var refusal string
	for stream.Next() {
		acc.AddChunk(stream.Current())
		if r, ok := acc.JustFinishedRefusal(); ok {
			refusal = r
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if refusal != defaultRefusal || acc.Choices[0].Message.Refusal != defaultRefusal {
		t.Errorf("streamed refusal %q / %q", refusal, acc.Choices[0].Message.Refusal)
	}
	if int(res.Usage.CompletionTokens) != len(pieces(defaultRefusal)) {
		t.Errorf("usage %d, want %d refusal deltas", res.Usage.CompletionTokens, len(pieces(defaultRefusal)))
	}
}

func TestOpenAISDKErrors(t *testing.T) {
	tests := []struct {
		name       string
		key        string // client key; the mock expects the default
		fault      string
		status     int
		typ, code  string
		retryAfter string
	}{
		{"wrong key", "sk-wrong-key-9999", "", 401, "invalid_request_error", "invalid_api_key", ""},
		{"401", "", "status=401", 401, "invalid_request_error", "invalid_api_key", ""},
		{"429 tokens", "", "status=429;retry_after=2", 429, "tokens", "rate_limit_exceeded", "2"},
		{"429 requests", "", "status=429;error_type=requests", 429, "requests", "rate_limit_exceeded", ""},
		{"429 quota", "", "status=429;error_code=insufficient_quota", 429, "insufficient_quota", "insufficient_quota", ""},
		{"404", "", "status=404", 404, "invalid_request_error", "model_not_found", ""},
		{"500", "", "status=500", 500, "server_error", "", ""},
		{"503", "", "status=503", 503, "server_error", "", ""},
		{"529", "", "status=529", 529, "server_error", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client, _ := openAIClient(t, Options{})
			p, opts := oaParams(tc.fault)
			if tc.key != "" {
				opts = append(opts, option.WithAPIKey(tc.key))
			}
			_, err := client.Chat.Completions.New(context.Background(), p, opts...)
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("error %v (%T), want *openai.Error", err, err)
			}
			if apiErr.StatusCode != tc.status || apiErr.Type != tc.typ || apiErr.Code != tc.code || apiErr.Message == "" {
				t.Errorf("got %d type %q code %q msg %q", apiErr.StatusCode, apiErr.Type, apiErr.Code, apiErr.Message)
			}
			if got := apiErr.Response.Header.Get("Retry-After"); got != tc.retryAfter {
				t.Errorf("Retry-After %q, want %q", got, tc.retryAfter)
			}
			if !strings.HasPrefix(apiErr.Response.Header.Get("x-request-id"), "req_") {
				t.Errorf("x-request-id %q", apiErr.Response.Header.Get("x-request-id"))
			}
		})
	}
}

// Stream faults surface as errors in the SDK, never as a normal end.
func TestOpenAISDKStreamFaults(t *testing.T) {
	for _, fault := range []string{"error_after=2", "die_after=2", "malformed_after=1", "error_after=0;error_type=server_error;message=boom"} {
		t.Run(fault, func(t *testing.T) {
			client, _ := openAIClient(t, Options{})
			p, opts := oaParams(fault)
			p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
			stream := client.Chat.Completions.NewStreaming(context.Background(), p, opts...)
			n := 0
			for stream.Next() {
				n++
			}
			if stream.Err() == nil {
				t.Fatalf("stream ended cleanly after %d chunks", n)
			}
			if strings.HasPrefix(fault, "error_after") && !strings.Contains(stream.Err().Error(), "received error while streaming") {
				t.Errorf("error %v, want the SDK's stream error", stream.Err())
			}
		})
	}
	t.Run("non-streaming die_after", func(t *testing.T) {
		client, _ := openAIClient(t, Options{})
		p, opts := oaParams("die_after=1")
		if _, err := client.Chat.Completions.New(context.Background(), p, opts...); err == nil {
			t.Fatal("cut body read as a success")
		}
	})
	t.Run("non-streaming error_after", func(t *testing.T) {
		client, _ := openAIClient(t, Options{})
		p, opts := oaParams("error_after=1")
		_, err := client.Chat.Completions.New(context.Background(), p, opts...)
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusInternalServerError || apiErr.Type != "server_error" {
			t.Fatalf("error %v", err)
		}
	})
}

func TestOpenAISDKModels(t *testing.T) {
	client, _ := openAIClient(t, Options{Model: "gpt-4.1"})
	page, err := client.Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 || page.Data[0].ID != "gpt-4.1" {
		t.Errorf("models %+v", page.Data)
	}
	model, err := client.Models.Get(context.Background(), "gpt-4o")
	if err != nil || model.ID != "gpt-4o" {
		t.Errorf("model %+v, %v", model, err)
	}
}
