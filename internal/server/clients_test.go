package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

// The caller dialects, each driven by its official SDK.
const (
	dChat      = "openai-chat"
	dResponses = "openai-responses"
	dMessages  = "anthropic-messages"
)

var dialects = []string{dChat, dResponses, dMessages}

// spec is what one test request asks for.
type spec struct {
	stream   bool
	tools    int // tools offered: 0, 1 or 2
	jsonMode bool
	imageB64 bool
	imageURL bool
}

// The planted image: tests look for these in the provider's request.
const (
	imgData = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
	imgURL  = "https://example.com/spillway-test.png"
)

type toolCall struct{ id, name, args string }

// outcome is what a caller saw, in terms common to every dialect.
type outcome struct {
	text    string
	refused bool // the dialect's refusal signal
	tools   []toolCall
	finish  string // stop, length, tool, refusal, filter
	in, out int
	cached  int
	// streamErr is an error after the answer began (stream) or an error
	// event/terminal in its stead; httpStatus/code an error before it.
	streamErr  error
	httpStatus int
	code       string
	message    string
	resp       *http.Response
}

func (o outcome) failedBefore() bool { return o.httpStatus != 0 }

// call sends one request in dialect d.
func call(t *testing.T, h *harness, d string, s spec) outcome {
	t.Helper()
	switch d {
	case dChat:
		return callChat(t, h, s)
	case dResponses:
		return callResponses(t, h, s)
	case dMessages:
		return callMessages(t, h, s)
	}
	t.Fatalf("unknown dialect %s", d)
	return outcome{}
}

func ctx20(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var weatherSchema = map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}}

func callChat(t *testing.T, h *harness, s spec) outcome {
	var o outcome
	c := h.client(option.WithResponseInto(&o.resp))
	parts := []openai.ChatCompletionContentPartUnionParam{openai.TextContentPart("Say hello.")}
	if s.imageB64 {
		parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "data:image/png;base64," + imgData}))
	}
	if s.imageURL {
		parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: imgURL}))
	}
	p := openai.ChatCompletionNewParams{
		Model:               publicModel,
		Messages:            []openai.ChatCompletionMessageParamUnion{openai.UserMessage(parts)},
		MaxCompletionTokens: openai.Int(64),
	}
	for i := 0; i < s.tools; i++ {
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: []string{"get_weather", "get_time"}[i], Parameters: shared.FunctionParameters(weatherSchema)}))
	}
	if s.jsonMode {
		p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
	}
	fill := func(content, refusal, finish string, tcs []openai.ChatCompletionMessageToolCallUnion, u openai.CompletionUsage) {
		o.text, o.refused = content, refusal != "" || finish == "content_filter"
		o.finish = map[string]string{"stop": "stop", "length": "length", "tool_calls": "tool", "content_filter": "filter"}[finish]
		for _, tc := range tcs {
			o.tools = append(o.tools, toolCall{tc.ID, tc.Function.Name, tc.Function.Arguments})
		}
		o.in, o.out, o.cached = int(u.PromptTokens), int(u.CompletionTokens), int(u.PromptTokensDetails.CachedTokens)
	}
	if !s.stream {
		cc, err := c.Chat.Completions.New(ctx20(t), p)
		if err != nil {
			o.fromOpenAIErr(err)
			return o
		}
		if len(cc.Choices) > 0 {
			m := cc.Choices[0].Message
			fill(m.Content, m.Refusal, cc.Choices[0].FinishReason, m.ToolCalls, cc.Usage)
		}
		return o
	}
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	st := c.Chat.Completions.NewStreaming(ctx20(t), p)
	acc := openai.ChatCompletionAccumulator{}
	n := 0
	for st.Next() {
		acc.AddChunk(st.Current())
		n++
	}
	if err := st.Err(); err != nil {
		if n == 0 {
			o.fromOpenAIErr(err)
		} else {
			o.streamErr = err
		}
	}
	if len(acc.Choices) > 0 {
		m := acc.Choices[0].Message
		fill(m.Content, m.Refusal, acc.Choices[0].FinishReason, m.ToolCalls, acc.Usage)
	}
	return o
}

func (o *outcome) fromOpenAIErr(err error) {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		o.httpStatus, o.code, o.message = apiErr.StatusCode, apiErr.Code, apiErr.Message
		o.resp = apiErr.Response
		return
	}
	o.httpStatus, o.message = -1, err.Error()
}

func callResponses(t *testing.T, h *harness, s spec) outcome {
	var o outcome
	c := h.client(option.WithResponseInto(&o.resp))
	content := responses.ResponseInputMessageContentListParam{{OfInputText: &responses.ResponseInputTextParam{Text: "Say hello."}}}
	if s.imageB64 {
		content = append(content, responses.ResponseInputContentUnionParam{OfInputImage: &responses.ResponseInputImageParam{ImageURL: openai.String("data:image/png;base64," + imgData), Detail: responses.ResponseInputImageDetailAuto}})
	}
	if s.imageURL {
		content = append(content, responses.ResponseInputContentUnionParam{OfInputImage: &responses.ResponseInputImageParam{ImageURL: openai.String(imgURL), Detail: responses.ResponseInputImageDetailAuto}})
	}
	p := responses.ResponseNewParams{
		Model: publicModel,
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			{OfMessage: &responses.EasyInputMessageParam{Role: responses.EasyInputMessageRoleUser, Content: responses.EasyInputMessageContentUnionParam{OfInputItemContentList: content}}},
		}},
		MaxOutputTokens: openai.Int(64),
	}
	for i := 0; i < s.tools; i++ {
		p.Tools = append(p.Tools, responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{
			Name: []string{"get_weather", "get_time"}[i], Parameters: weatherSchema, Strict: openai.Bool(false)}})
	}
	if s.jsonMode {
		p.Text = responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}}
	}
	fill := func(r *responses.Response) {
		for _, it := range r.Output {
			switch it.Type {
			case "message":
				for _, part := range it.Content {
					switch part.Type {
					case "output_text":
						o.text += part.Text
					case "refusal":
						o.refused = true
					}
				}
			case "function_call":
				o.tools = append(o.tools, toolCall{it.CallID, it.Name, it.Arguments.OfString})
			}
		}
		switch {
		case o.refused:
			o.finish = "refusal"
		case r.Status == "incomplete" && r.IncompleteDetails.Reason == "content_filter":
			o.finish, o.refused = "filter", true
		case r.Status == "incomplete":
			o.finish = "length"
		case len(o.tools) > 0:
			o.finish = "tool"
		default:
			o.finish = "stop"
		}
		o.in, o.out, o.cached = int(r.Usage.InputTokens), int(r.Usage.OutputTokens), int(r.Usage.InputTokensDetails.CachedTokens)
	}
	if !s.stream {
		r, err := c.Responses.New(ctx20(t), p)
		if err != nil {
			o.fromOpenAIErr(err)
			return o
		}
		fill(r)
		return o
	}
	st := c.Responses.NewStreaming(ctx20(t), p)
	n := 0
	var terminal *responses.Response
	for st.Next() {
		ev := st.Current()
		n++
		switch ev.Type {
		case "response.completed", "response.incomplete":
			r := ev.Response
			terminal = &r
		case "response.failed":
			r := ev.Response
			terminal = &r
			o.streamErr = errors.New("response.failed: " + r.Error.Message)
		case "error":
			o.streamErr = errors.New("error event: " + ev.Message)
		}
	}
	if err := st.Err(); err != nil {
		if n == 0 {
			o.fromOpenAIErr(err)
			return o
		}
		o.streamErr = err
	}
	if terminal != nil {
		fill(terminal)
	}
	if terminal == nil && o.streamErr == nil {
		o.streamErr = errors.New("the stream ended without a terminal event")
	}
	return o
}

func callMessages(t *testing.T, h *harness, s spec) outcome {
	var o outcome
	c := anthropic.NewClient(aoption.WithBaseURL(h.gw.URL+"/"), aoption.WithAPIKey(h.key), aoption.WithMaxRetries(0), aoption.WithResponseInto(&o.resp))
	blocks := []anthropic.ContentBlockParamUnion{anthropic.NewTextBlock("Say hello.")}
	if s.imageB64 {
		blocks = append(blocks, anthropic.NewImageBlockBase64("image/png", imgData))
	}
	if s.imageURL {
		blocks = append(blocks, anthropic.NewImageBlock(anthropic.URLImageSourceParam{URL: imgURL}))
	}
	p := anthropic.MessageNewParams{
		Model:     publicModel,
		MaxTokens: 64,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(blocks...)},
	}
	for i := 0; i < s.tools; i++ {
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
			Name: []string{"get_weather", "get_time"}[i], InputSchema: anthropic.ToolInputSchemaParam{Properties: weatherSchema["properties"], Required: []string{"city"}}}})
	}
	fill := func(m *anthropic.Message) {
		for _, b := range m.Content {
			switch b.Type {
			case "text":
				o.text += b.Text
			case "tool_use":
				o.tools = append(o.tools, toolCall{b.ID, b.Name, string(b.Input)})
			}
		}
		o.finish = map[string]string{"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "tool", "refusal": "refusal"}[string(m.StopReason)]
		o.refused = m.StopReason == "refusal"
		u := m.Usage
		o.in = int(u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens)
		o.out, o.cached = int(u.OutputTokens), int(u.CacheReadInputTokens)
	}
	fromErr := func(err error) {
		var apiErr *anthropic.Error
		if errors.As(err, &apiErr) {
			o.httpStatus, o.resp = apiErr.StatusCode, apiErr.Response
			var body struct {
				Error struct{ Type, Code, Message string } `json:"error"`
			}
			_ = json.Unmarshal([]byte(apiErr.RawJSON()), &body)
			o.code, o.message = body.Error.Code, body.Error.Message
			if o.code == "" {
				o.code = body.Error.Type
			}
			return
		}
		o.httpStatus, o.message = -1, err.Error()
	}
	if !s.stream {
		m, err := c.Messages.New(ctx20(t), p)
		if err != nil {
			fromErr(err)
			return o
		}
		fill(m)
		return o
	}
	st := c.Messages.NewStreaming(ctx20(t), p)
	var m anthropic.Message
	n := 0
	for st.Next() {
		if err := m.Accumulate(st.Current()); err != nil {
			o.streamErr = err
		}
		n++
	}
	if err := st.Err(); err != nil {
		if n == 0 {
			fromErr(err)
			return o
		}
		o.streamErr = err
	}
	fill(&m)
	if o.streamErr == nil && m.StopReason == "" {
		o.streamErr = errors.New("the stream ended without message_stop")
	}
	return o
}

// lastUpstream is the body the provider last received.
func (h *harness) lastUpstream(id string) string {
	rs := h.mocks[id].Requests()
	if len(rs) == 0 {
		return ""
	}
	return string(rs[len(rs)-1].Body)
}

func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
