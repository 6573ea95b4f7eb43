// Package logsink hands log output off the request path: writes land in a
// memory buffer that a background goroutine writes out in batches, so a
// request never waits on a write to the log's file or pipe.
package logsink

import (
	"io"
	"sync"
	"time"
)

// Writer buffers writes and writes them out every interval, or at once
// when the buffer passes its soft limit. Close writes what is left.
type Writer struct {
	out      io.Writer
	soft     int
	hard     int
	interval time.Duration

	mu     sync.Mutex
	buf    []byte
	spare  []byte
	closed bool

	outMu sync.Mutex // serialises writes to out
	kick  chan struct{}
	stop  chan struct{}
	done  chan struct{}
}

// New starts a Writer over out. interval <= 0 means 100ms.
func New(out io.Writer, interval time.Duration) *Writer {
	if interval <= 0 {
		interval = 100 * time.Millisecond
	}
	w := &Writer{out: out, soft: 64 << 10, hard: 8 << 20, interval: interval,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

// Write appends p to the buffer. Past the hard limit (the output is not
// keeping up) it writes synchronously rather than drop log lines.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	if w.closed || len(w.buf)+len(p) > w.hard {
		w.mu.Unlock()
		w.flush()
		w.outMu.Lock()
		defer w.outMu.Unlock()
		return w.out.Write(p)
	}
	w.buf = append(w.buf, p...)
	full := len(w.buf) >= w.soft
	w.mu.Unlock()
	if full {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

// flush writes out what is buffered.
func (w *Writer) flush() {
	w.outMu.Lock()
	defer w.outMu.Unlock()
	w.mu.Lock()
	b := w.buf
	w.buf = w.spare[:0]
	w.mu.Unlock()
	if len(b) > 0 {
		_, _ = w.out.Write(b)
	}
	w.mu.Lock()
	w.spare = b[:0]
	w.mu.Unlock()
}

func (w *Writer) run() {
	defer close(w.done)
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			w.flush()
			return
		case <-t.C:
		case <-w.kick:
		}
		w.flush()
	}
}

// Close writes everything buffered and stops the background goroutine;
// later writes go straight to the output.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.mu.Unlock()
	close(w.stop)
	<-w.done
	return nil
}
