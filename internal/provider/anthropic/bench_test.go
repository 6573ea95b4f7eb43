package anthropic

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/canonical"
)

// benchStream is a typical 20-event answer as Anthropic sends it:
// message_start, a text block with 15 deltas and a ping, message_delta and
// message_stop.
func benchStream() []byte {
	pairs := []string{"message_start", msgStart, "content_block_start", textStart, "ping", `{"type": "ping"}`}
	for range 14 {
		pairs = append(pairs, "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" token"}}`)
	}
	pairs = append(pairs, "content_block_stop", blockStop, "message_delta", msgDelta, "message_stop", msgStop)
	return []byte(events(pairs...))
}

func BenchmarkStreamDecode20(b *testing.B) {
	body := benchStream()
	if n := bytes.Count(body, []byte("\n\n")); n != 20 {
		b.Fatalf("%d SSE events, want 20", n)
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
		if n != 18 { // start, input usage, 14 text deltas, usage, stop
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
