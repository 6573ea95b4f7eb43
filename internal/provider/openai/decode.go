package openai

import (
	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/provider/wirejson"
)

// readUsage reads a usage object. prompt_tokens already includes cached
// tokens, as canonical.Usage wants.
func readUsage(d *wirejson.Decoder) canonical.Usage {
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

// decodeResponse reads a non-streamed chat.completion.
func decodeResponse(body []byte) (*canonical.Response, error) {
	var (
		d      wirejson.Decoder
		resp   canonical.Response
		errRaw []byte
		found  bool
		finish string
	)
	d.Reset(body)
	d.Object(func(key []byte) {
		switch string(key) {
		case "id":
			resp.ID = d.Str()
		case "model":
			resp.Model = d.Str()
		case "choices":
			d.Array(func() {
				if f, ok := readChoice(&d, &resp); ok {
					found, finish = true, f
				}
			})
		case "usage":
			resp.Usage = readUsage(&d)
		case "error":
			if !d.IsNull() {
				errRaw = d.Raw()
			}
		}
	})
	if err := d.End(); err != nil {
		return nil, failure.Malformed("chat completion body", err)
	}
	// Some compatible servers (OpenRouter) answer 200 with an error object.
	if errRaw != nil {
		return nil, streamError(errRaw)
	}
	if !found {
		return nil, failure.Malformed("chat completion without choice 0", nil)
	}
	if failedFinish(finish) {
		return nil, failure.Truncated("finish_reason " + finish)
	}
	return &resp, nil
}

// readChoice reads one choice into resp when it is choice 0, and reports
// whether it was, with its finish_reason.
func readChoice(d *wirejson.Decoder, resp *canonical.Response) (string, bool) {
	var (
		index                 int
		text, refusal, finish string
		calls                 []canonical.ToolCall
	)
	d.Object(func(key []byte) {
		switch string(key) {
		case "index":
			index = d.Int()
		case "finish_reason":
			finish = d.Str()
		case "message":
			d.Object(func(key []byte) {
				switch string(key) {
				case "content":
					text = d.Str()
				case "refusal":
					refusal = d.Str()
				case "tool_calls":
					d.Array(func() { calls = append(calls, readToolCall(d)) })
				}
			})
		}
	})
	if index != 0 || d.Err() != nil {
		return "", false
	}
	resp.Text, resp.Refusal, resp.ToolCalls = text, refusal, calls
	resp.Stop = stopReason(finish, refusal != "")
	return finish, true
}

// failedFinish reports a finish_reason by which an OpenAI-compatible server
// says the generation died rather than ended: vLLM's "abort", OpenRouter's
// "error". Other unknown values (TGI's "eos_token", ...) are natural ends.
func failedFinish(finish string) bool {
	return finish == "error" || finish == "abort"
}

func readToolCall(d *wirejson.Decoder) canonical.ToolCall {
	var tc canonical.ToolCall
	d.Object(func(key []byte) {
		switch string(key) {
		case "id":
			tc.ID = d.Str()
		case "function":
			d.Object(func(key []byte) {
				switch string(key) {
				case "name":
					tc.Name = d.Str()
				case "arguments":
					tc.Arguments = d.Str()
				}
			})
		}
	})
	if tc.Arguments == "" {
		tc.Arguments = "{}"
	}
	return tc
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
