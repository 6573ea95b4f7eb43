package anthropicmsgs

import (
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/json/jsonread"
	"github.com/spillway-gw/spillway/internal/json/jsonwrite"
)

// stopReason maps a canonical stop reason to Anthropic's stop_reason. A
// content filter's cut is reported as "refusal", Anthropic's only value for
// an answer its safety systems stopped.
func stopReason(r canonical.StopReason) string {
	switch r {
	case canonical.StopMaxTokens:
		return "max_tokens"
	case canonical.StopSequence:
		return "stop_sequence"
	case canonical.StopToolUse:
		return "tool_use"
	case canonical.StopRefusal, canonical.StopContentFilter:
		return "refusal"
	case canonical.StopContextWindow:
		return "model_context_window_exceeded"
	case canonical.StopPause:
		return "pause_turn"
	}
	return "end_turn"
}

// rawArgumentsKey wraps tool arguments that are not a JSON object (a
// provider's model can emit broken JSON, e.g. when cut off by max_tokens):
// Anthropic's input must be an object, and the caller must still see
// exactly what the model produced rather than a silently emptied input.
const rawArgumentsKey = "_spillway_raw_arguments"

// AppendResponse appends a Message object. A canonical refusal (OpenAI
// providers report one apart from the text) becomes a text block, and the
// stop reason is then "refusal", as Anthropic reports its own refusals.
func (*Dialect) AppendResponse(dst []byte, m dialect.Meta, _ *canonical.Request, resp *canonical.Response) []byte {
	dst = append(dst, `{"id":`...)
	dst = jsonwrite.AppendString(dst, m.ID)
	dst = append(dst, `,"type":"message","role":"assistant","model":`...)
	dst = jsonwrite.AppendString(dst, m.Model)
	dst = append(dst, `,"content":[`...)
	n := 0
	for _, p := range resp.Thinking {
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		if p.Type == canonical.PartRedactedThinking {
			dst = append(dst, `{"type":"redacted_thinking","data":`...)
			dst = jsonwrite.AppendString(dst, dialect.EncodeSignature(p.Data, p.Family))
			dst = append(dst, '}')
			continue
		}
		dst = append(dst, `{"type":"thinking","thinking":`...)
		dst = jsonwrite.AppendString(dst, p.Text)
		dst = append(dst, `,"signature":`...)
		dst = jsonwrite.AppendString(dst, dialect.EncodeSignature(p.Signature, p.Family))
		dst = append(dst, '}')
	}
	for _, text := range [2]string{resp.Text, resp.Refusal} {
		if text == "" {
			continue
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = append(dst, `{"type":"text","text":`...)
		dst = jsonwrite.AppendString(dst, text)
		dst = append(dst, `,"citations":null}`...)
	}
	for _, tc := range resp.ToolCalls {
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = append(dst, `{"type":"tool_use","id":`...)
		dst = jsonwrite.AppendString(dst, tc.ID)
		dst = append(dst, `,"name":`...)
		dst = jsonwrite.AppendString(dst, tc.Name)
		dst = append(dst, `,"input":`...)
		dst = appendInput(dst, tc.Arguments)
		dst = append(dst, `,"caller":{"type":"direct"}}`...)
	}
	stop := stopReason(resp.Stop)
	if resp.Refusal != "" {
		stop = "refusal"
	}
	dst = append(dst, `],"stop_reason":"`...)
	dst = append(dst, stop...)
	dst = append(dst, `","stop_sequence":`...)
	dst = appendStopSequence(dst, resp.Stop, resp.StopSequence)
	// Members the 2026-10-21 SDKs type as always present.
	dst = append(dst, `,"stop_details":null,"container":null,"usage":`...)
	dst = appendUsage(dst, resp.Usage)
	return append(dst, '}')
}

// appendInput writes tool arguments as the input object.
func appendInput(dst []byte, args string) []byte {
	trimmed := strings.TrimSpace(args)
	if trimmed == "" {
		return append(dst, "{}"...)
	}
	// Validate only reads, so the string's bytes can be lent to it.
	if trimmed[0] == '{' && utf8.ValidString(trimmed) && jsonread.Valid(unsafe.Slice(unsafe.StringData(trimmed), len(trimmed))) {
		return append(dst, trimmed...)
	}
	dst = append(dst, `{"`+rawArgumentsKey+`":`...)
	dst = jsonwrite.AppendString(dst, args)
	return append(dst, '}')
}

func appendStopSequence(dst []byte, stop canonical.StopReason, seq string) []byte {
	if stop != canonical.StopSequence {
		return append(dst, "null"...)
	}
	return jsonwrite.AppendStringOrNull(dst, seq)
}

// appendUsage writes Anthropic's usage, whose input_tokens excludes the
// tokens read from or written to the prompt cache (canonical InputTokens
// counts every prompt token).
func appendUsage(dst []byte, u canonical.Usage) []byte {
	dst = append(dst, `{"input_tokens":`...)
	dst = jsonwrite.AppendInt(dst, int64(max(0, u.InputTokens-u.CachedInputTokens-u.CacheWriteTokens)))
	dst = append(dst, `,"cache_creation_input_tokens":`...)
	dst = jsonwrite.AppendInt(dst, int64(u.CacheWriteTokens))
	dst = append(dst, `,"cache_read_input_tokens":`...)
	dst = jsonwrite.AppendInt(dst, int64(u.CachedInputTokens))
	dst = append(dst, `,"output_tokens":`...)
	dst = jsonwrite.AppendInt(dst, int64(u.OutputTokens))
	if u.ReasoningTokens > 0 {
		// output_tokens includes them, as Anthropic counts.
		dst = append(dst, `,"output_tokens_details":{"thinking_tokens":`...)
		dst = jsonwrite.AppendInt(dst, int64(u.ReasoningTokens))
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// errorType is Anthropic's error type for a status, so SDKs and callers
// branch as they do on Anthropic's own errors; the gateway's specific
// reason travels in code.
func errorType(status int) string {
	switch status {
	case 401:
		return "authentication_error"
	case 402:
		return "billing_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 504:
		return "timeout_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error" // Anthropic's type for every other 4xx
}

// AppendError appends Anthropic's error body,
// {"type":"error","error":{"type","message"}}, with two extra members the
// SDKs ignore: "code", the gateway's stable reason (e.g.
// key_budget_exceeded), and "param", the offending field, each only when
// set. There is no "request_id" member: the request id travels in the
// response headers.
func (*Dialect) AppendError(dst []byte, e *failure.Public) []byte {
	dst = append(dst, `{"type":"error","error":{"type":"`...)
	dst = append(dst, errorType(e.Status)...)
	dst = append(dst, `","message":`...)
	dst = jsonwrite.AppendString(dst, e.Message)
	if e.Code != "" {
		dst = append(dst, `,"code":`...)
		dst = jsonwrite.AppendString(dst, e.Code)
	}
	if e.Param != "" {
		dst = append(dst, `,"param":`...)
		dst = jsonwrite.AppendString(dst, e.Param)
	}
	if e.ErrorCode != "" {
		dst = append(dst, `,"details":{"error_code":`...)
		dst = jsonwrite.AppendString(dst, e.ErrorCode)
		dst = append(dst, '}')
	}
	return append(dst, "}}"...)
}
