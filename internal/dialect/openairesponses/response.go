package openairesponses

import (
	"strconv"
	"strings"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/dialect/openaichat"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/json/jsonwrite"
)

// Response statuses and the item statuses that go with them.
const (
	statusCompleted  = "completed"
	statusIncomplete = "incomplete"
	statusInProgress = "in_progress"
	statusFailed     = "failed"
)

// outcome maps a stop reason to the response's status and, when
// incomplete, the reason. The Responses API has no finish_reason: a caller
// sees tool use from function_call items and truncation from the status.
func outcome(stop canonical.StopReason) (status, reason string) {
	switch stop {
	case canonical.StopMaxTokens, canonical.StopContextWindow:
		return statusIncomplete, "max_output_tokens"
	case canonical.StopContentFilter:
		return statusIncomplete, "content_filter"
	}
	return statusCompleted, ""
}

// itemIDBase is the part of every output item id that ties it to the
// response: msg_<base>_<n> and fc_<base>_<n>, from resp_<base>. It is
// already JSON-escaped, so item ids are written without re-escaping.
func itemIDBase(dst []byte, respID string) []byte {
	base := strings.TrimPrefix(respID, "resp_")
	start := len(dst)
	dst = jsonwrite.AppendString(dst, base)
	// Drop the quotes: the base is spliced inside a quoted id.
	copy(dst[start:], dst[start+1:len(dst)-1])
	return dst[:len(dst)-2]
}

// appendItemID appends "<prefix><base>_<n>" (quoted).
func appendItemID(dst []byte, prefix string, base []byte, n int) []byte {
	dst = append(dst, '"')
	dst = append(dst, prefix...)
	dst = append(dst, base...)
	dst = append(dst, '_')
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, '"')
}

// appendHead appends the response object's opening up to its status value.
func appendHead(dst []byte, m dialect.Meta) []byte {
	dst = append(dst, `{"id":`...)
	dst = jsonwrite.AppendString(dst, m.ID)
	dst = append(dst, `,"object":"response","created_at":`...)
	dst = jsonwrite.AppendInt(dst, m.Created)
	return append(dst, `,"status":"`...)
}

// appendState appends the status and what goes with it. completedAt 0,
// errMsg "" and reason "" are written as null.
func appendState(dst []byte, status string, completedAt int64, errMsg, reason string) []byte {
	dst = append(dst, status...)
	dst = append(dst, `","background":false,"completed_at":`...)
	if completedAt != 0 {
		dst = jsonwrite.AppendInt(dst, completedAt)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"error":`...)
	if errMsg != "" {
		// The Responses error object has a fixed code set; server_error is
		// the one for a provider that failed mid-answer.
		dst = append(dst, `{"code":"server_error","message":`...)
		dst = jsonwrite.AppendString(dst, errMsg)
		dst = append(dst, '}')
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"incomplete_details":`...)
	if reason != "" {
		dst = append(dst, `{"reason":"`...)
		dst = append(dst, reason...)
		return append(dst, `"}`...)
	}
	return append(dst, "null"...)
}

// appendMid appends the members between the state and the output items,
// ending inside the output array.
func appendMid(dst []byte, m dialect.Meta, req *canonical.Request) []byte {
	dst = append(dst, `,"instructions":null,"max_output_tokens":`...)
	if req != nil && req.MaxTokens > 0 {
		dst = jsonwrite.AppendInt(dst, int64(req.MaxTokens))
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"max_tool_calls":null,"model":`...)
	dst = jsonwrite.AppendString(dst, m.Model)
	return append(dst, `,"output":[`...)
}

// appendEcho appends the request parameters a response object repeats,
// from the end of the output array to the usage key. Scalars are echoed as
// the caller set them (null when unset, OpenAI's defaults where the API
// always has a value). The caller's largest inputs are not repeated, so a
// stream does not carry them three times: instructions is null, tools is
// [] and a json_schema format carries its name but not its schema. store
// is false because spillway stores nothing; metadata is {} because the
// canonical request does not keep it.
func appendEcho(dst []byte, req *canonical.Request) []byte {
	if req == nil {
		req = &canonical.Request{}
	}
	dst = append(dst, `],"parallel_tool_calls":`...)
	dst = jsonwrite.AppendBool(dst, req.ParallelToolCalls == nil || *req.ParallelToolCalls)
	dst = append(dst, `,"previous_response_id":null,"reasoning":null,"store":false,"temperature":`...)
	dst = appendOptFloat(dst, req.Temperature)
	dst = append(dst, `,"text":{"format":`...)
	switch rf := req.ResponseFormat; {
	case rf == nil || rf.Type == canonical.FormatText:
		dst = append(dst, `{"type":"text"}`...)
	case rf.Type == canonical.FormatJSONObject:
		dst = append(dst, `{"type":"json_object"}`...)
	default:
		dst = append(dst, `{"type":"json_schema","name":`...)
		dst = jsonwrite.AppendString(dst, rf.Name)
		dst = append(dst, `,"strict":`...)
		dst = jsonwrite.AppendBool(dst, rf.Strict)
		dst = append(dst, '}')
	}
	dst = append(dst, `},"tool_choice":`...)
	switch tc := req.ToolChoice; {
	case tc == nil || tc.Mode == canonical.ToolChoiceAuto:
		dst = append(dst, `"auto"`...)
	case tc.Mode == canonical.ToolChoiceNone:
		dst = append(dst, `"none"`...)
	case tc.Mode == canonical.ToolChoiceRequired:
		dst = append(dst, `"required"`...)
	default:
		dst = append(dst, `{"type":"function","name":`...)
		dst = jsonwrite.AppendString(dst, tc.Name)
		dst = append(dst, '}')
	}
	dst = append(dst, `,"tools":[],"top_p":`...)
	dst = appendOptFloat(dst, req.TopP)
	return append(dst, `,"truncation":"disabled","user":null,"metadata":{},"usage":`...)
}

func appendOptFloat(dst []byte, f *float64) []byte {
	if f == nil {
		return append(dst, "null"...)
	}
	return strconv.AppendFloat(dst, *f, 'g', -1, 64)
}

// appendUsage appends a ResponseUsage object.
func appendUsage(dst []byte, u canonical.Usage) []byte {
	dst = append(dst, `{"input_tokens":`...)
	dst = jsonwrite.AppendInt(dst, int64(u.InputTokens))
	dst = append(dst, `,"input_tokens_details":{"cached_tokens":`...)
	dst = jsonwrite.AppendInt(dst, int64(u.CachedInputTokens))
	dst = append(dst, `,"cache_write_tokens":`...)
	dst = jsonwrite.AppendInt(dst, int64(u.CacheWriteTokens))
	dst = append(dst, `},"output_tokens":`...)
	dst = jsonwrite.AppendInt(dst, int64(u.OutputTokens))
	dst = append(dst, `,"output_tokens_details":{"reasoning_tokens":`...)
	dst = jsonwrite.AppendInt(dst, int64(u.ReasoningTokens))
	dst = append(dst, `},"total_tokens":`...)
	dst = jsonwrite.AppendInt(dst, int64(u.InputTokens+u.OutputTokens))
	return append(dst, '}')
}

// appendMessageOpen opens an assistant message item, inside its content.
func appendMessageOpen(dst []byte, base []byte, n int, status string) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendItemID(dst, "msg_", base, n)
	dst = append(dst, `,"type":"message","status":"`...)
	dst = append(dst, status...)
	return append(dst, `","role":"assistant","content":[`...)
}

// appendTextPart and appendRefusalPart append content parts whose text is
// already JSON-escaped, without quotes.
func appendTextPart(dst, text []byte) []byte {
	dst = append(dst, `{"type":"output_text","annotations":[],"logprobs":[],"text":"`...)
	dst = append(dst, text...)
	return append(dst, `"}`...)
}

func appendRefusalPart(dst, refusal []byte) []byte {
	dst = append(dst, `{"type":"refusal","refusal":"`...)
	dst = append(dst, refusal...)
	return append(dst, `"}`...)
}

// appendCallItem appends a function_call item; args is JSON-escaped
// without quotes, and empty stands for arguments never given ("{}", as
// canonical.ToolCall has it).
func appendCallItem(dst []byte, base []byte, n int, status, callID, name string, args []byte) []byte {
	dst = appendCallItemHead(dst, base, n, status, callID, name)
	if len(args) == 0 {
		return append(dst, `{}"}`...)
	}
	dst = append(dst, args...)
	return append(dst, `"}`...)
}

// appendCallItemHead appends a function_call item up to inside its
// arguments string.
func appendCallItemHead(dst []byte, base []byte, n int, status, callID, name string) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendItemID(dst, "fc_", base, n)
	dst = append(dst, `,"type":"function_call","status":"`...)
	dst = append(dst, status...)
	dst = append(dst, `","call_id":`...)
	dst = jsonwrite.AppendString(dst, callID)
	dst = append(dst, `,"name":`...)
	dst = jsonwrite.AppendString(dst, name)
	return append(dst, `,"arguments":"`...)
}

// appendReasoningItem appends a reasoning item; summary is JSON-escaped
// without quotes (none: an empty summary); the block's signature or data
// is the encrypted_content.
func appendReasoningItem(dst []byte, base []byte, n int, status string, summary []byte, block *canonical.Part) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendItemID(dst, "rs_", base, n)
	dst = append(dst, `,"type":"reasoning","status":"`...)
	dst = append(dst, status...)
	dst = append(dst, `","summary":[`...)
	if len(summary) > 0 {
		dst = append(dst, `{"type":"summary_text","text":"`...)
		dst = append(dst, summary...)
		dst = append(dst, `"}`...)
	}
	dst = append(dst, `],"encrypted_content":`...)
	if block.Signature == "" && block.Data == "" {
		dst = append(dst, "null"...)
	} else {
		dst = jsonwrite.AppendString(dst, dialect.MarkReasoning(*block))
	}
	return append(dst, '}')
}

// appendEscaped appends s JSON-escaped without its quotes.
func appendEscaped(dst []byte, s string) []byte {
	start := len(dst)
	dst = jsonwrite.AppendString(dst, s)
	copy(dst[start:], dst[start+1:len(dst)-1])
	return dst[:len(dst)-2]
}

// AppendResponse appends a response object: one message item (text and/or
// refusal parts) when the answer has any, then one function_call item per
// tool call, in order.
func (d *Dialect) AppendResponse(dst []byte, m dialect.Meta, req *canonical.Request, resp *canonical.Response) []byte {
	status, reason := outcome(resp.Stop)
	var completedAt int64
	if status == statusCompleted {
		completedAt = d.unix()
	}
	// The id base lives on the stack unless the id is unusually long.
	var scratch [64]byte
	base := itemIDBase(scratch[:0], m.ID)
	dst = appendHead(dst, m)
	dst = appendState(dst, status, completedAt, "", reason)
	dst = appendMid(dst, m, req)
	n := 0
	for k := range resp.Thinking {
		if n > 0 {
			dst = append(dst, ',')
		}
		p := &resp.Thinking[k]
		dst = appendReasoningItem(dst, base, n, statusCompleted, appendEscaped(nil, p.Text), p)
		n++
	}
	if resp.Text != "" || resp.Refusal != "" {
		if n > 0 {
			dst = append(dst, ',')
		}
		dst = appendMessageOpen(dst, base, n, status)
		if resp.Text != "" {
			dst = append(dst, `{"type":"output_text","annotations":[],"logprobs":[],"text":`...)
			dst = jsonwrite.AppendString(dst, resp.Text)
			dst = append(dst, '}')
		}
		if resp.Refusal != "" {
			if resp.Text != "" {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"type":"refusal","refusal":`...)
			dst = jsonwrite.AppendString(dst, resp.Refusal)
			dst = append(dst, '}')
		}
		dst = append(dst, "]}"...)
		n++
	}
	for i := range resp.ToolCalls {
		tc := &resp.ToolCalls[i]
		if n > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"id":`...)
		dst = appendItemID(dst, "fc_", base, n)
		dst = append(dst, `,"type":"function_call","status":"`...)
		dst = append(dst, status...)
		dst = append(dst, `","call_id":`...)
		dst = jsonwrite.AppendString(dst, tc.ID)
		dst = append(dst, `,"name":`...)
		dst = jsonwrite.AppendString(dst, tc.Name)
		dst = append(dst, `,"arguments":`...)
		dst = openaichat.AppendArguments(dst, tc.Arguments)
		dst = append(dst, '}')
		n++
	}
	dst = appendEcho(dst, req)
	dst = appendUsage(dst, resp.Usage)
	return append(dst, '}')
}

// AppendError appends {"error":{"message","type","param","code"}}, the
// shape the Responses API shares with Chat Completions.
func (*Dialect) AppendError(dst []byte, e *failure.Public) []byte {
	return openaichat.AppendError(dst, e)
}
