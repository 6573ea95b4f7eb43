package logsink

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

type syncBuf struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return s.b.Write(p)
}

func (s *syncBuf) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestWriterBatchesAndLosesNothing(t *testing.T) {
	out := &syncBuf{}
	w := New(out, time.Hour) // only the soft limit and Close flush
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				_, _ = w.Write([]byte("line\n"))
			}
		}(g)
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(out.String(), "line\n"); got != 8000 {
		t.Fatalf("%d lines out, want 8000", got)
	}
	if out.writes > 10 {
		t.Errorf("%d writes to the output for 8000 lines: not batched", out.writes)
	}
	// After Close, writes go straight through.
	_, _ = w.Write([]byte("late\n"))
	if !strings.HasSuffix(out.String(), "late\n") {
		t.Error("a write after Close was lost")
	}
}

func TestWriterFlushesOnInterval(t *testing.T) {
	out := &syncBuf{}
	w := New(out, 5*time.Millisecond)
	defer w.Close()
	_, _ = w.Write([]byte("x\n"))
	deadline := time.Now().Add(5 * time.Second)
	for out.String() == "" && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if out.String() != "x\n" {
		t.Fatalf("not flushed on the interval: %q", out.String())
	}
}
