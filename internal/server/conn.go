package server

import (
	"errors"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"
)

// Caller-side hygiene, for every request: a body must arrive within the
// configured body_timeout, and an answer given before the body was read
// whole closes the connection. Without the close, net/http drains an
// unread body before the answer leaves, so a caller that announces a body
// and never sends it would get no answer and hold its connection for as
// long as it likes, key or no key.

// guardBody sets the body's read deadline and wraps w and r.Body so that an
// early answer closes the connection. A request without a body is left
// alone.
func (s *Server) guardBody(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, *http.Request) {
	if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		return w, r
	}
	timeout := s.opts.Catalog.Load().Config().Server.BodyTimeout.D()
	if timeout > 0 {
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(timeout))
	}
	b := &trackedBody{ReadCloser: r.Body}
	r.Body = b
	return &closingWriter{ResponseWriter: w, body: b}, r
}

// trackedBody notes when a body was read to its end.
type trackedBody struct {
	io.ReadCloser
	done atomic.Bool
}

func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.done.Store(true)
	}
	return n, err
}

// closingWriter asks net/http to close the connection when the answer
// starts before the body was read whole.
type closingWriter struct {
	http.ResponseWriter
	body    *trackedBody
	started bool
}

func (w *closingWriter) WriteHeader(status int) {
	if !w.started {
		w.started = true
		if !w.body.done.Load() {
			// The rest of the body is never read: close after the answer,
			// and end the read net/http would otherwise wait on before
			// closing.
			w.Header().Set("Connection", "close")
			_ = http.NewResponseController(w.ResponseWriter).SetReadDeadline(time.Now())
		}
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *closingWriter) Write(p []byte) (int, error) {
	if !w.started {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *closingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// isTimeout reports whether err is a deadline passing.
func isTimeout(err error) bool {
	var ne interface{ Timeout() bool }
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}
