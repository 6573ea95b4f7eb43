package mock

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// The official anthropic-sdk-go is the judge of the Anthropic mock's wire
// format.

func anthropicClient(t *testing.T, opts Options) (anthropic.Client, *Mock) {
	t.Helper()
	if opts.APIKey == "" {
		opts.APIKey = "sk-ant-test-0123456789"
	}
	m, srv := newMock(t, "anthropic", opts)
	c := anthropic.NewClient(
		option.WithBaseURL(srv.URL+"/"),
		option.WithAPIKey(opts.APIKey),
		option.WithMaxRetries(0),
		option.WithHTTPClient(srv.Client()),
	)
	return c, m
}

func anParams(fault ...string) (anthropic.MessageNewParams, []option.RequestOption) {
	p := anthropic.MessageNewParams{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 256,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Paris?"))},
	}
	var opts []option.RequestOption
	if len(fault) > 0 {
		opts = append(opts, option.WithHeader("X-Mock-Fault", fault[0]))
	}
	return p, opts
}

func anWeatherTool(name string) anthropic.ToolUnionParam {
	return anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
		Name:        name,
		InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}},
	}}
}

// accumulate streams p and builds the message the SDK's way; it returns the
// message, the number of content deltas and the stream's error.
func accumulate(t *testing.T, client anthropic.Client, p anthropic.MessageNewParams, opts []option.RequestOption) (anthropic.Message, int, error) {
	t.Helper()
	stream := client.Messages.NewStreaming(context.Background(), p, opts...)
	defer stream.Close()
	var msg anthropic.Message
	deltas := 0
	for stream.Next() {
		ev := stream.Current()
		if err := msg.Accumulate(ev); err != nil {
			t.Fatalf("Accumulate(%s): %v", ev.RawJSON(), err)
		}
		if ev.Type == "content_block_delta" {
			d := ev.Delta.Text + ev.Delta.PartialJSON
			if d == "" || len(d) > 4 {
				t.Errorf("content delta %q: want 1..4 bytes", d)
			}
			deltas++
		}
	}
	return msg, deltas, stream.Err()
}

func TestAnthropicSDKText(t *testing.T) {
	client, m := anthropicClient(t, Options{Name: "primary"})
	p, opts := anParams("cached=5")
	res, err := client.Messages.New(context.Background(), p, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 1 || !strings.HasPrefix(res.Content[0].Text, "mock primary ") {
		t.Fatalf("content %+v", res.Content)
	}
	if res.StopReason != anthropic.StopReasonEndTurn || res.Role != "assistant" || string(res.Model) != "claude-sonnet-4-5" || !strings.HasPrefix(res.ID, "msg_01") {
		t.Errorf("stop %q role %q model %q id %q", res.StopReason, res.Role, res.Model, res.ID)
	}
	total := int64((len(m.Requests()[0].Body) + 3) / 4)
	u := res.Usage
	if u.OutputTokens != defaultTokens || u.CacheReadInputTokens != 5 || u.InputTokens+u.CacheReadInputTokens != total {
		t.Errorf("usage %+v, want output %d, cache_read 5 apart from input, total input %d", u, defaultTokens, total)
	}

	streamed, deltas, err := accumulate(t, client, p, opts)
	if err != nil {
		t.Fatal(err)
	}
	if streamed.Content[0].Text != res.Content[0].Text || streamed.StopReason != res.StopReason {
		t.Errorf("streamed %q (%s), non-streamed %q (%s)", streamed.Content[0].Text, streamed.StopReason, res.Content[0].Text, res.StopReason)
	}
	su := streamed.Usage
	total = int64((len(m.Requests()[1].Body) + 3) / 4) // the streaming body differs ("stream":true)
	if int(su.OutputTokens) != deltas || deltas != defaultTokens || su.CacheReadInputTokens != 5 || su.InputTokens+5 != total {
		t.Errorf("streamed usage %+v with %d deltas", su, deltas)
	}
}

func TestAnthropicSDKMaxTokensAndStop(t *testing.T) {
	client, _ := anthropicClient(t, Options{Name: "x"})
	p, _ := anParams()
	p.MaxTokens = 3
	res, err := client.Messages.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != anthropic.StopReasonMaxTokens || res.Usage.OutputTokens != 3 {
		t.Errorf("stop %q output %d", res.StopReason, res.Usage.OutputTokens)
	}
	p.MaxTokens = 256
	p.StopSequences = []string{"ipsum"}
	msg, deltas, err := accumulate(t, client, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if msg.StopReason != anthropic.StopReasonStopSequence || msg.StopSequence != "ipsum" || strings.Contains(msg.Content[0].Text, "ipsum") ||
		int(msg.Usage.OutputTokens) != deltas {
		t.Errorf("stop %q seq %q text %q usage %d deltas %d", msg.StopReason, msg.StopSequence, msg.Content[0].Text, msg.Usage.OutputTokens, deltas)
	}
}

func TestAnthropicSDKToolUse(t *testing.T) {
	client, _ := anthropicClient(t, Options{})
	p, opts := anParams("tools=2")
	p.Tools = []anthropic.ToolUnionParam{anWeatherTool("get_weather"), anWeatherTool("get_time")}

	res, err := client.Messages.New(context.Background(), p, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != anthropic.StopReasonToolUse || len(res.Content) != 2 {
		t.Fatalf("stop %q, content %+v", res.StopReason, res.Content)
	}
	for i, name := range []string{"get_weather", "get_time"} {
		b := res.Content[i]
		if b.Type != "tool_use" || b.Name != name || string(b.Input) != `{"city":"Paris"}` || !strings.HasPrefix(b.ID, "toolu_01") {
			t.Errorf("block %d: %+v", i, b)
		}
	}

	msg, deltas, err := accumulate(t, client, p, opts)
	if err != nil {
		t.Fatal(err)
	}
	if msg.StopReason != anthropic.StopReasonToolUse || len(msg.Content) != 2 || string(msg.Content[1].Input) != `{"city":"Paris"}` {
		t.Errorf("streamed %+v", msg)
	}
	if int(msg.Usage.OutputTokens) != deltas || deltas != 2*len(pieces(defaultArgs)) {
		t.Errorf("usage %d, deltas %d", msg.Usage.OutputTokens, deltas)
	}

	// Hand the results back: the model answers with text.
	p.Messages = append(p.Messages, res.ToParam(), anthropic.NewUserMessage(
		anthropic.NewToolResultBlock(res.Content[0].ID, "18C", false),
		anthropic.NewToolResultBlock(res.Content[1].ID, "noon", false)))
	res, err = client.Messages.New(context.Background(), p, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != anthropic.StopReasonEndTurn || res.Content[0].Type != "text" {
		t.Errorf("after tool results: %+v", res)
	}

	// A forced tool wins over the declared order; disable_parallel_tool_use
	// caps tools=2 at one call.
	p, opts = anParams("tools=2")
	p.Tools = []anthropic.ToolUnionParam{anWeatherTool("get_weather"), anWeatherTool("get_time")}
	p.ToolChoice = anthropic.ToolChoiceUnionParam{OfTool: &anthropic.ToolChoiceToolParam{Name: "get_time", DisableParallelToolUse: anthropic.Bool(true)}}
	res, err = client.Messages.New(context.Background(), p, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 1 || res.Content[0].Name != "get_time" {
		t.Errorf("forced tool: %+v", res.Content)
	}
}

func TestAnthropicSDKRefusal(t *testing.T) {
	client, _ := anthropicClient(t, Options{})
	p, opts := anParams("refusal")
	res, err := client.Messages.New(context.Background(), p, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != anthropic.StopReasonRefusal || len(res.Content) != 0 || res.Usage.OutputTokens != 0 {
		t.Errorf("stop %q content %+v output %d", res.StopReason, res.Content, res.Usage.OutputTokens)
	}
	if res.StopDetails.Type != "refusal" || res.StopDetails.Explanation != defaultRefusal || res.StopDetails.JSON.Category.Raw() != "null" {
		t.Errorf("stop_details %s", res.StopDetails.RawJSON())
	}

	// With tokens= some text goes out before the classifier cuts in.
	p, opts = anParams("refusal;tokens=3;message=Cannot help with that.")
	msg, deltas, err := accumulate(t, client, p, opts)
	if err != nil {
		t.Fatal(err)
	}
	if msg.StopReason != anthropic.StopReasonRefusal || deltas != 3 || msg.Usage.OutputTokens != 3 || msg.StopDetails.Explanation != "Cannot help with that." {
		t.Errorf("streamed refusal %+v, %d deltas", msg, deltas)
	}
}

func TestAnthropicSDKErrors(t *testing.T) {
	tests := []struct {
		name       string
		key        string
		fault      string
		status     int
		typ        anthropic.ErrorType
		retryAfter string
	}{
		{"wrong key", "sk-ant-wrong", "", 401, anthropic.ErrorTypeAuthenticationError, ""},
		{"401", "", "status=401", 401, anthropic.ErrorTypeAuthenticationError, ""},
		{"429", "", "status=429;retry_after=7", 429, anthropic.ErrorTypeRateLimitError, "7"},
		{"529", "", "status=529", 529, anthropic.ErrorTypeOverloadedError, ""},
		{"402", "", "status=402", 402, anthropic.ErrorTypeBillingError, ""},
		{"credit as 400", "", "status=400;error_type=invalid_request_error;message=Your credit balance is too low to access the Anthropic API.", 400, anthropic.ErrorTypeInvalidRequestError, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client, _ := anthropicClient(t, Options{})
			p, opts := anParams(tc.fault)
			if tc.key != "" {
				opts = append(opts, option.WithAPIKey(tc.key))
			}
			_, err := client.Messages.New(context.Background(), p, opts...)
			var apiErr *anthropic.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("error %v (%T), want *anthropic.Error", err, err)
			}
			if apiErr.StatusCode != tc.status || apiErr.Type() != tc.typ || !strings.HasPrefix(apiErr.RequestID, "req_") {
				t.Errorf("got %d %q request id %q", apiErr.StatusCode, apiErr.Type(), apiErr.RequestID)
			}
			if got := apiErr.Response.Header.Get("retry-after"); got != tc.retryAfter {
				t.Errorf("retry-after %q, want %q", got, tc.retryAfter)
			}
		})
	}
}

func TestAnthropicSDKStreamFaults(t *testing.T) {
	t.Run("error event", func(t *testing.T) {
		client, _ := anthropicClient(t, Options{})
		p, opts := anParams("error_after=2")
		_, deltas, err := accumulate(t, client, p, opts)
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) || apiErr.Type() != anthropic.ErrorTypeOverloadedError || deltas != 2 {
			t.Fatalf("error %v after %d deltas, want overloaded_error after 2", err, deltas)
		}
	})
	for _, fault := range []string{"die_after=2", "malformed_after=1", "die_after=0"} {
		t.Run(fault, func(t *testing.T) {
			client, _ := anthropicClient(t, Options{})
			p, opts := anParams(fault)
			stream := client.Messages.NewStreaming(context.Background(), p, opts...)
			n := 0
			for stream.Next() {
				n++
			}
			if stream.Err() == nil {
				t.Fatalf("stream ended cleanly after %d events", n)
			}
		})
	}
	t.Run("non-streaming error_after", func(t *testing.T) {
		client, _ := anthropicClient(t, Options{})
		p, opts := anParams("error_after=1")
		_, err := client.Messages.New(context.Background(), p, opts...)
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 529 || apiErr.Type() != anthropic.ErrorTypeOverloadedError {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("non-streaming die_after", func(t *testing.T) {
		client, _ := anthropicClient(t, Options{})
		p, opts := anParams("die_after=1")
		if _, err := client.Messages.New(context.Background(), p, opts...); err == nil {
			t.Fatal("cut body read as a success")
		}
	})
}
