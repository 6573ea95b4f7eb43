package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

// thinkers are the rungs whose provider shows its reasoning (Anthropic,
// Bedrock's Claude, Gemini's thoughts); OpenAI reasons unseen and reports
// only the tokens.
var thinkers = map[string]bool{confAnthropic: true, confBedrock: true, confGemini: true, confOpenAI: false}

// countsReasoning: Bedrock's Converse reports one output count, reasoning
// included, and no reasoning share of it: the billed total is right, the
// share unknown (0).
func countsReasoning(model string) bool { return model != confBedrock }

// Extended thinking through the Anthropic SDK: plain, streamed, and a tool
// call between thinking turns whose signed reasoning goes back unchanged
// (the mocks verify the signature they issued).
func TestConformanceThinking(t *testing.T) {
	h := newConformanceHarness(t)
	ctx := context.Background()
	weather := anthropic.ToolParam{Name: "get_weather", InputSchema: anthropic.ToolInputSchemaParam{
		Properties: map[string]any{"city": map[string]any{"type": "string"}}, Required: []string{"city"}}}
	for model, shows := range thinkers {
		t.Run("anthropic-sdk "+model, func(t *testing.T) {
			c := h.anthropic()
			params := anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: 2048,
				Thinking: anthropic.ThinkingConfigParamOfEnabled(1024),
				Tools:    []anthropic.ToolUnionParam{{OfTool: &weather}},
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Paris?"))}}
			msg, err := c.Messages.New(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			checkThinking(t, msg, shows, countsReasoning(model), "plain")
			// The tool round: the answer appended as the SDK builds it, the
			// result after it; the provider checks the reasoning it signed.
			var toolID string
			for _, b := range msg.Content {
				if b.Type == "tool_use" {
					toolID = b.ID
				}
			}
			if toolID == "" {
				t.Fatalf("no tool call: %+v", msg.Content)
			}
			params.Messages = append(params.Messages, msg.ToParam(),
				anthropic.NewUserMessage(anthropic.NewToolResultBlock(toolID, "21C, sunny", false)))
			again, err := c.Messages.New(ctx, params)
			if err != nil {
				t.Fatalf("the second turn, with the signed reasoning sent back: %v", err)
			}
			checkThinking(t, again, shows, countsReasoning(model), "after the tool call")
			// Streamed, accumulated as the SDK documents.
			stream := c.Messages.NewStreaming(ctx, params)
			var acc anthropic.Message
			for stream.Next() {
				if err := acc.Accumulate(stream.Current()); err != nil {
					t.Fatal(err)
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			checkThinking(t, &acc, shows, countsReasoning(model), "streamed")
		})
	}
	t.Run("a tampered signature is refused by the provider that signed it", func(t *testing.T) {
		// The converse of the round trips above: the mocks do verify.
		c := h.anthropic()
		params := anthropic.MessageNewParams{Model: confAnthropic, MaxTokens: 2048, Thinking: anthropic.ThinkingConfigParamOfEnabled(1024),
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hi"))}}
		msg, err := c.Messages.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		p := msg.ToParam()
		p.OfAssistant.Content[0].OfThinking.Signature += "x"
		params.Messages = append(params.Messages, p, anthropic.NewUserMessage(anthropic.NewTextBlock("Again")))
		_, err = c.Messages.New(ctx, params)
		var ae *anthropic.Error
		if !errors.As(err, &ae) || ae.StatusCode != 400 {
			t.Fatalf("a tampered signature: %v", err)
		}
	})
	t.Run("reasoning one family signed is refused by another family's rung", func(t *testing.T) {
		c := h.anthropic()
		params := anthropic.MessageNewParams{Model: confAnthropic, MaxTokens: 2048, Thinking: anthropic.ThinkingConfigParamOfEnabled(1024),
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hi"))}}
		msg, err := c.Messages.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		params.Model = confGemini
		params.Messages = append(params.Messages, msg.ToParam(), anthropic.NewUserMessage(anthropic.NewTextBlock("Again")))
		_, err = c.Messages.New(ctx, params)
		var ae *anthropic.Error
		if !errors.As(err, &ae) || ae.StatusCode != 400 || !strings.Contains(ae.Error(), "signed by claude") {
			t.Fatalf("Claude's reasoning sent to a Gemini-only model: %v", err)
		}
	})
}

// checkThinking: a provider that shows reasoning gives a thinking block
// with its text and a signature, first; every provider counts the tokens.
func checkThinking(t *testing.T, msg *anthropic.Message, shows, counts bool, when string) {
	t.Helper()
	if th := msg.Usage.OutputTokensDetails.ThinkingTokens; counts && (th <= 0 || th >= msg.Usage.OutputTokens) || !counts && th != 0 {
		t.Errorf("%s: thinking_tokens %d of %d output tokens", when, msg.Usage.OutputTokensDetails.ThinkingTokens, msg.Usage.OutputTokens)
	}
	var thinking *anthropic.ContentBlockUnion
	for i := range msg.Content {
		if msg.Content[i].Type == "thinking" {
			thinking = &msg.Content[i]
		}
	}
	switch {
	case !shows && thinking != nil:
		t.Errorf("%s: a thinking block from a provider that shows none: %+v", when, thinking)
	case shows && (thinking == nil || msg.Content[0].Type != "thinking"):
		t.Fatalf("%s: no thinking block first: %s", when, msg.RawJSON())
	case shows && (thinking.Thinking == "" || thinking.Signature == ""):
		t.Errorf("%s: thinking %q signature %q", when, thinking.Thinking, thinking.Signature)
	}
}

// Reasoning through OpenAI's Responses API: reasoning items with their
// summary, pushed back with the output as users do, and streamed.
func TestConformanceThinkingResponses(t *testing.T) {
	h := newConformanceHarness(t)
	ctx := context.Background()
	tool := responses.ToolParamOfFunction("get_weather", map[string]any{"type": "object",
		"properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}}, false)
	for model, shows := range thinkers {
		t.Run(model, func(t *testing.T) {
			c := h.openai()
			input := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("Weather in Paris?", responses.EasyInputMessageRoleUser)}
			params := responses.ResponseNewParams{Model: model, MaxOutputTokens: openai.Int(2048),
				Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortLow, Summary: shared.ReasoningSummaryAuto},
				Tools:     []responses.ToolUnionParam{tool},
				Input:     responses.ResponseNewParamsInputUnion{OfInputItemList: input}}
			resp, err := c.Responses.New(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			if (resp.Usage.OutputTokensDetails.ReasoningTokens > 0) != countsReasoning(model) {
				t.Errorf("reasoning_tokens %d", resp.Usage.OutputTokensDetails.ReasoningTokens)
			}
			var callID string
			sawReasoning := false
			for _, item := range resp.Output {
				switch item.Type {
				case "reasoning":
					r := item.AsReasoning()
					sawReasoning = true
					if len(r.Summary) != 1 || r.Summary[0].Text == "" || !strings.HasPrefix(r.EncryptedContent, "spw:") {
						t.Errorf("reasoning item %s", r.RawJSON())
					}
					p := r.ToParam()
					input = append(input, responses.ResponseInputItemUnionParam{OfReasoning: &p})
				case "function_call":
					fc := item.AsFunctionCall()
					callID = fc.CallID
					p := fc.ToParam()
					input = append(input, responses.ResponseInputItemUnionParam{OfFunctionCall: &p})
				case "message":
					m := item.AsMessage().ToParam()
					input = append(input, responses.ResponseInputItemUnionParam{OfOutputMessage: &m})
				}
			}
			if sawReasoning != shows || resp.Output[0].Type == "reasoning" != shows {
				t.Fatalf("reasoning item shown %v, want %v: %s", sawReasoning, shows, resp.RawJSON())
			}
			if callID == "" {
				t.Fatalf("no function call: %s", resp.RawJSON())
			}
			out := responses.ResponseInputItemParamOfFunctionCallOutput(`{"celsius":21}`)
			out.OfFunctionCallOutput.CallID = openai.String(callID)
			input = append(input, out)
			params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: input}
			if _, err := c.Responses.New(ctx, params); err != nil {
				t.Fatalf("the second turn, with the reasoning items pushed back: %v", err)
			}
			stream := c.Responses.NewStreaming(ctx, params)
			deltas, done := 0, false
			for stream.Next() {
				ev := stream.Current()
				switch ev.Type {
				case "response.reasoning_summary_text.delta":
					deltas++
				case "response.completed":
					done = true
					if shows && ev.Response.Output[0].Type != "reasoning" {
						t.Errorf("completed output without the reasoning item: %s", ev.Response.RawJSON())
					}
				}
			}
			if err := stream.Err(); err != nil || !done || (deltas > 0) != shows {
				t.Errorf("stream: err %v, completed %v, %d summary deltas (shows %v)", err, done, deltas, shows)
			}
		})
	}
}

// Reasoning through Chat Completions: reasoning_effort asks, the usage
// counts, and a provider's visible reasoning comes as reasoning_content.
func TestConformanceThinkingChat(t *testing.T) {
	h := newConformanceHarness(t)
	ctx := context.Background()
	for model, shows := range thinkers {
		t.Run(model, func(t *testing.T) {
			c := h.openai()
			params := openai.ChatCompletionNewParams{Model: model, ReasoningEffort: shared.ReasoningEffortLow,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")}}
			cc, err := c.Chat.Completions.New(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			if (cc.Usage.CompletionTokensDetails.ReasoningTokens > 0) != countsReasoning(model) {
				t.Errorf("reasoning_tokens %d", cc.Usage.CompletionTokensDetails.ReasoningTokens)
			}
			var m struct {
				ReasoningContent string `json:"reasoning_content"`
			}
			_ = json.Unmarshal([]byte(cc.Choices[0].Message.RawJSON()), &m)
			if (m.ReasoningContent != "") != shows {
				t.Errorf("reasoning_content %q (shows %v)", m.ReasoningContent, shows)
			}
			// Multi-turn with the answer appended (reasoning_content echoed
			// and dropped).
			params.Messages = append(params.Messages, cc.Choices[0].Message.ToParam(), openai.UserMessage("Again"))
			if _, err := c.Chat.Completions.New(ctx, params); err != nil {
				t.Fatal(err)
			}
		})
	}
}
