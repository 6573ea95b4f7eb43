package openai

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
	f.Add([]byte(data(cFirst, cHello, cStop, cUsage, "[DONE]")))
	f.Add([]byte(data(`{"error":{"message":"x","type":"server_error","code":502}}`)))
	f.Add([]byte(data(`{"choices":[{"delta":{"tool_calls":[{"index":-7,"function":{"arguments":"{"}}]}}]}`)))
	f.Add([]byte("data: [DONE]\n\n"))
	f.Add([]byte("data: {\"choices\":[]}\n"))
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
