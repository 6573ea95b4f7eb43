package bedrock

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
)

// FuzzStream feeds arbitrary bytes as a ConverseStream body: the frame
// reader and decoder must never panic, never allocate past the limits, and
// must end with io.EOF or a classified failure.
func FuzzStream(f *testing.F) {
	f.Add(join(fStart, fHi, fThere, fStop0, fEndTurn, fMetadata))
	f.Add(join(fStart,
		ev("contentBlockStart", `{"contentBlockIndex":1,"start":{"toolUse":{"toolUseId":"t","name":"f"}}}`),
		ev("contentBlockDelta", `{"contentBlockIndex":1,"delta":{"toolUse":{"input":"{}"}}}`),
		ev("messageStop", `{"stopReason":"tool_use"}`), fMetadata))
	f.Add(join(fStart, fHi, exception("throttlingException", `{"message":"slow"}`)))
	f.Add(join(fStart, badCRC(fHi)))
	f.Add(prelude(17<<20, 0))
	f.Add(prelude(15, 0))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, body []byte) {
		st := newStream(io.NopCloser(bytes.NewReader(body)), reqID, "m")
		defer st.Close()
		for i := 0; ; i++ {
			if i > len(body)+10 { // every message consumes input
				t.Fatalf("stream did not end after %d events", i)
			}
			_, err := st.Next()
			if err == nil {
				continue
			}
			if err != io.EOF && failure.As(err) == nil {
				t.Fatalf("unclassified end: %v", err)
			}
			return
		}
	})
}

// FuzzEventPayload feeds arbitrary event names and JSON payloads to the
// payload parser: no panic, only io.EOF or classified failures, and a
// payload it accepts is valid JSON.
func FuzzEventPayload(f *testing.F) {
	for _, s := range []struct{ name, payload string }{
		{"messageStart", `{"p":"abcd","role":"assistant"}`},
		{"contentBlockStart", `{"contentBlockIndex":1,"start":{"toolUse":{"toolUseId":"t","name":"f"}}}`},
		{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"H\u00e9\n"},"p":"x"}`},
		{"contentBlockDelta", `{"contentBlockIndex":1,"delta":{"toolUse":{"input":"{\"a\":"}}}`},
		{"messageStop", `{"stopReason":"malformed_tool_use"}`},
		{"metadata", `{"usage":{"inputTokens":1,"outputTokens":2,"totalTokens":3,"cacheReadInputTokens":4},"metrics":{"latencyMs":5}}`},
		{"metadata", `{"usage":null}`},
		{"messageStop", `{"stopReason":"end\u005fturn","p":"\ud800"}`},
	} {
		f.Add(s.name, []byte(s.payload))
	}
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		var d decoder
		var q []canonical.Event
		// Open a tool block first so tool deltas have somewhere to go.
		_ = d.event("contentBlockStart", []byte(`{"contentBlockIndex":1,"start":{"toolUse":{"toolUseId":"t","name":"f"}}}`), &q)
		d.stopped = true
		err := d.event(name, data, &q)
		if err != nil && err != io.EOF && failure.As(err) == nil {
			t.Fatalf("unclassified error: %v", err)
		}
		var p payload
		if d.parse(data, &p) == nil && !json.Valid(data) {
			t.Fatalf("accepted invalid JSON %q", data)
		}
	})
}

// FuzzErrorBody feeds arbitrary error bodies and type strings.
func FuzzErrorBody(f *testing.F) {
	f.Add([]byte(`{"__type":"com.amazon.bedrock#ThrottlingException","message":"slow"}`), "ThrottlingException:http://x")
	f.Add([]byte(`{"code":7,"Message":"x"}`), "a#b:c")
	f.Fuzz(func(t *testing.T, body []byte, header string) {
		typ, _ := parseErrorBody(body)
		_ = errorType(typ)
		_ = statusOf(errorType(header))
	})
}
