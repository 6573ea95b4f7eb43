package bedrock

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/provider"
)

const (
	testKey    = "ABSKQmVkcm9ja0FQSUtleS1test-secret"
	profileARN = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0"
	// profilePath is profileARN as the AWS SDK escapes it into the path.
	profilePath = "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.anthropic.claude-sonnet-4-5-20250929-v1%3A0"
)

var fixedTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// newAdapter is the adapter with the signing clock fixed.
func newAdapter() *Adapter {
	a := New().(*Adapter)
	a.now = func() time.Time { return fixedTime }
	return a
}

func ptr[T any](v T) *T { return &v }

func user(text string) canonical.Message {
	return canonical.Message{Role: canonical.RoleUser, Content: []canonical.Part{canonical.TextPart(text)}}
}

func hello() *canonical.Request {
	return &canonical.Request{Messages: []canonical.Message{user("hi")}}
}

// reply is one canned upstream answer.
type reply struct {
	status int
	header map[string]string
	body   []byte
}

// seen is what the fake upstream received.
type seen struct {
	mu      sync.Mutex
	method  string
	escaped string // the path as sent, percent-encoding kept
	header  http.Header
	body    []byte
}

func (s *seen) get() (method, escaped string, h http.Header, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.method, s.escaped, s.header, s.body
}

// upstream starts a server answering every request with r and returns a
// Target pointing at it (Bearer auth).
func upstream(t testing.TB, r reply) (*provider.Target, *seen) {
	t.Helper()
	s := &seen{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		s.mu.Lock()
		s.method, s.escaped, s.header, s.body = req.Method, req.URL.EscapedPath(), req.Header.Clone(), body
		s.mu.Unlock()
		for k, v := range r.header {
			w.Header().Set(k, v)
		}
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.Header().Set("X-Amzn-Requestid", "4b7b5a4c-0e5d-4a0b-9a51-5b6c7d8e9f00")
		status := r.status
		if status == 0 {
			status = http.StatusOK
		}
		w.WriteHeader(status)
		_, _ = w.Write(r.body)
	}))
	t.Cleanup(srv.Close)
	return &provider.Target{
		Deployment: "test",
		BaseURL:    srv.URL,
		Model:      profileARN,
		APIKey:     testKey,
		Region:     "us-east-1",
		HTTP:       srv.Client(),
	}, s
}

// streamReply is a 200 event-stream answer.
func streamReply(body []byte) reply {
	return reply{header: map[string]string{"Content-Type": eventStreamType}, body: body}
}

// frame encodes one message with the AWS encoder.
func frame(headers eventstream.Headers, payload string) []byte {
	var buf bytes.Buffer
	if err := eventstream.NewEncoder().Encode(&buf, eventstream.Message{Headers: headers, Payload: []byte(payload)}); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

func str(name, v string) eventstream.Header {
	return eventstream.Header{Name: name, Value: eventstream.StringValue(v)}
}

// ev is an event message as Bedrock frames it.
func ev(typ, payload string) []byte {
	return frame(eventstream.Headers{str(":event-type", typ), str(":content-type", "application/json"), str(":message-type", "event")}, payload)
}

// exception is an in-stream exception message.
func exception(name, payload string) []byte {
	return frame(eventstream.Headers{str(":exception-type", name), str(":content-type", "application/json"), str(":message-type", "exception")}, payload)
}

func join(frames ...[]byte) []byte { return bytes.Join(frames, nil) }

// drain reads a stream to its end, returning the events and the final error.
func drain(t testing.TB, st canonical.Stream) ([]canonical.Event, error) {
	t.Helper()
	var evs []canonical.Event
	for range 100000 {
		e, err := st.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, e)
	}
	t.Fatal("stream did not end")
	return nil, nil
}

func streamOf(t testing.TB, r reply) (canonical.Stream, error) {
	t.Helper()
	tgt, _ := upstream(t, r)
	return newAdapter().Stream(context.Background(), tgt, hello())
}

// classOf is the failure class of err, or "" when err is not classified.
func classOf(err error) failure.Class {
	if fe := failure.As(err); fe != nil {
		return fe.Class
	}
	return ""
}

func isEOF(err error) bool { return errors.Is(err, io.EOF) && failure.As(err) == nil }
