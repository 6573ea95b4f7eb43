package anthropic

import (
	"net/http"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/json/jsonread"
)

// usage is Anthropic's usage object. The has* flags matter in streams,
// where message_delta may carry only some counts and the rest come from
// message_start.
type usage struct {
	input, output, cacheWrite, cacheRead  int
	thinking                              int
	hasInput, hasCacheWrite, hasCacheRead bool
}

func readUsage(d *jsonread.Decoder) usage {
	var u usage
	d.Object(func(key []byte) {
		switch string(key) {
		case "input_tokens":
			u.input, u.hasInput = d.Int(), true
		case "output_tokens":
			u.output = d.Int()
		case "cache_creation_input_tokens":
			u.cacheWrite, u.hasCacheWrite = d.Int(), true
		case "cache_read_input_tokens":
			u.cacheRead, u.hasCacheRead = d.Int(), true
		case "output_tokens_details":
			d.Object(func(key []byte) {
				if string(key) == "thinking_tokens" {
					u.thinking = d.Int()
				}
			})
		}
	})
	return u
}

// canonical maps usage. Anthropic's input_tokens excludes cached tokens;
// canonical InputTokens counts every prompt token.
func (u *usage) canonical() canonical.Usage {
	return canonical.Usage{
		InputTokens:       u.input + u.cacheWrite + u.cacheRead,
		CachedInputTokens: u.cacheRead,
		CacheWriteTokens:  u.cacheWrite,
		// output_tokens includes thinking; thinking_tokens is its share.
		OutputTokens:    u.output,
		ReasoningTokens: u.thinking,
	}
}

// stopReason maps stop_reason; an unknown or missing reason reads as a
// natural end.
func stopReason(s []byte) canonical.StopReason {
	switch string(s) {
	case "max_tokens":
		return canonical.StopMaxTokens
	case "stop_sequence":
		return canonical.StopSequence
	case "tool_use":
		return canonical.StopToolUse
	case "refusal":
		return canonical.StopRefusal
	case "pause_turn":
		return canonical.StopPause
	case "model_context_window_exceeded":
		return canonical.StopContextWindow
	}
	return canonical.StopEnd
}

// readStopDetails returns stop_details.explanation.
func readStopDetails(d *jsonread.Decoder) string {
	var explanation string
	d.Object(func(key []byte) {
		if string(key) == "explanation" {
			explanation = d.Str()
		}
	})
	return explanation
}

// blockKind is a content block's type, as far as the gateway cares.
type blockKind uint8

const (
	blockOther blockKind = iota
	blockText
	blockToolUse
	blockThinking
	blockRedacted
)

func blockKindOf(b []byte) blockKind {
	switch string(b) {
	case "text":
		return blockText
	case "tool_use":
		return blockToolUse
	case "thinking":
		return blockThinking
	case "redacted_thinking":
		return blockRedacted
	}
	return blockOther
}

// readErrorObject reads {"type","message"} into a.
func readErrorObject(d *jsonread.Decoder, a *failure.Answer) {
	d.Object(func(key []byte) {
		switch string(key) {
		case "type":
			a.Type = d.Str()
		case "message":
			a.Message = d.Str()
		}
	})
}

// parseError reads an error body {"type":"error","error":{...}} and reports
// whether it had that shape.
func parseError(body []byte, a *failure.Answer) bool {
	var d jsonread.Decoder
	d.Reset(body)
	found := false
	var tmp failure.Answer
	if d.Peek() != '{' {
		return false
	}
	d.Object(func(key []byte) {
		if string(key) == "error" && d.Peek() == '{' {
			found = true
			readErrorObject(&d, &tmp)
		}
	})
	if d.End() != nil || !found {
		return false
	}
	a.Type, a.Message = tmp.Type, tmp.Message
	return true
}

// parseErrorBody is provider.ErrorAnswer's parser; a body of another shape
// (an HTML page from a proxy) leaves the answer to its status.
func parseErrorBody(body []byte, a *failure.Answer) { parseError(body, a) }

// statusOf is the HTTP status an error type stands for, for errors that
// arrive inside a 200 (stream error events).
func statusOf(typ string) int {
	switch typ {
	case "invalid_request_error":
		return http.StatusBadRequest
	case "authentication_error":
		return http.StatusUnauthorized
	case "billing_error":
		return http.StatusPaymentRequired
	case "permission_error":
		return http.StatusForbidden
	case "not_found_error":
		return http.StatusNotFound
	case "request_too_large":
		return http.StatusRequestEntityTooLarge
	case "rate_limit_error":
		return http.StatusTooManyRequests
	case "timeout_error":
		return http.StatusGatewayTimeout
	case "overloaded_error":
		return 529
	}
	// api_error and anything unknown: the provider failed.
	return http.StatusInternalServerError
}
