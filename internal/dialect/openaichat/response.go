package openaichat

import (
	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/json/jsonwrite"
)

// finishReason maps a canonical stop reason to OpenAI's finish_reason.
// OpenAI has no distinct value for stop sequences, refusals or pauses: they
// all end the turn normally.
func finishReason(r canonical.StopReason) string {
	switch r {
	case canonical.StopMaxTokens, canonical.StopContextWindow:
		return "length"
	case canonical.StopToolUse:
		return "tool_calls"
	case canonical.StopContentFilter:
		return "content_filter"
	}
	return "stop"
}

// AppendResponse appends a chat.completion object.
func (*Dialect) AppendResponse(dst []byte, m dialect.Meta, _ *canonical.Request, resp *canonical.Response) []byte {
	dst = append(dst, `{"id":`...)
	dst = jsonwrite.AppendString(dst, m.ID)
	dst = append(dst, `,"object":"chat.completion","created":`...)
	dst = jsonwrite.AppendInt(dst, m.Created)
	dst = append(dst, `,"model":`...)
	dst = jsonwrite.AppendString(dst, m.Model)
	dst = append(dst, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	// An answer made only of tool calls or a refusal has null content, as
	// OpenAI sends it; an empty answer is "".
	if resp.Text == "" && (resp.Refusal != "" || len(resp.ToolCalls) > 0) {
		dst = append(dst, "null"...)
	} else {
		dst = jsonwrite.AppendString(dst, resp.Text)
	}
	dst = append(dst, `,"refusal":`...)
	dst = jsonwrite.AppendStringOrNull(dst, resp.Refusal)
	if t := dialect.ThinkingText(resp.Thinking); t != "" {
		dst = append(dst, `,"reasoning_content":`...)
		dst = jsonwrite.AppendString(dst, t)
	}
	if len(resp.ToolCalls) > 0 {
		dst = append(dst, `,"tool_calls":[`...)
		for i, tc := range resp.ToolCalls {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"id":`...)
			dst = jsonwrite.AppendString(dst, tc.ID)
			dst = append(dst, `,"type":"function","function":{"name":`...)
			dst = jsonwrite.AppendString(dst, tc.Name)
			dst = append(dst, `,"arguments":`...)
			dst = AppendArguments(dst, tc.Arguments)
			dst = append(dst, "}}"...)
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `,"annotations":[]},"finish_reason":"`...)
	dst = append(dst, finishReason(resp.Stop)...)
	dst = append(dst, `","logprobs":null}],"usage":`...)
	dst = appendUsage(dst, resp.Usage)
	return append(dst, `,"system_fingerprint":null}`...)
}

// appendUsage appends a CompletionUsage object. Audio and prediction counts
// are always zero: the gateway supports neither.
func appendUsage(dst []byte, u canonical.Usage) []byte {
	dst = append(dst, `{"prompt_tokens":`...)
	dst = jsonwrite.AppendInt(dst, int64(u.InputTokens))
	dst = append(dst, `,"completion_tokens":`...)
	dst = jsonwrite.AppendInt(dst, int64(u.OutputTokens))
	dst = append(dst, `,"total_tokens":`...)
	dst = jsonwrite.AppendInt(dst, int64(u.InputTokens+u.OutputTokens))
	dst = append(dst, `,"prompt_tokens_details":{"cached_tokens":`...)
	dst = jsonwrite.AppendInt(dst, int64(u.CachedInputTokens))
	dst = append(dst, `,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":`...)
	dst = jsonwrite.AppendInt(dst, int64(u.ReasoningTokens))
	return append(dst, `,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}`...)
}

// errorType is the error object's type for a status: a stable family name
// a caller can branch on, with the specific reason in code.
func errorType(status int) string {
	switch status {
	case 400, 413, 422:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 409:
		return "conflict_error"
	case 429:
		return "rate_limit_error"
	case failure.StatusClientClosedRequest:
		return "client_closed_request"
	case 502, 503:
		return "upstream_error"
	case 504:
		return "timeout_error"
	}
	if status >= 500 {
		return "server_error"
	}
	return "invalid_request_error"
}

// AppendError appends {"error":{"message","type","param","code"}}.
func (*Dialect) AppendError(dst []byte, e *failure.Public) []byte { return AppendError(dst, e) }

// AppendArguments appends a tool call's arguments as OpenAI writes them, a
// JSON string holding an object: "{}" for a call with none, which SDKs
// parse where an empty string would fail.
func AppendArguments(dst []byte, args string) []byte {
	if args == "" {
		args = "{}"
	}
	return jsonwrite.AppendString(dst, args)
}

// AppendError appends OpenAI's error object, which the Responses API
// shares: one writer keeps the two dialects' errors the same.
func AppendError(dst []byte, e *failure.Public) []byte {
	dst = append(dst, `{"error":{"message":`...)
	dst = jsonwrite.AppendString(dst, e.Message)
	dst = append(dst, `,"type":"`...)
	dst = append(dst, errorType(e.Status)...)
	dst = append(dst, `","param":`...)
	dst = jsonwrite.AppendStringOrNull(dst, e.Param)
	dst = append(dst, `,"code":`...)
	dst = jsonwrite.AppendStringOrNull(dst, e.Code)
	return append(dst, "}}"...)
}
