package gemini

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/json/jsonread"
)

// FuzzStream feeds arbitrary bytes as a stream body: the reader must never
// panic, must end, and must end with io.EOF (only after a finishReason or a
// prompt block) or a classified failure.
func FuzzStream(f *testing.F) {
	files, _ := filepath.Glob("testdata/stream_*.sse")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(chunks(chHel, chLo)))
	f.Add([]byte(chunks(chHel) + rpcBlock))
	f.Add([]byte(chunks(chHel) + "data: " + chLo))
	f.Add([]byte(strings.ReplaceAll(chunks(chHel, chStop), "\n", "\r\n")))
	f.Add([]byte(chunks(`{"promptFeedback":{"blockReason":"SAFETY"}}`)))
	f.Add([]byte(chunks(`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{"a":[1,{"b":null}]}}}]},"finishReason":"MALFORMED_FUNCTION_CALL"}]}`)))
	f.Add([]byte(": c\n\ndata:\n\nerror: x\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		st := newStream(io.NopCloser(bytes.NewReader(body)))
		defer st.Close()
		finished := false
		for i := 0; ; i++ {
			if i > 4*len(body)+10 { // every event consumes input
				t.Fatalf("stream did not end after %d events", i)
			}
			ev, err := st.Next()
			if err == nil {
				finished = finished || ev.Kind == canonical.EventStop
				continue
			}
			if err == io.EOF && !finished {
				t.Fatal("a clean end without a finishReason or a prompt block")
			}
			if err != io.EOF && failure.As(err) == nil {
				t.Fatalf("unclassified end: %v", err)
			}
			return
		}
	})
}

// FuzzErrorBody checks the Google RPC error parser against encoding/json:
// it never panics, accepts only valid JSON, and reads the same message and
// status wherever encoding/json can read them as strings.
func FuzzErrorBody(f *testing.F) {
	f.Add([]byte(rpc(429, "RESOURCE_EXHAUSTED", "quota", detQuota, detHelp, retryInfo("3.95s"))))
	f.Add([]byte(rpc(400, "INVALID_ARGUMENT", "API key not valid.", detKeyInvalid, detLocalized)))
	f.Add([]byte(`[` + rpc(500, "INTERNAL", "x") + `]`))
	f.Add([]byte(`{"error":{"code":"500","status":5,"message":null,"details":{"a":1}}}`))
	f.Add([]byte(rpcBlock))
	f.Add([]byte(`<html>`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var a failure.Answer
		ok := parseError(body, &a)
		if !ok {
			if a != (failure.Answer{}) {
				t.Fatalf("a rejected body filled the answer: %+v", a)
			}
			return
		}
		if !jsonread.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		if a.RetryAfter < 0 || a.RetryAfter > maxRetryDelay {
			t.Fatalf("retry delay %v out of range", a.RetryAfter)
		}
		var ref struct {
			Error struct {
				Message *string `json:"message"`
				Status  *string `json:"status"`
			} `json:"error"`
		}
		if json.Unmarshal(body, &ref) != nil || bytes.Contains(body, []byte(`\u0000`)) {
			return // another shape (an array, odd member types): nothing to compare
		}
		if ref.Error.Message != nil && *ref.Error.Message != a.Message {
			t.Errorf("message %q, encoding/json %q", a.Message, *ref.Error.Message)
		}
		if ref.Error.Status != nil && *ref.Error.Status != a.Type {
			t.Errorf("status %q, encoding/json %q", a.Type, *ref.Error.Status)
		}
	})
}

// FuzzRetryDelay checks the Duration parser against time.ParseDuration on
// what both accept.
func FuzzRetryDelay(f *testing.F) {
	for _, s := range []string{"36s", "3.95s", "0.000000001s", "86400s", "1.s", "-1s", "1e3s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := parseRetryDelay([]byte(s))
		if !ok {
			if d != 0 {
				t.Fatalf("%q: rejected with %v", s, d)
			}
			return
		}
		if d <= 0 || d > maxRetryDelay {
			t.Fatalf("%q: %v out of range", s, d)
		}
		frac := ""
		if _, after, found := strings.Cut(s, "."); found {
			frac = after
		}
		if len(frac) > 9 || d == maxRetryDelay {
			return // beyond nanoseconds or at the cap: ParseDuration rounds or overflows
		}
		ref, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("%q accepted, ParseDuration: %v", s, err)
		}
		if ref < maxRetryDelay && ref != d {
			t.Fatalf("%q: %v, ParseDuration %v", s, d, ref)
		}
	})
}
