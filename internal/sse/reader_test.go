package sse

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

type ev struct{ name, data string }

func readAll(t testing.TB, in string) ([]ev, error) {
	return readFrom(t, strings.NewReader(in))
}

// chunked hands out its input n bytes per Read, so lines and events straddle
// the reader's refills.
type chunked struct {
	s string
	n int
}

func (c *chunked) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	k := min(len(p), c.n, len(c.s))
	copy(p, c.s[:k])
	c.s = c.s[k:]
	return k, nil
}

// feeds are the ways a test hands an input to the reader: whole, a byte
// per read, and in pieces that split lines and terminators.
var feeds = map[string]func(string) io.Reader{
	"whole":    func(s string) io.Reader { return strings.NewReader(s) },
	"bytewise": func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
	"by 7":     func(s string) io.Reader { return &chunked{s, 7} },
	"by 4095":  func(s string) io.Reader { return &chunked{s, 4095} },
}

func readFrom(t testing.TB, in io.Reader) ([]ev, error) {
	r := NewReader(in)
	defer r.Release()
	var out []ev
	for {
		e, err := r.Next()
		if err != nil {
			return out, err
		}
		out = append(out, ev{string(e.Name), string(e.Data)})
	}
}

func TestReader(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []ev
		wantErr error
	}{
		{"empty", "", nil, io.EOF},
		{"data only", "data: {\"a\":1}\n\ndata: [DONE]\n\n", []ev{{"", `{"a":1}`}, {"", "[DONE]"}}, io.EOF},
		{"named", "event: message_start\ndata: {}\n\n", []ev{{"message_start", "{}"}}, io.EOF},
		{"crlf", "event: x\r\ndata: y\r\n\r\n", []ev{{"x", "y"}}, io.EOF},
		{"no space", "data:y\n\n", []ev{{"", "y"}}, io.EOF},
		{"two spaces keep one", "data:  y\n\n", []ev{{"", " y"}}, io.EOF},
		{"multi data", "data: a\ndata: b\n\n", []ev{{"", "a\nb"}}, io.EOF},
		{"comment and ping", ": keepalive\n\nevent: ping\ndata: {}\n\n", []ev{{"ping", "{}"}}, io.EOF},
		{"name without data is dropped", "event: x\n\ndata: y\n\n", []ev{{"", "y"}}, io.EOF},
		{"cut mid event", "data: a\n\ndata: b\n", []ev{{"", "a"}}, io.ErrUnexpectedEOF},
		{"cut mid line", "data: a\n\ndata: b", []ev{{"", "a"}}, io.ErrUnexpectedEOF},
		{"id and retry ignored", "id: 1\nretry: 5\ndata: z\n\n", []ev{{"", "z"}}, io.EOF},
		{"long line", "data: " + strings.Repeat("x", 70000) + "\n\n", []ev{{"", strings.Repeat("x", 70000)}}, io.EOF},
		{"long multi data", "data: " + strings.Repeat("x", 5000) + "\ndata: " + strings.Repeat("y", 5000) + "\n\n",
			[]ev{{"", strings.Repeat("x", 5000) + "\n" + strings.Repeat("y", 5000)}}, io.EOF},
		{"data then a name then data", "data: a\nevent: e\ndata: b\n\ndata: c\n\n", []ev{{"e", "a\nb"}, {"", "c"}}, io.EOF},
		{"events filling the buffer", strings.Repeat("data: "+strings.Repeat("z", 1000)+"\n\n", 9),
			[]ev{{"", strings.Repeat("z", 1000)}, {"", strings.Repeat("z", 1000)}, {"", strings.Repeat("z", 1000)}, {"", strings.Repeat("z", 1000)},
				{"", strings.Repeat("z", 1000)}, {"", strings.Repeat("z", 1000)}, {"", strings.Repeat("z", 1000)}, {"", strings.Repeat("z", 1000)}, {"", strings.Repeat("z", 1000)}}, io.EOF},
	}
	for _, tt := range tests {
		for feed, mk := range feeds {
			t.Run(tt.name+"/"+feed, func(t *testing.T) {
				testRead(t, mk(tt.in), tt.want, tt.wantErr)
			})
		}
	}
}

func testRead(t *testing.T, in io.Reader, want []ev, wantErr error) {
	t.Helper()
	got, err := readFrom(t, in)
	if !errors.Is(err, wantErr) {
		t.Fatalf("err = %v, want %v", err, wantErr)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d events %q, want %q", len(got), got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("event %d = %q, want %q", i, got[i], want[i])
		}
	}
}

func TestAppendEventRoundTrip(t *testing.T) {
	b := AppendEvent(nil, "response.created", []byte(`{"type":"response.created"}`))
	b = AppendEvent(b, "", []byte(`[DONE]`))
	got, err := readAll(t, string(b))
	if err != io.EOF || len(got) != 2 || got[0].name != "response.created" || got[1].data != "[DONE]" {
		t.Fatalf("round trip = %q, %v", got, err)
	}
}

func FuzzReader(f *testing.F) {
	for _, s := range []string{"data: a\n\n", "event: x\r\ndata: y\r\n\r\n", ": c\n\ndata: a\ndata: b\n\n", "data: a", "event:\n\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		evs, err := readAll(t, in)
		if err != io.EOF && err != io.ErrUnexpectedEOF && err != ErrEventTooLarge {
			t.Fatalf("unexpected error %v", err)
		}
		// However the input is cut into reads, the events are the same.
		for feed, mk := range feeds {
			got, gerr := readFrom(t, mk(in))
			if gerr != err || len(got) != len(evs) {
				t.Fatalf("%s: %d events, %v; whole: %d events, %v", feed, len(got), gerr, len(evs), err)
			}
			for i := range got {
				if got[i] != evs[i] {
					t.Fatalf("%s: event %d = %q, whole: %q", feed, i, got[i], evs[i])
				}
			}
		}
		// Every event re-encoded and re-read must come back the same.
		var b []byte
		for _, e := range evs {
			if strings.ContainsAny(e.data, "\r\n") || strings.ContainsAny(e.name, "\r\n") {
				return
			}
			if len(e.data) > 0 && e.data[0] == ' ' {
				return // a leading space is eaten once by the encoder's own space
			}
			b = AppendEvent(b, e.name, []byte(e.data))
		}
		again, err := readAll(t, string(b))
		if err != io.EOF || len(again) != len(evs) {
			t.Fatalf("re-read %q: %v, %d events, want %d", b, err, len(again), len(evs))
		}
	})
}
