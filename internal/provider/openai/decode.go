package openai

import (
	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/json/jsonread"
)

// readUsage reads a usage object. prompt_tokens already includes cached
// tokens, as canonical.Usage wants.
func readUsage(d *jsonread.Decoder) canonical.Usage {
	var u canonical.Usage
	d.Object(func(key []byte) {
		switch string(key) {
		case "prompt_tokens":
			u.InputTokens = d.Int()
		case "completion_tokens":
			u.OutputTokens = d.Int()
		case "prompt_tokens_details":
			d.Object(func(key []byte) {
				switch string(key) {
				case "cached_tokens":
					u.CachedInputTokens = d.Int()
				case "cache_write_tokens":
					u.CacheWriteTokens = d.Int()
				}
			})
		case "completion_tokens_details":
			d.Object(func(key []byte) {
				if string(key) == "reasoning_tokens" {
					u.ReasoningTokens = d.Int()
				}
			})
		}
	})
	return u
}

// failedFinish reports a finish_reason by which an OpenAI-compatible server
// says the generation died rather than ended: vLLM's "abort", OpenRouter's
// "error". Other unknown values (TGI's "eos_token", ...) are natural ends.
func failedFinish(finish string) bool {
	return finish == "error" || finish == "abort"
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
