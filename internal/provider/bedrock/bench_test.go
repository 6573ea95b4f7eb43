package bedrock

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/canonical"
)

// benchStream is a typical 20-message answer as Bedrock sends it:
// messageStart, 16 text deltas (each with its p padding), contentBlockStop,
// messageStop and metadata.
func benchStream() []byte {
	frames := [][]byte{fStart}
	for range 16 {
		frames = append(frames, ev("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":" token"},"p":"abcdefghijklmnopq"}`))
	}
	frames = append(frames, fStop0, fEndTurn, fMetadata)
	return join(frames...)
}

func BenchmarkStreamDecode20(b *testing.B) {
	body := benchStream()
	r := bytes.NewReader(body)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(body)
		st := newStream(io.NopCloser(r), reqID, "m")
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
		if n != 19 { // start, 16 text deltas, stop, usage
			b.Fatalf("got %d events", n)
		}
	}
}

func BenchmarkEncodeRequest(b *testing.B) {
	req := fullRequest()
	req.Messages = append(req.Messages, canonical.Message{Role: canonical.RoleUser,
		Content: []canonical.Part{canonical.TextPart(strings.Repeat("lorem ipsum ", 200))}})
	tgt := target()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encode(req, tgt); err != nil {
			b.Fatal(err)
		}
	}
}
