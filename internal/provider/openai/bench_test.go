package openai

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/canonical"
)

// benchStream is a typical 20-event answer: the role chunk, 17 text
// deltas, the finish chunk and the usage chunk, then [DONE].
func benchStream() []byte {
	chunks := []string{cFirst}
	for range 17 {
		chunks = append(chunks, `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"content":" token"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"abc"}`)
	}
	chunks = append(chunks, cStop, cUsage, "[DONE]")
	return []byte(data(chunks...))
}

func BenchmarkStreamDecode20(b *testing.B) {
	body := benchStream()
	r := bytes.NewReader(body)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(body)
		st := newStream(io.NopCloser(r))
		n := 0
		for {
			_, err := st.Next()
			if err != nil {
				if err != io.EOF {
					b.Fatal(err)
				}
				break
			}
			n++
		}
		st.Close()
		if n != 20 { // start, 17 text deltas, stop, usage
			b.Fatalf("got %d events", n)
		}
	}
}

func BenchmarkEncodeRequest(b *testing.B) {
	req := fullRequest()
	req.Messages = append(req.Messages, canonical.Message{Role: canonical.RoleUser,
		Content: []canonical.Part{canonical.TextPart(strings.Repeat("lorem ipsum ", 200))}})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encode(req, "gpt-4o"); err != nil {
			b.Fatal(err)
		}
	}
}
