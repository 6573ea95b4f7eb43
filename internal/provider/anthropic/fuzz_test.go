package anthropic

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/spillway-gw/spillway/internal/failure"
)

// FuzzStream feeds arbitrary bytes as a stream body: the parser must never
// panic and must end with io.EOF or a classified failure.
func FuzzStream(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.sse")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(events("message_start", msgStart, "content_block_delta", textHi, "message_delta", msgDelta, "message_stop", msgStop)))
	f.Add([]byte(events("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)))
	f.Add([]byte(events("", `{"type":"content_block_start","index":-1,"content_block":{"type":"tool_use","id":"t","name":"f"}}`,
		"", `{"type":"content_block_delta","index":-1,"delta":{"type":"input_json_delta","partial_json":"{"}}`)))
	f.Add([]byte("event: message_stop\ndata: {}\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		st := newStream(io.NopCloser(bytes.NewReader(body)))
		defer st.Close()
		for i := 0; ; i++ {
			if i > len(body)+10 { // every event consumes input
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
