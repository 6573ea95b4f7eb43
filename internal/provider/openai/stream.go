package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"sync/atomic"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/provider"
	"github.com/spillway-gw/spillway/internal/sse"
)

// chunk is the part of a chat.completion.chunk the gateway uses. id and
// model are read from the first chunk only (headChunk), sparing two string
// allocations on every later event.
type chunk struct {
	Choices []chunkChoice   `json:"choices"`
	Usage   *usage          `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

type headChunk struct {
	ID    string `json:"id"`
	Model string `json:"model"`
	chunk
}

type chunkChoice struct {
	Index        int    `json:"index"`
	Delta        delta  `json:"delta"`
	FinishReason string `json:"finish_reason"`
}

type delta struct {
	Content   string          `json:"content"`
	Refusal   string          `json:"refusal"`
	ToolCalls []toolCallDelta `json:"tool_calls"`
}

type toolCallDelta struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

var doneMarker = []byte("[DONE]")

// stream reads a Chat Completions event stream. One SSE event may yield
// several canonical events; they wait in queue.
type stream struct {
	mu     sync.Mutex // serialises Next with Close's release of rd
	closed atomic.Bool
	body   io.ReadCloser
	rd     *sse.Reader

	queue []canonical.Event
	qhead int
	err   error // sticky: io.EOF after [DONE], or the failure

	head    headChunk
	started bool
	stopped bool
	refused bool
	// tools maps a provider tool-call index to its ordinal: tools[ordinal]
	// is the provider's index, in order of first appearance.
	tools []int
}

func newStream(body io.ReadCloser) *stream {
	return &stream{body: body, rd: sse.NewReader(body), queue: make([]canonical.Event, 0, 4)}
}

// Next returns the next event, io.EOF after [DONE], or a *failure.Error.
func (s *stream) Next() (canonical.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if s.qhead < len(s.queue) {
			ev := s.queue[s.qhead]
			s.queue[s.qhead] = canonical.Event{} // drop references early
			s.qhead++
			return ev, nil
		}
		if s.err != nil {
			return canonical.Event{}, s.err
		}
		if s.closed.Load() {
			return canonical.Event{}, failure.Transport(provider.ErrStreamClosed, false)
		}
		s.queue, s.qhead = s.queue[:0], 0
		s.err = s.read()
	}
}

// Close closes the body (unblocking a Next in progress) and then returns
// the reader's buffer to its pool. It is idempotent.
func (s *stream) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	err := s.body.Close()
	s.mu.Lock()
	s.rd.Release()
	s.mu.Unlock()
	return err
}

// read consumes one SSE event, queueing what it yields. It returns io.EOF
// at [DONE] and a *failure.Error when the stream broke.
func (s *stream) read() error {
	ev, err := s.rd.Next()
	if err != nil {
		return readError(err)
	}
	data := bytes.TrimSpace(ev.Data)
	if len(data) == 0 {
		return nil // keep-alive
	}
	if bytes.HasPrefix(data, doneMarker) {
		return io.EOF
	}
	c := s.decode(data)
	if c == nil {
		return failure.Malformed("chat completion chunk", errors.New("invalid JSON"))
	}
	if !isNull(c.Error) {
		return streamError(c.Error)
	}
	if !s.started {
		s.started = true
		s.push(canonical.Event{Kind: canonical.EventStart, ID: s.head.ID, Name: s.head.Model})
	}
	for i := range c.Choices {
		if ch := &c.Choices[i]; ch.Index == 0 { // n is never above 1
			s.choice(ch)
		}
	}
	if c.Usage != nil {
		s.push(canonical.Event{Kind: canonical.EventUsage, Usage: c.Usage.canonical()})
	}
	return nil
}

// decode parses one chunk into the stream's reused struct; nil on bad JSON.
func (s *stream) decode(data []byte) *chunk {
	// encoding/json does not zero reused slice elements: clear them.
	ch := s.head.Choices[:cap(s.head.Choices)]
	clear(ch)
	s.head.chunk = chunk{Choices: ch[:0]}
	var err error
	if s.started {
		err = json.Unmarshal(data, &s.head.chunk)
	} else {
		err = json.Unmarshal(data, &s.head)
	}
	if err != nil {
		return nil
	}
	return &s.head.chunk
}

func (s *stream) choice(ch *chunkChoice) {
	d := &ch.Delta
	if d.Content != "" {
		s.push(canonical.Event{Kind: canonical.EventTextDelta, Text: d.Content})
	}
	if d.Refusal != "" {
		s.refused = true
		s.push(canonical.Event{Kind: canonical.EventRefusalDelta, Text: d.Refusal})
	}
	for i := range d.ToolCalls {
		tc := &d.ToolCalls[i]
		ord, fresh := s.toolOrdinal(tc.Index)
		// The first chunk of a call carries id and name, and may already
		// carry an arguments fragment.
		if fresh {
			s.push(canonical.Event{Kind: canonical.EventToolCallStart, Index: ord, ID: tc.ID, Name: tc.Function.Name})
		}
		if tc.Function.Arguments != "" {
			s.push(canonical.Event{Kind: canonical.EventToolCallDelta, Index: ord, Text: tc.Function.Arguments})
		}
	}
	if ch.FinishReason != "" && !s.stopped {
		s.stopped = true
		s.push(canonical.Event{Kind: canonical.EventStop, Stop: stopReason(ch.FinishReason, s.refused)})
	}
}

// toolOrdinal maps a provider index to the call's ordinal, registering it on
// first sight. Calls are few, so a linear scan beats a map.
func (s *stream) toolOrdinal(index int) (ord int, fresh bool) {
	for i, idx := range s.tools {
		if idx == index {
			return i, false
		}
	}
	s.tools = append(s.tools, index)
	return len(s.tools) - 1, true
}

func (s *stream) push(ev canonical.Event) { s.queue = append(s.queue, ev) }

// readError classifies an SSE read failure: the body ending before the
// terminal event is a truncation, anything else a broken transport.
func readError(err error) error {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return failure.Truncated("body ended before data: [DONE]")
	case errors.Is(err, sse.ErrEventTooLarge):
		return failure.Malformed("event too large", err)
	}
	return failure.Transport(err, false)
}
