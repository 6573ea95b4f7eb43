package sse

import (
	"errors"
	"io"
	"strings"
	"testing"
)

type ev struct{ name, data string }

func readAll(t testing.TB, in string) ([]ev, error) {
	r := NewReader(strings.NewReader(in))
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readAll(t, tt.in)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d events %q, want %q", len(got), got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("event %d = %q, want %q", i, got[i], tt.want[i])
				}
			}
		})
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
