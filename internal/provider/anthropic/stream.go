package anthropic

import (
	"io"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/json/jsonread"
	"github.com/spillway-gw/spillway/internal/provider"
)

// eventKind is a stream event's name, as far as the gateway cares.
type eventKind uint8

const (
	evOther eventKind = iota // ping, content_block_stop, unknown: ignored
	evMessageStart
	evBlockStart
	evBlockDelta
	evMessageDelta
	evMessageStop
	evError
)

func eventKindOf(b []byte) eventKind {
	switch string(b) {
	case "message_start":
		return evMessageStart
	case "content_block_start":
		return evBlockStart
	case "content_block_delta":
		return evBlockDelta
	case "message_delta":
		return evMessageDelta
	case "message_stop":
		return evMessageStop
	case "error":
		return evError
	}
	return evOther
}

// deltaKind is a content_block_delta's delta type.
type deltaKind uint8

const (
	deltaOther deltaKind = iota // citations: ignored
	deltaText
	deltaInputJSON
	deltaThinking
	deltaSignature
)

// event is what one stream event carries, filled whole before acting on it
// since members may come in any order.
type event struct {
	kind        eventKind
	id, model   string
	usage       usage
	hasUsage    bool
	index       int
	block       blockKind
	blockID     string
	blockName   string
	signature   string
	data        string
	delta       deltaKind
	text        string
	stop        canonical.StopReason
	stopSeq     string
	explanation string
	err         failure.Answer
}

// toolBlock maps a content block index to its tool call's ordinal.
type toolBlock struct{ block, ordinal int }

// decoder turns Messages stream events into canonical events.
type decoder struct {
	dec jsonread.Decoder
	ev  event
	// input holds message_start's input counts, which message_delta's
	// cumulative usage may leave out.
	input usage
	// tools maps tool_use blocks to ordinals 0, 1, ... (not block indexes:
	// text and thinking blocks take indexes too).
	tools []toolBlock
	// thinks maps thinking and redacted_thinking blocks to ordinals.
	thinks   []toolBlock
	textSeen bool
	// started and stopped: message_start and a message_delta seen. Every
	// Messages stream has both; without them it is another API's stream,
	// or a generation the server lost.
	started, stopped bool
}

func newStream(body io.ReadCloser) *provider.SSEStream {
	return provider.NewSSEStream(body, &decoder{}, "message_stop")
}

// Decode handles one event, dispatching on its SSE name (the SDK's rule),
// or on data.type when the name is missing.
func (s *decoder) Decode(name, data []byte, q *provider.Queue) error {
	kind := eventKindOf(name)
	if len(name) > 0 && kind == evOther {
		return nil // ping, content_block_stop, unknown: not even parsed
	}
	if err := s.decode(data); err != nil {
		return failure.Malformed("message stream event", err)
	}
	ev := &s.ev
	if len(name) > 0 {
		ev.kind = kind
	}
	if !s.started && ev.kind != evMessageStart && ev.kind != evError && ev.kind != evOther {
		return failure.Malformed("message stream event before message_start", nil)
	}
	switch ev.kind {
	case evMessageStart:
		s.started = true
		q.Push(canonical.Event{Kind: canonical.EventStart, ID: ev.id, Name: ev.model})
		if ev.hasUsage {
			// Input counts only: message_start's output count is a placeholder.
			s.input = ev.usage
			in := s.input
			in.output = 0
			q.Push(canonical.Event{Kind: canonical.EventUsage, Usage: in.canonical()})
		}
	case evBlockStart:
		// Anthropic opens text blocks empty; a proxy that puts text here
		// still gets it delivered.
		if ev.block == blockText && ev.text != "" {
			s.textSeen = true
			q.Push(canonical.Event{Kind: canonical.EventTextDelta, Text: ev.text})
		}
		switch ev.block {
		case blockToolUse:
			ord := len(s.tools)
			s.tools = append(s.tools, toolBlock{block: ev.index, ordinal: ord})
			q.Push(canonical.Event{Kind: canonical.EventToolCallStart, Index: ord, ID: ev.blockID, Name: ev.blockName})
		case blockThinking:
			ord := len(s.thinks)
			s.thinks = append(s.thinks, toolBlock{block: ev.index, ordinal: ord})
			if ev.text != "" {
				q.Push(canonical.Event{Kind: canonical.EventThinkingDelta, Index: ord, Text: ev.text})
			}
			if ev.signature != "" {
				q.Push(canonical.Event{Kind: canonical.EventThinkingSignature, Index: ord, Text: ev.signature, Family: canonical.FamilyClaude})
			}
		case blockRedacted:
			ord := len(s.thinks)
			s.thinks = append(s.thinks, toolBlock{block: ev.index, ordinal: ord})
			q.Push(canonical.Event{Kind: canonical.EventRedactedThinking, Index: ord, Text: ev.data, Family: canonical.FamilyClaude})
		}
	case evBlockDelta:
		if ev.text == "" {
			return nil
		}
		switch ev.delta {
		case deltaText:
			s.textSeen = true
			q.Push(canonical.Event{Kind: canonical.EventTextDelta, Text: ev.text})
		case deltaInputJSON:
			if ord, ok := ordinal(s.tools, ev.index); ok {
				q.Push(canonical.Event{Kind: canonical.EventToolCallDelta, Index: ord, Text: ev.text})
			}
		case deltaThinking:
			if ord, ok := ordinal(s.thinks, ev.index); ok {
				q.Push(canonical.Event{Kind: canonical.EventThinkingDelta, Index: ord, Text: ev.text})
			}
		case deltaSignature:
			if ord, ok := ordinal(s.thinks, ev.index); ok {
				q.Push(canonical.Event{Kind: canonical.EventThinkingSignature, Index: ord, Text: ev.text, Family: canonical.FamilyClaude})
			}
		}
	case evMessageDelta:
		s.stopped = true
		if ev.hasUsage {
			u := ev.usage // cumulative; fill what it left out from message_start
			if !u.hasInput {
				u.input = s.input.input
			}
			if !u.hasCacheWrite {
				u.cacheWrite = s.input.cacheWrite
			}
			if !u.hasCacheRead {
				u.cacheRead = s.input.cacheRead
			}
			q.Push(canonical.Event{Kind: canonical.EventUsage, Usage: u.canonical()})
		}
		if ev.stop == canonical.StopRefusal && ev.explanation != "" && !s.textSeen {
			q.Push(canonical.Event{Kind: canonical.EventRefusalDelta, Text: ev.explanation})
		}
		stopSeq := ""
		if ev.stop == canonical.StopSequence {
			stopSeq = ev.stopSeq
		}
		q.Push(canonical.Event{Kind: canonical.EventStop, Stop: ev.stop, StopSequence: stopSeq})
	case evMessageStop:
		if !s.stopped {
			return failure.Truncated("message_stop before any stop_reason")
		}
		return io.EOF
	case evError:
		ev.err.Status = statusOf(ev.err.Type)
		return failure.Classify(ev.err)
	}
	return nil
}

// ordinal finds the ordinal of the block at index.
func ordinal(blocks []toolBlock, block int) (int, bool) {
	for _, t := range blocks {
		if t.block == block {
			return t.ordinal, true
		}
	}
	return 0, false
}

// decode parses one event's data into s.ev, reading only the members used.
func (s *decoder) decode(data []byte) error {
	d := &s.dec
	d.Reset(data)
	ev := &s.ev
	*ev = event{stop: canonical.StopEnd}
	d.Object(func(key []byte) {
		switch string(key) {
		case "type":
			ev.kind = eventKindOf(d.Bytes())
		case "message": // message_start
			d.Object(func(key []byte) {
				switch string(key) {
				case "id":
					ev.id = d.Str()
				case "model":
					ev.model = d.Str()
				case "usage":
					ev.usage, ev.hasUsage = readUsage(d), true
				}
			})
		case "index":
			ev.index = d.Int()
		case "content_block":
			d.Object(func(key []byte) {
				switch string(key) {
				case "type":
					ev.block = blockKindOf(d.Bytes())
				case "id":
					ev.blockID = d.Str()
				case "name":
					ev.blockName = d.Str()
				case "text", "thinking":
					ev.text = d.Str()
				case "signature":
					ev.signature = d.Str()
				case "data":
					ev.data = d.Str()
				}
			})
		case "delta":
			s.decodeDelta(ev)
		case "usage": // message_delta
			if !d.IsNull() {
				ev.usage, ev.hasUsage = readUsage(d), true
			}
		case "error":
			readErrorObject(d, &ev.err)
		}
	})
	return d.End()
}

// decodeDelta reads content_block_delta.delta and message_delta.delta,
// which share the name.
func (s *decoder) decodeDelta(ev *event) {
	d := &s.dec
	d.Object(func(key []byte) {
		switch string(key) {
		case "type":
			switch string(d.Bytes()) {
			case "text_delta":
				ev.delta = deltaText
			case "input_json_delta":
				ev.delta = deltaInputJSON
			case "thinking_delta":
				ev.delta = deltaThinking
			case "signature_delta":
				ev.delta = deltaSignature
			}
		case "text", "thinking", "signature":
			ev.text = d.Str()
		case "partial_json":
			ev.text = d.Str()
		case "stop_reason":
			ev.stop = stopReason(d.Bytes())
		case "stop_sequence":
			ev.stopSeq = d.Str()
		case "stop_details":
			ev.explanation = readStopDetails(d)
		}
	})
}
