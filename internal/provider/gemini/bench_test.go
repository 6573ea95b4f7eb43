package gemini

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/canonical"
)

// benchStream is a typical 20-chunk answer as Gemini streams it: 19 text
// chunks with partial usage, then the finishReason chunk with full usage.
func benchStream() []byte {
	var data []string
	for range 19 {
		data = append(data, `{"candidates": [{"content": {"parts": [{"text": " token"}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 8,"totalTokenCount": 8,"promptTokensDetails": [{"modality": "TEXT","tokenCount": 8}]},"modelVersion": "gemini-2.5-flash","responseId": "Ol3eaPCLNdPo7M8PkMeSqQ8"}`)
	}
	data = append(data, `{"candidates": [{"content": {"parts": [{"text": ""}],"role": "model"},"finishReason": "STOP","index": 0}],"usageMetadata": {"promptTokenCount": 8,"candidatesTokenCount": 19,"totalTokenCount": 27,"promptTokensDetails": [{"modality": "TEXT","tokenCount": 8}]},"modelVersion": "gemini-2.5-flash","responseId": "Ol3eaPCLNdPo7M8PkMeSqQ8"}`)
	return []byte(chunks(data...))
}

func BenchmarkStreamDecode20(b *testing.B) {
	body := benchStream()
	if n := bytes.Count(body, []byte("\n\n")); n != 20 {
		b.Fatalf("%d chunks, want 20", n)
	}
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
		if n != 23 { // start, 19 text deltas, partial and full usage, stop
			b.Fatalf("got %d events", n)
		}
	}
}

func BenchmarkEncodeRequest(b *testing.B) {
	req := fullRequest()
	req.Messages = append(req.Messages, canonical.Message{Role: canonical.RoleUser,
		Content: []canonical.Part{canonical.TextPart(strings.Repeat("lorem ipsum ", 200))}})
	tgt := target("gemini-2.5-flash")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encode(req, tgt); err != nil {
			b.Fatal(err)
		}
	}
}
