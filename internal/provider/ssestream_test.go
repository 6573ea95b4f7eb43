package provider

import (
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
)

// echo yields one text delta per event and ends at "end".
type echo struct{}

func (echo) Decode(name, data []byte, q *Queue) error {
	if string(name) == "end" {
		return io.EOF
	}
	q.Push(canonical.Event{Kind: canonical.EventTextDelta, Text: string(data)})
	q.Push(canonical.Event{Kind: canonical.EventTextDelta, Text: string(data) + "!"})
	return nil
}

func TestSSEStreamEnds(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		wantTexts []string
		wantEnd   func(error) bool
	}{
		{"cut", "data: a\n\ndata: b", []string{"a", "a!"}, func(err error) bool {
			fe := failure.As(err)
			return fe != nil && fe.Class == failure.ProviderUnavailable && strings.Contains(fe.Detail, "the end")
		}},
		{"terminal", "data: a\n\nevent: end\ndata: {}\n\ndata: ignored\n\n", []string{"a", "a!"}, func(err error) bool { return err == io.EOF }},
		{"too large", "data: " + strings.Repeat("x", 17<<20) + "\n\n", nil, func(err error) bool {
			fe := failure.As(err)
			return fe != nil && strings.Contains(fe.Detail, "malformed")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSSEStream(io.NopCloser(strings.NewReader(tt.body)), echo{}, "the end")
			defer s.Close()
			var texts []string
			var err error
			for {
				var ev canonical.Event
				if ev, err = s.Next(); err != nil {
					break
				}
				texts = append(texts, ev.Text)
			}
			if strings.Join(texts, ",") != strings.Join(tt.wantTexts, ",") || !tt.wantEnd(err) {
				t.Fatalf("texts %q end %v", texts, err)
			}
		})
	}
}

// readSignal is a body that closes reading when a Read starts once armed.
type readSignal struct {
	io.ReadCloser
	armed   atomic.Bool
	once    sync.Once
	reading chan struct{}
}

func (r *readSignal) Read(p []byte) (int, error) {
	if r.armed.Load() {
		r.once.Do(func() { close(r.reading) })
	}
	return r.ReadCloser.Read(p)
}

// TestSSEStreamCloseUnblocksNext closes a stream from another goroutine
// while Next waits for data: Next must return, and -race must stay quiet.
func TestSSEStreamCloseUnblocksNext(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	body := &readSignal{ReadCloser: pr, reading: make(chan struct{})}
	s := NewSSEStream(body, echo{}, "the end")
	go func() { _, _ = pw.Write([]byte("data: a\n\n")) }()
	if ev, err := s.Next(); err != nil || ev.Text != "a" {
		t.Fatalf("first event %+v, %v", ev, err)
	}
	if _, err := s.Next(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	body.armed.Store(true)
	go func() {
		_, err := s.Next() // blocks: nothing more is written
		done <- err
	}()
	// Close once Next is reading the body, past its closed check: the pipe
	// then fails that read with io.ErrClosedPipe, whether the read had
	// blocked yet or not. (A Close before Next would give ErrStreamClosed
	// instead, without testing the unblocking.)
	<-body.reading
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		fe := failure.As(err)
		if fe == nil || !errors.Is(err, io.ErrClosedPipe) {
			t.Fatalf("Next after Close = %v, want a transport failure wrapping the closed body", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not unblock Next")
	}
	if _, err := s.Next(); err == nil {
		t.Fatal("Next after Close returned no error")
	}
}
