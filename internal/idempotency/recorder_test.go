package idempotency

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// brokenWriter fails writes after ok bytes and every flush after a failure,
// like a caller that went away.
type brokenWriter struct {
	h      http.Header
	ok     int
	failed bool
}

func (b *brokenWriter) Header() http.Header { return b.h }
func (b *brokenWriter) WriteHeader(int)     {}
func (b *brokenWriter) Write(p []byte) (int, error) {
	if len(p) <= b.ok {
		b.ok -= len(p)
		return len(p), nil
	}
	n := b.ok
	b.ok, b.failed = 0, true
	return n, errors.New("broken pipe")
}
func (b *brokenWriter) FlushError() error {
	if b.failed {
		return errors.New("broken pipe")
	}
	return nil
}

func TestRecorderMarksAFailedWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   int
		want string // what the caller was sent
	}{{"fails at once", 0, ""}, {"fails mid-answer", 5, "abcde"}} {
		t.Run(tc.name, func(t *testing.T) {
			rw := NewRecorder(&brokenWriter{h: http.Header{}, ok: tc.ok}, 1<<10)
			rw.WriteHeader(200)
			_, _ = rw.Write([]byte("abc"))
			rw.Flush()
			_, err := rw.Write([]byte("defgh"))
			if err == nil {
				t.Fatal("write error swallowed")
			}
			r := rw.Recording()
			if !r.WriteFailed {
				t.Fatal("WriteFailed not set")
			}
			// What was recorded is what the caller was sent, no more.
			if got := string(bytes.Join(r.Chunks, nil)); got != tc.want {
				t.Fatalf("recorded %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRecorderOverLimit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		over   bool
	}{
		{"one byte over", []string{"12345", "678901"}, true},
		{"over in one write", []string{"12345678901"}, true},
		{"exactly the limit", []string{"12345", "67890"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			under := httptest.NewRecorder()
			rw := NewRecorder(under, 10)
			for _, w := range tc.writes {
				_, _ = rw.Write([]byte(w))
				rw.Flush()
			}
			r := rw.Recording()
			if r.OverLimit != tc.over {
				t.Fatalf("OverLimit %v", r.OverLimit)
			}
			if tc.over && (r.Chunks != nil || r.Body != nil) {
				t.Fatal("an over-limit recording keeps its bytes")
			}
			if under.Body.String() != strings.Join(tc.writes, "") {
				t.Fatalf("caller got %q", under.Body.String())
			}
			if tc.over && Replay(httptest.NewRecorder(), r) != ErrNotReplayable {
				t.Fatal("an over-limit recording replayed")
			}
		})
	}
}

func TestRecorderPassesThroughAndRecordsChunks(t *testing.T) {
	under := httptest.NewRecorder()
	rw := NewRecorder(under, 1<<20)
	hd := rw.Header()
	hd.Set("Content-Type", "text/event-stream; charset=utf-8")
	hd.Set("X-Spillway-Model", "m")
	hd["x-spillway-trail"] = []string{"a=ok"} // not canonical: still kept
	hd.Set("X-Request-Id", "orig")
	hd.Set("Set-Cookie", "no")
	hd.Set("X-Other", "no")
	rw.WriteHeader(http.StatusOK)
	hd.Set("X-Spillway-Late", "not sent, not recorded")

	chunks := []string{"data: 1\n\n", "data: 2\n\n", "", "data: 3\n\ndata: 4\n\n", "tail"}
	for i, c := range chunks {
		if i == 3 { // one chunk from two writes
			_, _ = rw.Write([]byte(c[:9]))
			_, _ = rw.Write([]byte(c[9:]))
		} else {
			_, _ = rw.Write([]byte(c))
		}
		if i < len(chunks)-1 {
			if err := http.NewResponseController(rw).Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	r := rw.Recording()
	if under.Body.String() != strings.Join(chunks, "") || !under.Flushed || under.Code != 200 {
		t.Fatalf("pass-through: %d %q flushed=%v", under.Code, under.Body.String(), under.Flushed)
	}
	want := []string{"data: 1\n\n", "data: 2\n\n", "data: 3\n\ndata: 4\n\n", "tail"}
	if r.Status != 200 || !r.Streamed || r.Body != nil || len(r.Chunks) != len(want) {
		t.Fatalf("recording %+v", r)
	}
	for i := range want {
		if string(r.Chunks[i]) != want[i] {
			t.Fatalf("chunk %d %q, want %q", i, r.Chunks[i], want[i])
		}
	}
	wantH := http.Header{"Content-Type": {"text/event-stream; charset=utf-8"}, "X-Spillway-Model": {"m"}, "x-spillway-trail": {"a=ok"}, "X-Request-Id": {"orig"}}
	if fmt.Sprint(r.Header) != fmt.Sprint(wantH) {
		t.Fatalf("headers %v, want %v", r.Header, wantH)
	}
	// Chunks do not alias each other: appending to one cannot clobber the next.
	_ = append(r.Chunks[0], 'X')
	if string(r.Chunks[1]) != want[1] {
		t.Fatal("chunks alias")
	}
}

func TestRecorderNonStreamAndImplicitStatus(t *testing.T) {
	under := httptest.NewRecorder()
	rw := NewRecorder(under, 1<<10)
	_, _ = rw.Write([]byte(`{"a":`))
	_, _ = rw.Write([]byte(`1}`))
	r := rw.Recording()
	if r.Status != 200 || r.Streamed || string(r.Body) != `{"a":1}` || r.Chunks != nil {
		t.Fatalf("recording %+v", r)
	}
	// 1xx is passed through but not recorded; the final status is.
	rw = NewRecorder(httptest.NewRecorder(), 1<<10)
	rw.WriteHeader(http.StatusEarlyHints)
	rw.WriteHeader(http.StatusBadRequest)
	rw.WriteHeader(http.StatusOK) // superfluous: ignored
	if r := rw.Recording(); r.Status != http.StatusBadRequest {
		t.Fatalf("status %d", r.Status)
	}
	// Nothing written at all (a 499): no status.
	if r := NewRecorder(httptest.NewRecorder(), 1).Recording(); r.Status != 0 {
		t.Fatalf("status %d", r.Status)
	}
}

func TestReplayRefusesUnreplayable(t *testing.T) {
	for _, r := range []*Recording{nil, {}, {Status: 200, OverLimit: true}} {
		if err := Replay(httptest.NewRecorder(), r); err != ErrNotReplayable {
			t.Errorf("%+v: %v", r, err)
		}
	}
}

// rawResponse is a response as read off the wire by hand, keeping the
// chunked transfer frames.
type rawResponse struct {
	status int
	header textproto.MIMEHeader
	frames []string // chunked frames, or the whole body
}

// rawPost sends one request on a fresh connection and reads the raw answer.
func rawPost(t *testing.T, addr, key, body string) rawResponse {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second)) // a hang guard, never waited on
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nIdempotency-Key: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", addr, key, len(body), body)
	tp := textproto.NewReader(bufio.NewReader(conn))
	line, err := tp.ReadLine()
	if err != nil {
		t.Fatal(err)
	}
	var res rawResponse
	if _, err := fmt.Sscanf(line, "HTTP/1.1 %d", &res.status); err != nil {
		t.Fatalf("status line %q: %v", line, err)
	}
	if res.header, err = tp.ReadMIMEHeader(); err != nil {
		t.Fatal(err)
	}
	if res.header.Get("Transfer-Encoding") != "chunked" {
		n, _ := strconv.Atoi(res.header.Get("Content-Length"))
		b := make([]byte, n)
		if _, err := io.ReadFull(tp.R, b); err != nil {
			t.Fatal(err)
		}
		res.frames = []string{string(b)}
		return res
	}
	for {
		line, err := tp.ReadLine()
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.ParseInt(line, 16, 32)
		if err != nil {
			t.Fatalf("chunk size %q", line)
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(tp.R, b); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return res
		}
		res.frames = append(res.frames, string(b[:n]))
	}
}

// idemServer serves a fixed answer (events are flushed one by one when
// streamed) behind a store, the way the gateway's handler uses it.
func idemServer(t *testing.T, s *Store, stream bool, events []string) (addr string, runs *atomic.Int32) {
	runs = new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Request-Id", "req-"+strconv.Itoa(int(runs.Load())+100))
		c, err := s.Begin(r.Context(), "tenant", r.Header.Get("Idempotency-Key"), RequestHash(r.URL.Path, body))
		switch {
		case err != nil:
			return
		case c.Replay != nil:
			_ = Replay(w, c.Replay)
			return
		case c.Failed != nil:
			_ = Replay(w, c.Failed)
			return
		case c.Refused != "":
			pub := c.Refused.Public()
			w.Header().Set(HeaderShouldRetry, "false")
			http.Error(w, pub.Code, pub.Status)
			return
		}
		o := c.Owner
		defer o.Abandon()
		runs.Add(1)
		rw := o.Recorder(w)
		rc := http.NewResponseController(rw)
		// Deadlines reach the connection through Unwrap.
		if err := rc.SetWriteDeadline(time.Now().Add(time.Minute)); err != nil {
			t.Errorf("SetWriteDeadline through the recorder: %v", err)
		}
		rw.Header().Set("X-Spillway-Model", "m")
		rw.Header().Set("X-Not-Kept", "x")
		if !stream {
			rw.Header().Set("Content-Type", "application/json")
			rw.Header().Set("Content-Length", strconv.Itoa(len(strings.Join(events, ""))))
		} else {
			rw.Header().Set("Content-Type", "text/event-stream")
		}
		rw.WriteHeader(http.StatusOK)
		for _, ev := range events {
			_, _ = io.WriteString(rw, ev)
			if stream {
				_ = rc.Flush()
			}
		}
		o.Complete(rw.Recording())
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String(), runs
}

func TestReplayOverTheWire(t *testing.T) {
	events := []string{
		"data: {\"delta\":\"Hel\"}\n\n",
		"data: {\"delta\":\"lo\"}\n\n",
		": ping\n\n",
		"data: " + strings.Repeat("x", 1500) + "\n\n",
		"data: [DONE]\n\n",
	}
	for _, stream := range []bool{true, false} {
		t.Run("stream="+strconv.FormatBool(stream), func(t *testing.T) {
			s, _ := newTest(t, Options{})
			addr, runs := idemServer(t, s, stream, events)
			first := rawPost(t, addr, "key-1", `{"stream":true}`)
			second := rawPost(t, addr, "key-1", `{"stream":true}`)
			if runs.Load() != 1 {
				t.Fatalf("generation ran %d times", runs.Load())
			}
			want := events
			if !stream {
				want = []string{strings.Join(events, "")}
			}
			for name, res := range map[string]rawResponse{"first": first, "replay": second} {
				if res.status != 200 || strings.Join(res.frames, "|") != strings.Join(want, "|") {
					t.Fatalf("%s: %d, frames %q, want %q", name, res.status, res.frames, want)
				}
			}
			if first.header.Get(HeaderReplayed) != "" || second.header.Get(HeaderReplayed) != "true" || second.header.Get(HeaderShouldRetry) != "false" {
				t.Fatal("replay marker wrong")
			}
			for _, k := range []string{"Content-Type", "X-Spillway-Model", "X-Request-Id"} {
				if first.header.Get(k) != second.header.Get(k) {
					t.Errorf("%s: %q then %q", k, first.header.Get(k), second.header.Get(k))
				}
			}
			if second.header.Get("X-Not-Kept") != "" {
				t.Error("an unkept header was replayed")
			}
			if other := rawPost(t, addr, "key-1", `{"stream":false}`); other.status != http.StatusConflict || other.header.Get(HeaderShouldRetry) != "false" {
				t.Fatalf("other body: %d", other.status)
			}
		})
	}
}

func TestOwnerRecorderUsesTheStoreLimit(t *testing.T) {
	s, _ := newTest(t, Options{MaxBytes: 4096, MaxEntryBytes: 512})
	o := begin(t, s, "t", "k", h("a")).Owner
	rw := o.Recorder(httptest.NewRecorder())
	_, _ = rw.Write(make([]byte, 513))
	o.Complete(rw.Recording())
	if c, _ := s.Begin(context.Background(), "t", "k", h("a")); c.Refused != RefusedNotKept {
		t.Fatalf("got %s", kind(c))
	}
}

func TestPooledRecordingsDoNotAlias(t *testing.T) {
	s, _ := newTest(t, Options{})
	var recs []*Recording
	for i, body := range []string{"first answer", "second", "third answer, longer"} {
		o := begin(t, s, "t", strconv.Itoa(i), h("a")).Owner
		rw := o.Recorder(httptest.NewRecorder())
		_, _ = io.WriteString(rw, body[:3])
		rw.Flush()
		_, _ = io.WriteString(rw, body[3:])
		r := rw.Recording()
		if rw.Recording() != r {
			t.Fatal("a second Recording call built another recording")
		}
		_, _ = io.WriteString(rw, "late") // passed through, not recorded
		o.Complete(r)
		recs = append(recs, r)
	}
	for i, want := range []string{"first answer", "second", "third answer, longer"} {
		if got := string(bytes.Join(recs[i].Chunks, nil)); got != want {
			t.Fatalf("recording %d became %q, want %q", i, got, want)
		}
	}
}
