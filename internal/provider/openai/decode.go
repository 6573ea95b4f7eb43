package openai

import (
	"encoding/json"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
)

// chatResponse is the part of a non-streamed answer the gateway uses.
type chatResponse struct {
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Choices []choice        `json:"choices"`
	Usage   *usage          `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

type choice struct {
	Index        int         `json:"index"`
	Message      respMessage `json:"message"`
	FinishReason string      `json:"finish_reason"`
}

type respMessage struct {
	Content   string         `json:"content"`
	Refusal   string         `json:"refusal"`
	ToolCalls []chatToolCall `json:"tool_calls"`
}

type usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens     int `json:"cached_tokens"`
		CacheWriteTokens int `json:"cache_write_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// canonical maps usage: prompt_tokens already includes cached tokens.
func (u *usage) canonical() canonical.Usage {
	return canonical.Usage{
		InputTokens:       u.PromptTokens,
		CachedInputTokens: u.PromptTokensDetails.CachedTokens,
		CacheWriteTokens:  u.PromptTokensDetails.CacheWriteTokens,
		OutputTokens:      u.CompletionTokens,
		ReasoningTokens:   u.CompletionTokensDetails.ReasoningTokens,
	}
}

func decodeResponse(body []byte) (*canonical.Response, error) {
	var r chatResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, failure.Malformed("chat completion body", err)
	}
	// Some compatible servers (OpenRouter) answer 200 with an error object.
	if !isNull(r.Error) {
		return nil, streamError(r.Error)
	}
	var c *choice
	for i := range r.Choices {
		if r.Choices[i].Index == 0 {
			c = &r.Choices[i]
			break
		}
	}
	if c == nil {
		return nil, failure.Malformed("chat completion without choices", nil)
	}
	resp := &canonical.Response{
		ID:      r.ID,
		Model:   r.Model,
		Text:    c.Message.Content,
		Refusal: c.Message.Refusal,
		Stop:    stopReason(c.FinishReason, c.Message.Refusal != ""),
	}
	if n := len(c.Message.ToolCalls); n > 0 {
		resp.ToolCalls = make([]canonical.ToolCall, n)
		for i, tc := range c.Message.ToolCalls {
			args := tc.Function.Arguments
			if args == "" {
				args = "{}"
			}
			resp.ToolCalls[i] = canonical.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: args}
		}
	}
	if r.Usage != nil {
		resp.Usage = r.Usage.canonical()
	}
	return resp, nil
}

// stopReason maps finish_reason. A refusal arrives with "stop"; it is the
// refusal, not a natural end, that the caller must learn.
func stopReason(finish string, refused bool) canonical.StopReason {
	switch finish {
	case "length":
		return canonical.StopMaxTokens
	case "tool_calls", "function_call":
		return canonical.StopToolUse
	case "content_filter":
		return canonical.StopContentFilter
	}
	if refused {
		return canonical.StopRefusal
	}
	return canonical.StopEnd
}
