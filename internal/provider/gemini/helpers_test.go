package gemini

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/provider"
)

const testKey = "AIzaSyTEST-secret-key-0123456789"

// reply is one canned upstream answer.
type reply struct {
	status int
	header map[string]string
	body   string
}

// seen is what the fake upstream received.
type seen struct {
	mu     sync.Mutex
	method string
	uri    string
	header http.Header
	body   []byte
}

func (s *seen) get() (method, uri string, h http.Header, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.method, s.uri, s.header, s.body
}

// upstream starts a server answering every request with r and returns a
// Target pointing at it.
func upstream(t testing.TB, r reply) (*provider.Target, *seen) {
	t.Helper()
	s := &seen{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		s.mu.Lock()
		s.method, s.uri, s.header, s.body = req.Method, req.URL.RequestURI(), req.Header.Clone(), body
		s.mu.Unlock()
		for k, v := range r.header {
			w.Header().Set(k, v)
		}
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		}
		status := r.status
		if status == 0 {
			status = http.StatusOK
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, r.body)
	}))
	t.Cleanup(srv.Close)
	return &provider.Target{
		Deployment: "test",
		BaseURL:    srv.URL,
		Model:      "gemini-2.5-flash",
		APIKey:     testKey,
		HTTP:       srv.Client(),
	}, s
}

// sseReply is a 200 event-stream answer.
func sseReply(body string) reply {
	return reply{header: map[string]string{"Content-Type": "text/event-stream"}, body: body}
}

// chunks renders data blocks as Gemini sends them.
func chunks(data ...string) string {
	var b strings.Builder
	for _, d := range data {
		b.WriteString("data: " + d + "\n\n")
	}
	return b.String()
}

// drain reads a stream to its end, returning the events and the final error.
func drain(t testing.TB, st canonical.Stream) ([]canonical.Event, error) {
	t.Helper()
	var evs []canonical.Event
	for range 100000 {
		ev, err := st.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	t.Fatal("stream did not end")
	return nil, nil
}

func user(text string) canonical.Message {
	return canonical.Message{Role: canonical.RoleUser, Content: []canonical.Part{canonical.TextPart(text)}}
}

func hello() *canonical.Request {
	return &canonical.Request{Messages: []canonical.Message{user("hi")}}
}

func streamOf(t testing.TB, r reply) (canonical.Stream, error) {
	t.Helper()
	tgt, _ := upstream(t, r)
	return New().Stream(context.Background(), tgt, hello())
}

// classOf is the failure class of err, or "" when err is not classified.
func classOf(err error) failure.Class {
	if fe := failure.As(err); fe != nil {
		return fe.Class
	}
	return ""
}

func isEOF(err error) bool { return errors.Is(err, io.EOF) && failure.As(err) == nil }

func ptr[T any](v T) *T { return &v }

func nopCloser(s string) io.ReadCloser { return io.NopCloser(strings.NewReader(s)) }
