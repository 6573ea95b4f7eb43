package idempotency

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Recording is one answer as the caller saw it. Once handed to an Owner it is
// shared read-only by every replay and must not be modified.
type Recording struct {
	Status int
	// Header holds only the headers worth replaying: Content-Type,
	// Cache-Control, X-Accel-Buffering, Retry-After, X-Request-Id (the
	// original's, so a replay names the request that ran) and every
	// X-Spillway-* header. Date, Content-Length and the rest are the
	// replay's own.
	Header http.Header
	// Body is a non-streamed answer's body.
	Body []byte
	// Chunks is a streamed answer: the bytes of each flush, in order.
	Chunks [][]byte
	// Streamed is true when the answer was flushed at least once.
	Streamed bool
	// OverLimit: the answer outgrew the recorder's limit, so the recording
	// holds no body and cannot be replayed.
	OverLimit bool
	// WriteFailed: a write or flush to the caller failed, so the caller did
	// not see the whole answer.
	WriteFailed bool
}

// size is the recording's accounted memory.
func (r *Recording) size() int64 {
	n := int64(len(r.Body))
	for _, c := range r.Chunks {
		n += int64(len(c)) + 24 // plus the slice header
	}
	for k, vs := range r.Header {
		n += int64(len(k))
		for _, v := range vs {
			n += int64(len(v)) + 16
		}
	}
	return n
}

// kept reports whether a response header is recorded for replay.
func kept(k string) bool {
	const spillway = "X-Spillway-"
	if len(k) > len(spillway) && strings.EqualFold(k[:len(spillway)], spillway) {
		return true
	}
	for _, h := range [...]string{"Content-Type", "Cache-Control", "X-Accel-Buffering", "Retry-After", "X-Request-Id", "Request-Id"} {
		if strings.EqualFold(k, h) {
			return true
		}
	}
	return false
}

// RecordingWriter passes a response through to the caller unchanged and
// records it: the status, the headers worth replaying (as they were when the
// status was sent) and the body bytes, split at each flush. It implements
// http.ResponseWriter, http.Flusher and FlushError, and unwraps for
// http.ResponseController. It is used by one handler goroutine, like any
// ResponseWriter.
type RecordingWriter struct {
	w     http.ResponseWriter
	rc    http.ResponseController
	limit int
	pool  *sync.Pool // of *recBuf; nil: buffers are not reused

	status int
	header http.Header
	buf    *recBuf
	rec    *Recording // once Recording was called
	// streamed: flushed at least once; over: data outgrew limit and was
	// dropped; broken: a write or flush to the caller failed.
	streamed, over, broken bool
}

// recBuf is the scratch a recording grows in. It is reused across requests
// when it comes from a pool, so a stream's recording costs one exact copy
// instead of a chain of growing appends.
type recBuf struct {
	data []byte
	ends []int // end offset in data of each flushed chunk
}

// maxPooledBuf keeps rare huge answers from pinning memory in a pool.
const maxPooledBuf = 1 << 20

// NewRecorder wraps w, recording at most maxBytes of body; past that the
// recording is dropped and marked OverLimit (the caller still gets every
// byte).
func NewRecorder(w http.ResponseWriter, maxBytes int) *RecordingWriter {
	return &RecordingWriter{w: w, rc: *http.NewResponseController(w), limit: maxBytes, buf: &recBuf{}}
}

func newPooledRecorder(w http.ResponseWriter, maxBytes int, pool *sync.Pool) *RecordingWriter {
	r := &RecordingWriter{w: w, rc: *http.NewResponseController(w), limit: maxBytes, pool: pool}
	r.buf = pool.Get().(*recBuf)
	return r
}

// Header returns the underlying writer's header map.
func (r *RecordingWriter) Header() http.Header { return r.w.Header() }

// Unwrap returns the underlying writer, for http.ResponseController.
func (r *RecordingWriter) Unwrap() http.ResponseWriter { return r.w }

// WriteHeader sends and records the status. Informational (1xx) statuses
// are passed through and not recorded.
func (r *RecordingWriter) WriteHeader(code int) {
	if code >= 200 {
		r.capture(code)
	}
	r.w.WriteHeader(code)
}

func (r *RecordingWriter) capture(code int) {
	if r.status != 0 {
		return
	}
	r.status = code
	for k, vs := range r.w.Header() {
		if kept(k) {
			if r.header == nil {
				r.header = make(http.Header, 8)
			}
			r.header[k] = slices.Clone(vs)
		}
	}
}

// Write sends p and records what was sent.
func (r *RecordingWriter) Write(p []byte) (int, error) {
	r.capture(http.StatusOK)
	n, err := r.w.Write(p)
	if err != nil {
		r.broken = true
	}
	if !r.over && r.buf != nil {
		if len(r.buf.data)+n > r.limit {
			r.over = true
			r.release()
		} else {
			r.buf.data = append(r.buf.data, p[:n]...)
		}
	}
	return n, err
}

// release gives the scratch buffer back; nothing more is recorded.
func (r *RecordingWriter) release() {
	b := r.buf
	r.buf = nil
	if r.pool == nil || b == nil || cap(b.data) > maxPooledBuf {
		return
	}
	b.data, b.ends = b.data[:0], b.ends[:0]
	r.pool.Put(b)
}

// Flush flushes to the caller and ends the current chunk.
func (r *RecordingWriter) Flush() { _ = r.FlushError() }

// FlushError is Flush returning the underlying writer's error, which
// http.ResponseController prefers.
func (r *RecordingWriter) FlushError() error {
	r.capture(http.StatusOK) // a flush sends the header
	r.streamed = true
	if b := r.buf; b != nil && len(b.data) > r.lastEnd() {
		b.ends = append(b.ends, len(b.data))
	}
	err := r.rc.Flush()
	if err != nil && !errors.Is(err, http.ErrNotSupported) {
		r.broken = true
	}
	return err
}

func (r *RecordingWriter) lastEnd() int {
	if len(r.buf.ends) == 0 {
		return 0
	}
	return r.buf.ends[len(r.buf.ends)-1]
}

// Recording returns what was recorded, as one exact copy the recorder no
// longer touches. Call it when the handler has finished writing; bytes
// written after the last flush form the last chunk. Later writes are passed
// through but not recorded, and later calls return the same Recording.
func (r *RecordingWriter) Recording() *Recording {
	if r.rec != nil {
		return r.rec
	}
	rec := &Recording{Status: r.status, Header: r.header, Streamed: r.streamed, OverLimit: r.over, WriteFailed: r.broken}
	r.rec = rec
	b := r.buf
	if rec.OverLimit {
		return rec
	}
	defer r.release()
	if len(b.data) == 0 {
		return rec
	}
	data := slices.Clone(b.data)
	if !r.streamed {
		rec.Body = data
		return rec
	}
	rec.Chunks = make([][]byte, 0, len(b.ends)+1)
	start := 0
	for _, end := range b.ends {
		rec.Chunks = append(rec.Chunks, data[start:end:end])
		start = end
	}
	if start < len(data) {
		rec.Chunks = append(rec.Chunks, data[start:len(data):len(data)])
	}
	return rec
}

// ErrNotReplayable is returned by Replay for a recording with no status or
// without its body.
var ErrNotReplayable = errors.New("idempotency: recording cannot be replayed")

// Replay writes a recording back: its status, its headers plus
// Idempotent-Replayed: true and X-Should-Retry: false, then the body, or a
// stream's chunks each followed by a flush, so a stream is replayed event
// for event. Headers already set on w and not in the recording stay. The
// error is the first write or flush failure (the caller went away).
func Replay(w http.ResponseWriter, r *Recording) error {
	if r == nil || r.Status == 0 || r.OverLimit {
		return ErrNotReplayable
	}
	h := w.Header()
	for k, vs := range r.Header {
		h[k] = slices.Clone(vs) // never let a later Add touch the shared recording
	}
	h.Set(HeaderReplayed, "true")
	h.Set(HeaderShouldRetry, "false")
	if !r.Streamed {
		h.Set("Content-Length", strconv.Itoa(len(r.Body)))
		w.WriteHeader(r.Status)
		if _, err := w.Write(r.Body); err != nil {
			return fmt.Errorf("idempotency: replay: %w", err)
		}
		return nil
	}
	h.Del("Content-Length")
	w.WriteHeader(r.Status)
	rc := http.NewResponseController(w)
	for _, c := range r.Chunks {
		if _, err := w.Write(c); err != nil {
			return fmt.Errorf("idempotency: replay: %w", err)
		}
		if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return fmt.Errorf("idempotency: replay: %w", err)
		}
	}
	return nil
}
