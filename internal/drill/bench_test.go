package drill

import (
	"bytes"
	"testing"
)

// BenchmarkReadStream is the drill's cost per streamed answer read (an
// eight-delta answer from the gateway's own encoder): the caller side must
// stay cheap next to the gateway it measures.
func BenchmarkReadStream(b *testing.B) {
	for _, d := range []Dialect{Chat, Responses, Messages} {
		stream := encoded(b, d, false)
		b.Run(d.String(), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(stream)))
			r := bytes.NewReader(stream)
			for b.Loop() {
				r.Reset(stream)
				if st := ReadStream(d, r); st.Kind != Complete {
					b.Fatal(st.Reason)
				}
			}
		})
	}
}

// BenchmarkAppendBody is the cost of writing one request body.
func BenchmarkAppendBody(b *testing.B) {
	s := Shape{Dialect: Messages, Stream: true, Tools: true, MaxTokens: 256, Words: 20}
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		buf = appendBody(buf[:0], testModel, s)
	}
}

// BenchmarkParseAnswer is the cost of checking one non-streamed answer.
func BenchmarkParseAnswer(b *testing.B) {
	body := []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"claude-sonnet-4-5","choices":[{"index":0,"message":{"role":"assistant","content":"mock p-openai lorem ipsum","refusal":null,"annotations":[]},"finish_reason":"stop","logprobs":null}],"usage":{"prompt_tokens":40,"completion_tokens":8,"total_tokens":48,"prompt_tokens_details":{"cached_tokens":8,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"system_fingerprint":null}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseAnswer(Chat, body); err != nil {
			b.Fatal(err)
		}
	}
}
