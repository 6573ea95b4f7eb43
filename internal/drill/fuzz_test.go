package drill

import (
	"bytes"
	"encoding/json"
	"regexp"
	"testing"
	"testing/iotest"
)

// terminators are the bytes a stream classified Complete must contain.
func terminators(d Dialect) [][]byte {
	switch d {
	case Responses:
		return [][]byte{[]byte("response.completed"), []byte("response.incomplete")}
	case Messages:
		return [][]byte{[]byte("message_stop")}
	}
	return [][]byte{[]byte("[DONE]")}
}

func FuzzReadStream(f *testing.F) {
	for _, d := range []Dialect{Chat, Responses, Messages} {
		for _, interrupt := range []bool{false, true} {
			b := encoded(f, d, interrupt)
			f.Add(uint8(d), b)
			f.Add(uint8(d), b[:len(b)/2])
			f.Add(uint8(d), bytes.ReplaceAll(b, []byte("\n\n"), []byte("\r\n\r\n")))
		}
	}
	f.Add(uint8(Chat), []byte("data: [DONE]\n\ndata: [DONE]\n\n"))
	f.Add(uint8(Responses), []byte("event: error\ndata: {\"type\":\"error\",\"code\":\"stream_interrupted\",\"delivered_tokens\":1}\n\nevent: response.failed\ndata: {\"type\":\"response.failed\"}\n\n"))
	f.Fuzz(func(t *testing.T, dd uint8, data []byte) {
		d := Dialect(dd % uint8(numDialects))
		st := ReadStream(d, bytes.NewReader(data))
		switch st.Kind {
		case Complete:
			found := false
			for _, term := range terminators(d) {
				found = found || bytes.Contains(data, term)
			}
			if !found {
				t.Fatalf("complete without a terminator: %q", data)
			}
		case Interrupted:
			if !bytes.Contains(data, []byte("stream_interrupted")) || !bytes.Contains(data, []byte("delivered_tokens")) || st.Delivered < 0 {
				t.Fatalf("interrupted without the typed error: %q", data)
			}
		default:
			if st.Reason == "" {
				t.Fatalf("truncated without a reason: %q", data)
			}
		}
		if st.Events > bytes.Count(data, []byte("\n"))+1 {
			t.Fatalf("%d events from %d lines", st.Events, bytes.Count(data, []byte("\n")))
		}
		// How the bytes arrive never changes the verdict.
		if again := ReadStream(d, iotest.OneByteReader(bytes.NewReader(data))); again != st {
			t.Fatalf("byte by byte: %+v, at once: %+v", again, st)
		}
	})
}

func FuzzParseBodies(f *testing.F) {
	for _, d := range []Dialect{Chat, Responses, Messages} {
		f.Add(uint8(d), []byte(`{"object":"chat.completion","model":"m","choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":1}}`))
		f.Add(uint8(d), []byte(`{"type":"error","error":{"type":"api_error","message":"x","code":"c"}}`))
		f.Add(uint8(d), []byte(`{"type":"message","model":"m","content":[{"type":"text","text":"x"}],"usage":{"input_tokens":1}}`))
	}
	f.Fuzz(func(t *testing.T, dd uint8, body []byte) {
		d := Dialect(dd % uint8(numDialects))
		if _, err := ParseAnswer(d, body); err == nil && !json.Valid(body) {
			t.Fatalf("answer from invalid JSON %q", body)
		}
		if code, err := ParseError(d, body); err == nil && (code == "" || !json.Valid(body)) {
			t.Fatalf("error %q from %q", code, body)
		}
	})
}

// usdRE is what a cost header may be: whole dollars, at most six decimals.
var usdRE = regexp.MustCompile(`^[0-9]{1,12}(\.[0-9]{1,6})?$`)

func FuzzParseMicroUSD(f *testing.F) {
	for _, s := range []string{"0.000123", "1.5", "12", "", "1.", ".5", "1.0000001", "-1", "٣.5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := parseMicroUSD(s)
		if ok != usdRE.MatchString(s) {
			t.Fatalf("parseMicroUSD(%q) ok=%v", s, ok)
		}
		if !ok {
			return
		}
		// The gateway's own format parses back to the same amount.
		if back, ok := parseMicroUSD(usd(v)); !ok || back != v {
			t.Fatalf("%q = %d µ$, formatted %q, parsed back %d", s, v, usd(v), back)
		}
	})
}
