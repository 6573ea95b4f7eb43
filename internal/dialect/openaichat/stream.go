package openaichat

import (
	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/json/jsonwrite"
	"strconv"
)

// encoder writes one chat.completion.chunk stream. Everything constant about
// a chunk is rendered once, so an event costs two copies and the escaped
// delta, and never allocates.
type encoder struct {
	// pre is `data: {"id":…,"system_fingerprint":null,"choices":[{"index":0,"delta":`;
	// pre[:head] stops after `"choices":`, for the usage chunk.
	pre  []byte
	head int
	// post closes a content chunk: `,"logprobs":null,"finish_reason":null}]`
	// plus `,"usage":null` when the caller asked for usage, then `}` and the
	// blank line.
	post         string
	includeUsage bool
}

// NewEncoder starts encoding one streamed answer.
func (*Dialect) NewEncoder(m dialect.Meta, req *canonical.Request) dialect.Encoder {
	buf := make([]byte, 0, 160+len(m.ID)+len(m.Model))
	buf = append(buf, `data: {"id":`...)
	buf = jsonwrite.AppendString(buf, m.ID)
	buf = append(buf, `,"object":"chat.completion.chunk","created":`...)
	buf = jsonwrite.AppendInt(buf, m.Created)
	buf = append(buf, `,"model":`...)
	buf = jsonwrite.AppendString(buf, m.Model)
	buf = append(buf, `,"system_fingerprint":null,"choices":`...)
	head := len(buf)
	buf = append(buf, `[{"index":0,"delta":`...)
	pre := buf[:len(buf):len(buf)]
	post := `,"logprobs":null,"finish_reason":null}]}` + "\n\n"
	if req.IncludeUsage {
		post = `,"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n"
	}
	return &encoder{pre: pre, head: head, post: post, includeUsage: req.IncludeUsage}
}

// Start writes the role chunk.
func (e *encoder) Start(dst []byte) []byte {
	dst = append(dst, e.pre...)
	dst = append(dst, `{"role":"assistant","content":""}`...)
	return append(dst, e.post...)
}

// Event writes one delta chunk; empty fragments and non-semantic events
// write nothing.
func (e *encoder) Event(dst []byte, ev *canonical.Event) []byte {
	switch ev.Kind {
	case canonical.EventTextDelta, canonical.EventRefusalDelta:
		if ev.Text == "" {
			return dst
		}
		dst = append(dst, e.pre...)
		if ev.Kind == canonical.EventTextDelta {
			dst = append(dst, `{"content":`...)
		} else {
			dst = append(dst, `{"refusal":`...)
		}
		dst = jsonwrite.AppendString(dst, ev.Text)
		dst = append(dst, '}')
	case canonical.EventThinkingDelta:
		// Chat has no reasoning field of its own; reasoning_content is the
		// name compatible servers (DeepSeek, vLLM) and their clients use.
		// Signatures cannot be carried: Chat takes no reasoning back.
		if ev.Text == "" {
			return dst
		}
		dst = append(dst, e.pre...)
		dst = append(dst, `{"reasoning_content":`...)
		dst = jsonwrite.AppendString(dst, ev.Text)
		dst = append(dst, '}')
	case canonical.EventToolCallStart:
		dst = append(dst, e.pre...)
		dst = append(dst, `{"tool_calls":[{"index":`...)
		dst = jsonwrite.AppendInt(dst, int64(ev.Index))
		dst = append(dst, `,"id":`...)
		dst = jsonwrite.AppendString(dst, ev.ID)
		dst = append(dst, `,"type":"function","function":{"name":`...)
		dst = jsonwrite.AppendString(dst, ev.Name)
		dst = append(dst, `,"arguments":""}}]}`...)
	case canonical.EventToolCallDelta:
		if ev.Text == "" {
			return dst
		}
		dst = append(dst, e.pre...)
		dst = append(dst, `{"tool_calls":[{"index":`...)
		dst = jsonwrite.AppendInt(dst, int64(ev.Index))
		dst = append(dst, `,"function":{"arguments":`...)
		dst = jsonwrite.AppendString(dst, ev.Text)
		dst = append(dst, `}}]}`...)
	default:
		return dst
	}
	return append(dst, e.post...)
}

// Finish writes the finish chunk, the usage chunk when asked for, and the
// [DONE] terminator.
func (e *encoder) Finish(dst []byte, stop canonical.StopReason, _ string, u canonical.Usage) []byte {
	dst = append(dst, e.pre...)
	dst = append(dst, `{},"logprobs":null,"finish_reason":"`...)
	dst = append(dst, finishReason(stop)...)
	dst = append(dst, `"}]`...)
	if e.includeUsage {
		dst = append(dst, `,"usage":null}`+"\n\n"...)
		dst = append(dst, e.pre[:e.head]...)
		dst = append(dst, `[],"usage":`...)
		dst = appendUsage(dst, u)
	}
	return append(dst, "}\n\ndata: [DONE]\n\n"...)
}

// Interrupt writes one event with a top-level "error" key and no [DONE]:
// OpenAI's SDKs turn exactly that into a stream error, so a caller cannot
// mistake the truncated answer for a complete one.
func (e *encoder) Interrupt(dst []byte, pe *failure.Public, deliveredTokens int) []byte {
	dst = append(dst, `data: {"error":{"message":`...)
	dst = jsonwrite.AppendString(dst, pe.Message)
	dst = append(dst, `,"type":"stream_interrupted","code":`...)
	dst = jsonwrite.AppendStringOrNull(dst, pe.Code)
	dst = append(dst, `,"param":null,"retryable":`...)
	dst = strconv.AppendBool(dst, pe.Retryable)
	dst = append(dst, `,"delivered_tokens":`...)
	dst = jsonwrite.AppendInt(dst, int64(deliveredTokens))
	return append(dst, "}}\n\n"...)
}
