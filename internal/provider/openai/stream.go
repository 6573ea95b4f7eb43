package openai

import (
	"bytes"
	"io"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/json/jsonread"
	"github.com/spillway-gw/spillway/internal/provider"
)

// toolFrag is one tool_calls entry of a chunk's delta.
type toolFrag struct {
	index    int
	id, name string
	args     string
}

// chunkState is what one chat.completion.chunk carries for choice 0. It is
// filled whole before any event is queued, since members may come in any
// order (an "error" after "choices", an "index" after "delta").
type chunkState struct {
	content, refusal, finish string
	reasoning                string
	tools                    []toolFrag
	usage                    canonical.Usage
	hasUsage                 bool
	errRaw                   []byte
}

// decoder turns Chat Completions chunks into canonical events.
type decoder struct {
	dec     jsonread.Decoder
	cur     chunkState
	choice0 chunkState // scratch for one choice before its index is known
	id      string     // the provider's response id and model, from the
	model   string     // first chunk
	started bool
	stopped bool
	refused bool
	// tools maps a provider tool-call index to its ordinal: tools[ordinal]
	// is the provider's index, in order of first appearance.
	tools []int
}

func newStream(body io.ReadCloser) *provider.SSEStream {
	return provider.NewSSEStream(body, &decoder{}, "data: [DONE]")
}

// Decode handles one event. Chat Completions streams have no event names.
func (s *decoder) Decode(_, data []byte, q *provider.Queue) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil // keep-alive
	}
	if len(data) >= 6 && string(data[:6]) == "[DONE]" { // as openai-go: a prefix match
		if !s.stopped {
			// Every choice ends with a finish_reason; [DONE] without one
			// is a server that lost the generation, not an answer.
			return failure.Truncated("[DONE] before any finish_reason")
		}
		return io.EOF
	}
	if err := s.decode(data); err != nil {
		return failure.Malformed("chat completion chunk", err)
	}
	c := &s.cur
	if c.errRaw != nil {
		return streamError(c.errRaw)
	}
	if !s.started {
		s.started = true
		q.Push(canonical.Event{Kind: canonical.EventStart, ID: s.id, Name: s.model})
	}
	if c.reasoning != "" {
		q.Push(canonical.Event{Kind: canonical.EventThinkingDelta, Index: 0, Text: c.reasoning})
	}
	if c.content != "" {
		q.Push(canonical.Event{Kind: canonical.EventTextDelta, Text: c.content})
	}
	if c.refusal != "" {
		s.refused = true
		q.Push(canonical.Event{Kind: canonical.EventRefusalDelta, Text: c.refusal})
	}
	for i := range c.tools {
		tc := &c.tools[i]
		ord, fresh := s.toolOrdinal(tc.index)
		// The first chunk of a call carries id and name, and may already
		// carry an arguments fragment.
		if fresh {
			q.Push(canonical.Event{Kind: canonical.EventToolCallStart, Index: ord, ID: tc.id, Name: tc.name})
		}
		if tc.args != "" {
			q.Push(canonical.Event{Kind: canonical.EventToolCallDelta, Index: ord, Text: tc.args})
		}
	}
	if failedFinish(c.finish) {
		return failure.Truncated("finish_reason " + c.finish)
	}
	if c.finish != "" && !s.stopped {
		s.stopped = true
		q.Push(canonical.Event{Kind: canonical.EventStop, Stop: stopReason(c.finish, s.refused)})
	}
	if c.hasUsage {
		q.Push(canonical.Event{Kind: canonical.EventUsage, Usage: c.usage})
	}
	return nil
}

// decode parses one chunk into s.cur, reading only the members used.
func (s *decoder) decode(data []byte) error {
	d := &s.dec
	d.Reset(data)
	c := &s.cur
	*c = chunkState{tools: c.tools[:0]}
	d.Object(func(key []byte) {
		switch string(key) {
		case "id":
			if !s.started {
				s.id = d.Str()
			}
		case "model":
			if !s.started {
				s.model = d.Str()
			}
		case "choices":
			d.Array(func() { s.decodeChoice(c) })
		case "usage":
			if !d.IsNull() {
				c.usage, c.hasUsage = readUsage(d), true
			}
		case "error":
			// "error": null is tolerated; openai-go would call it an error,
			// but no server sends it on purpose.
			if !d.IsNull() {
				c.errRaw = d.Raw()
			}
		}
	})
	return d.End()
}

// decodeChoice reads one choice, keeping it only if it is choice 0 (the
// gateway never asks for n > 1).
func (s *decoder) decodeChoice(c *chunkState) {
	d := &s.dec
	ch := &s.choice0
	*ch = chunkState{tools: ch.tools[:0]}
	index := 0
	d.Object(func(key []byte) {
		switch string(key) {
		case "index":
			index = d.Int()
		case "finish_reason":
			ch.finish = d.Str()
		case "delta":
			d.Object(func(key []byte) {
				switch string(key) {
				case "content":
					ch.content = d.Str()
				case "refusal":
					ch.refusal = d.Str()
				case "reasoning_content", "reasoning":
					// Compatible servers' visible reasoning (DeepSeek and
					// vLLM name it reasoning_content, OpenRouter reasoning).
					ch.reasoning = d.Str()
				case "tool_calls":
					d.Array(func() { ch.tools = append(ch.tools, readToolFrag(d)) })
				}
			})
		}
	})
	if index == 0 {
		c.content, c.refusal, c.finish, c.reasoning = ch.content, ch.refusal, ch.finish, ch.reasoning
		c.tools = append(c.tools, ch.tools...)
	}
}

func readToolFrag(d *jsonread.Decoder) toolFrag {
	var f toolFrag
	d.Object(func(key []byte) {
		switch string(key) {
		case "index":
			f.index = d.Int()
		case "id":
			f.id = d.Str()
		case "function":
			d.Object(func(key []byte) {
				switch string(key) {
				case "name":
					f.name = d.Str()
				case "arguments":
					f.args = d.Str()
				}
			})
		}
	})
	return f
}

// toolOrdinal maps a provider index to the call's ordinal, registering it on
// first sight. Calls are few, so a linear scan beats a map.
func (s *decoder) toolOrdinal(index int) (ord int, fresh bool) {
	for i, idx := range s.tools {
		if idx == index {
			return i, false
		}
	}
	s.tools = append(s.tools, index)
	return len(s.tools) - 1, true
}
