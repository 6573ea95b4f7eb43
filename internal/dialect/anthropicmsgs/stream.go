package anthropicmsgs

import (
	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/json/jsonwrite"
	"strconv"
)

// Kinds of the content block being streamed.
const (
	blockNone = iota
	blockText
	blockTool
	blockThinking
)

// encoder writes one Messages event stream: message_start, then per
// content block content_block_start, its deltas and content_block_stop,
// then message_delta and message_stop. Every event is appended straight to
// the caller's buffer and never allocates.
type encoder struct {
	m dialect.Meta
	// open is the kind of the block being streamed and openAt its index;
	// next is the index the next block gets.
	open, openAt, next int
	// toolAt maps a canonical tool-call index to its block index (-1 for
	// none); toolBuf backs it for the usual handful of calls.
	toolAt  []int
	toolBuf [8]int
	// refused: a refusal was streamed, so the answer ends as a refusal.
	refused bool
	// thinkAt is the canonical index of the open thinking block.
	thinkAt int
	// start is the usage message_start reports: the input counts, when the
	// provider reported them before commit.
	start canonical.Usage
}

// StartUsage sets the input counts message_start reports.
func (e *encoder) StartUsage(u canonical.Usage) {
	u.OutputTokens, u.ReasoningTokens = 0, 0
	e.start = u
}

// NewEncoder starts encoding one streamed answer.
func (*Dialect) NewEncoder(m dialect.Meta, _ *canonical.Request) dialect.Encoder {
	e := &encoder{m: m}
	e.toolAt = e.toolBuf[:0]
	return e
}

// Start writes message_start. It is written at commit: its input counts
// are what the provider reported by then (Anthropic and Bedrock report them
// first; OpenAI-compatible providers only at the end, so zeros), and its
// output count zero. message_delta carries the final cumulative counts,
// which the SDKs take over.
func (e *encoder) Start(dst []byte) []byte {
	dst = append(dst, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":"...)
	dst = jsonwrite.AppendString(dst, e.m.ID)
	dst = append(dst, `,"type":"message","role":"assistant","model":`...)
	dst = jsonwrite.AppendString(dst, e.m.Model)
	dst = append(dst, `,"content":[],"stop_reason":null,"stop_sequence":null,"stop_details":null,"container":null,"usage":`...)
	dst = appendUsage(dst, e.start)
	return append(dst, "}}\n\n"...)
}

// Event writes the events for one canonical event: text and refusal
// fragments go to a text block, a tool call opens a tool_use block and its
// argument fragments go to that block. Empty fragments and non-semantic
// events write nothing.
func (e *encoder) Event(dst []byte, ev *canonical.Event) []byte {
	switch ev.Kind {
	case canonical.EventTextDelta, canonical.EventRefusalDelta:
		if ev.Text == "" {
			return dst
		}
		if ev.Kind == canonical.EventRefusalDelta {
			e.refused = true
		}
		if e.open != blockText {
			dst = e.closeBlock(dst)
			dst = e.startBlock(dst, blockText)
			dst = append(dst, `{"type":"text","text":"","citations":null}}`+"\n\n"...)
		}
		dst = e.deltaHead(dst, e.openAt)
		dst = append(dst, `{"type":"text_delta","text":`...)
		dst = jsonwrite.AppendString(dst, ev.Text)
	case canonical.EventThinkingDelta, canonical.EventThinkingSignature:
		if ev.Text == "" {
			return dst
		}
		if e.open != blockThinking || e.thinkAt != ev.Index {
			dst = e.closeBlock(dst)
			dst = e.startBlock(dst, blockThinking)
			e.thinkAt = ev.Index
			dst = append(dst, `{"type":"thinking","thinking":"","signature":""}}`+"\n\n"...)
		}
		dst = e.deltaHead(dst, e.openAt)
		if ev.Kind == canonical.EventThinkingDelta {
			dst = append(dst, `{"type":"thinking_delta","thinking":`...)
			dst = jsonwrite.AppendString(dst, ev.Text)
		} else {
			dst = append(dst, `{"type":"signature_delta","signature":`...)
			dst = jsonwrite.AppendString(dst, dialect.EncodeSignature(ev.Text, ev.Family))
		}
	case canonical.EventRedactedThinking:
		dst = e.closeBlock(dst)
		dst = e.startBlock(dst, blockThinking)
		e.thinkAt = -1
		dst = append(dst, `{"type":"redacted_thinking","data":`...)
		dst = jsonwrite.AppendString(dst, dialect.EncodeSignature(ev.Text, ev.Family))
		dst = append(dst, "}}\n\n"...)
		return e.closeBlock(dst)
	case canonical.EventToolCallStart:
		if ev.Index < 0 {
			return dst
		}
		dst = e.closeBlock(dst)
		for len(e.toolAt) <= ev.Index {
			e.toolAt = append(e.toolAt, -1)
		}
		e.toolAt[ev.Index] = e.next
		dst = e.startBlock(dst, blockTool)
		dst = append(dst, `{"type":"tool_use","id":`...)
		dst = jsonwrite.AppendString(dst, ev.ID)
		dst = append(dst, `,"name":`...)
		dst = jsonwrite.AppendString(dst, ev.Name)
		return append(dst, `,"input":{},"caller":{"type":"direct"}}}`+"\n\n"...)
	case canonical.EventToolCallDelta:
		if ev.Text == "" || ev.Index < 0 || ev.Index >= len(e.toolAt) || e.toolAt[ev.Index] < 0 {
			return dst
		}
		// A provider that interleaved the arguments of parallel calls
		// would address a block already stopped; the fragment still goes
		// to its own block's index.
		dst = e.deltaHead(dst, e.toolAt[ev.Index])
		dst = append(dst, `{"type":"input_json_delta","partial_json":`...)
		dst = jsonwrite.AppendString(dst, ev.Text)
	default:
		return dst
	}
	return append(dst, "}}\n\n"...)
}

// startBlock writes a content_block_start up to its content_block value.
func (e *encoder) startBlock(dst []byte, kind int) []byte {
	e.open, e.openAt = kind, e.next
	e.next++
	dst = append(dst, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":"...)
	dst = jsonwrite.AppendInt(dst, int64(e.openAt))
	return append(dst, `,"content_block":`...)
}

// deltaHead writes a content_block_delta up to its delta value.
func (e *encoder) deltaHead(dst []byte, index int) []byte {
	dst = append(dst, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":"...)
	dst = jsonwrite.AppendInt(dst, int64(index))
	return append(dst, `,"delta":`...)
}

func (e *encoder) closeBlock(dst []byte) []byte {
	if e.open == blockNone {
		return dst
	}
	e.open = blockNone
	dst = append(dst, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":"...)
	dst = jsonwrite.AppendInt(dst, int64(e.openAt))
	return append(dst, "}\n\n"...)
}

// Finish closes the open block and writes message_delta, with the stop
// reason and the cumulative usage, and the message_stop terminator.
func (e *encoder) Finish(dst []byte, stop canonical.StopReason, stopSequence string, u canonical.Usage) []byte {
	dst = e.closeBlock(dst)
	reason := stopReason(stop)
	if e.refused {
		reason = "refusal"
	}
	dst = append(dst, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\""...)
	dst = append(dst, reason...)
	dst = append(dst, `","stop_sequence":`...)
	dst = appendStopSequence(dst, stop, stopSequence)
	dst = append(dst, `,"stop_details":null},"usage":`...)
	dst = appendUsage(dst, u)
	return append(dst, "}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"...)
}

// Interrupt writes one error event and no message_stop, leaving any block
// open: Anthropic's SDKs end the stream with an error on it, so a caller
// cannot mistake the truncated answer for a complete one.
func (e *encoder) Interrupt(dst []byte, pe *failure.Public, deliveredTokens int) []byte {
	dst = append(dst, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"stream_interrupted\",\"message\":"...)
	dst = jsonwrite.AppendString(dst, pe.Message)
	if pe.Code != "" {
		dst = append(dst, `,"code":`...)
		dst = jsonwrite.AppendString(dst, pe.Code)
	}
	dst = append(dst, `,"retryable":`...)
	dst = strconv.AppendBool(dst, pe.Retryable)
	dst = append(dst, `,"delivered_tokens":`...)
	dst = jsonwrite.AppendInt(dst, int64(deliveredTokens))
	return append(dst, "}}\n\n"...)
}

var (
	_ dialect.Encoder    = (*encoder)(nil)
	_ dialect.StartUsage = (*encoder)(nil)
)
