package provider

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/sse"
)

// EventDecoder turns one provider's SSE events into canonical events. It
// holds the per-stream state (tool indexes, usage so far) and is used by
// one goroutine at a time.
type EventDecoder interface {
	// Decode handles one event, pushing what it yields onto q. It returns
	// io.EOF at the provider's terminal event and a *failure.Error when the
	// event reports or reveals a broken answer. name and data are valid
	// only during the call.
	Decode(name, data []byte, q *Queue) error
}

// Queue holds the canonical events one SSE event yielded.
type Queue struct {
	events []canonical.Event
	head   int
}

// Push appends an event.
func (q *Queue) Push(ev canonical.Event) { q.events = append(q.events, ev) }

// SSEStream is a canonical.Stream over a provider's event-stream body: it
// reads events with a pooled sse.Reader and hands each to an EventDecoder.
// No goroutine is involved; Next does the reading.
type SSEStream struct {
	mu     sync.Mutex // serialises Next with Close's release of rd
	closed atomic.Bool
	body   io.ReadCloser
	rd     *sse.Reader
	dec    EventDecoder
	q      Queue
	err    error // sticky: io.EOF after the terminal event, or the failure
	// terminal names the terminal event, for the truncation detail.
	terminal string
}

var (
	_ canonical.Stream = (*SSEStream)(nil)
	_ canonical.Pender = (*SSEStream)(nil)
)

// Pending reports whether an event is available without blocking: decoded
// and queued, or its bytes already read.
func (s *SSEStream) Pending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.q.head < len(s.q.events) || (s.rd != nil && s.rd.Buffered() > 0)
}

// NewSSEStream reads body with dec. terminal names the event whose absence
// makes an ended body a truncation (e.g. "data: [DONE]").
func NewSSEStream(body io.ReadCloser, dec EventDecoder, terminal string) *SSEStream {
	return &SSEStream{body: body, rd: sse.NewReader(body), dec: dec, terminal: terminal,
		q: Queue{events: make([]canonical.Event, 0, 2)}}
}

// Next returns the next event, io.EOF after the terminal event, or a
// *failure.Error; once it returned an error it returns the same one again.
func (s *SSEStream) Next() (canonical.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := &s.q
	for {
		if q.head < len(q.events) {
			ev := q.events[q.head]
			q.events[q.head] = canonical.Event{} // drop references early
			q.head++
			return ev, nil
		}
		if s.err != nil {
			return canonical.Event{}, s.err
		}
		if s.closed.Load() {
			return canonical.Event{}, failure.Transport(ErrStreamClosed, false)
		}
		q.events, q.head = q.events[:0], 0
		ev, err := s.rd.Next()
		if err != nil {
			s.err = s.readError(err)
			continue
		}
		s.err = s.dec.Decode(ev.Name, ev.Data, q)
	}
}

// Close closes the body (unblocking a Next in progress) and then returns
// the reader's buffer to its pool. It is idempotent.
func (s *SSEStream) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	err := s.body.Close()
	s.mu.Lock()
	s.rd.Release()
	s.mu.Unlock()
	return err
}

// readError classifies an SSE read failure: the body ending before the
// terminal event is a truncation, anything else a broken transport. The
// cause stays wrapped, so a cancelled context remains visible to the engine.
func (s *SSEStream) readError(err error) error {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return failure.Truncated("body ended before " + s.terminal)
	case errors.Is(err, sse.ErrEventTooLarge):
		return failure.Malformed("event too large", err)
	}
	return failure.Transport(err, false)
}
