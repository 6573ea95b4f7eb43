package drill

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/dialect/anthropicmsgs"
	"github.com/spillway-gw/spillway/internal/dialect/openaichat"
	"github.com/spillway-gw/spillway/internal/dialect/openairesponses"
	"github.com/spillway-gw/spillway/internal/failure"
)

const testModel = "claude-sonnet-4-5"

func gatewayDialect(d Dialect) dialect.Dialect {
	switch d {
	case Responses:
		return openairesponses.New()
	case Messages:
		return anthropicmsgs.New()
	}
	return openaichat.New()
}

func dialectHeader(d Dialect) http.Header {
	h := http.Header{}
	if d == Messages {
		h.Set("Anthropic-Version", "2023-06-01")
	}
	return h
}

// decodeShape decodes the drill's body for s with the gateway's own
// decoder, so the drill's requests are proven to be what the gateway takes.
func decodeShape(t testing.TB, s Shape) *canonical.Request {
	t.Helper()
	body := appendBody(nil, testModel, s)
	req, pub := gatewayDialect(s.Dialect).Decode(body, dialectHeader(s.Dialect))
	if pub != nil {
		t.Fatalf("%s decodes the drill's body %s as %d %s: %s", s.Dialect, body, pub.Status, pub.Code, pub.Message)
	}
	return req
}

// textDeltas is the mock's answer cut into at-most-4-byte deltas.
var textDeltas = []string{"mock", " p-o", "pena", "i", " lor", "em", " ips", "um"}

// encoded is a stream exactly as the gateway's encoder for d writes it:
// the opening, the text deltas, then the success terminator or (interrupt)
// the typed error event.
func encoded(t testing.TB, d Dialect, interrupt bool) []byte {
	t.Helper()
	req := decodeShape(t, Shape{Dialect: d, Stream: true, MaxTokens: 256})
	enc := gatewayDialect(d).NewEncoder(dialect.Meta{ID: "id-1", Model: testModel, Created: 1}, req)
	out := enc.Start(nil)
	for _, s := range textDeltas {
		out = enc.Event(out, &canonical.Event{Kind: canonical.EventTextDelta, Text: s})
	}
	if interrupt {
		return enc.Interrupt(out, &failure.Public{Status: 502, Code: "stream_interrupted", Message: "the provider failed"}, len(textDeltas))
	}
	return enc.Finish(out, canonical.StopEnd, "", canonical.Usage{InputTokens: 40, CachedInputTokens: 8, OutputTokens: len(textDeltas)})
}

// cutAfter returns b up to and including the n-th occurrence of sep.
func cutAfter(b []byte, sep string, n int) []byte {
	at := 0
	for range n {
		i := bytes.Index(b[at:], []byte(sep))
		if i < 0 {
			return b
		}
		at += i + len(sep)
	}
	return b[:at]
}

func TestReadStream(t *testing.T) {
	type tc struct {
		name    string
		d       Dialect
		stream  []byte
		want    StreamKind
		problem bool // a wire problem must be reported
	}
	var cases []tc
	// Unhappy first: every way a stream can end silently must be caught.
	for _, d := range []Dialect{Chat, Responses, Messages} {
		full := encoded(t, d, false)
		cut := encoded(t, d, true)
		terminator := map[Dialect]string{Chat: "data: [DONE]\n\n", Responses: "event: response.completed\n", Messages: "event: message_stop\n"}[d]
		beforeEnd := full[:bytes.LastIndex(full, []byte(terminator))]
		cases = append(cases,
			tc{"empty", d, nil, Truncated, false},
			tc{"cut mid-event", d, full[:len(full)/2], Truncated, false},
			tc{"cut after a whole event", d, cutAfter(full, "\n\n", 3), Truncated, false},
			tc{"everything but the terminator", d, beforeEnd, Truncated, false},
			tc{"terminator without its blank line", d, full[:len(full)-1], Truncated, false},
			tc{"typed error cut short", d, cut[:len(cut)-1], Truncated, false},
			tc{"event after the terminator", d, append(append([]byte{}, full...), full[:bytes.Index(full, []byte("\n\n"))+2]...), Truncated, true},
			tc{"non-JSON event", d, append(append([]byte{}, beforeEnd...), []byte("data: {oops\n\n")...), Truncated, true},
			tc{"complete", d, full, Complete, false},
			tc{"typed interrupt", d, cut, Interrupted, false},
		)
	}
	cases = append(cases,
		tc{"chat: untyped error event", Chat, []byte("data: {\"id\":\"x\",\"model\":\"m\",\"choices\":[]}\n\ndata: {\"error\":{\"message\":\"boom\",\"type\":\"server_error\"}}\n\n"), Truncated, true},
		tc{"chat: [DONE] after the typed error", Chat, append(encoded(t, Chat, true), "data: [DONE]\n\n"...), Truncated, true},
		tc{"responses: error event without response.failed", Responses,
			cutAfter(encoded(t, Responses, true), "\n\n", bytes.Count(encoded(t, Responses, true), []byte("\n\n"))-1), Truncated, false},
		tc{"responses: response.failed without the error event", Responses,
			append(encoded(t, Responses, false)[:bytes.Index(encoded(t, Responses, false), []byte("event: response.completed"))],
				"event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{}}\n\n"...), Truncated, true},
		tc{"responses: event name not the data's type", Responses, []byte("event: response.completed\ndata: {\"type\":\"response.created\"}\n\n"), Truncated, true},
		tc{"messages: untyped error event", Messages, []byte("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"x\"}}\n\n"), Truncated, true},
		tc{"messages: unknown event", Messages, append([]byte("event: surprise\ndata: {\"type\":\"surprise\"}\n\n"), encoded(t, Messages, false)...), Complete, true},
		tc{"chat: CRLF framing", Chat, bytes.ReplaceAll(encoded(t, Chat, false), []byte("\n"), []byte("\r\n")), Complete, false},
	)
	for _, c := range cases {
		t.Run(c.d.String()+"/"+c.name, func(t *testing.T) {
			got := ReadStream(c.d, bytes.NewReader(c.stream))
			if got.Kind != c.want {
				t.Fatalf("kind %v (reason %q, problem %q), want %v\n%s", got.Kind, got.Reason, got.Problem, c.want, c.stream)
			}
			if c.problem != (got.Problem != "") {
				t.Errorf("problem %q, want one: %v", got.Problem, c.problem)
			}
			if got.Kind == Truncated && got.Reason == "" {
				t.Error("a truncated stream without a reason")
			}
			switch got.Kind {
			case Complete:
				if got.Model != testModel || !got.HasUsage || got.Usage != (Usage{Input: 40, Cached: 8, Output: len(textDeltas)}) {
					t.Errorf("model %q usage %+v (has %v)", got.Model, got.Usage, got.HasUsage)
				}
			case Interrupted:
				if got.Model != testModel || got.Delivered != len(textDeltas) {
					t.Errorf("model %q delivered %d", got.Model, got.Delivered)
				}
			}
		})
	}
}

// A connection that breaks after the terminator still delivered a whole
// answer, but the wire is reported; one that breaks before it is a
// truncation.
func TestReadStreamReadError(t *testing.T) {
	for _, d := range []Dialect{Chat, Responses, Messages} {
		full := encoded(t, d, false)
		got := ReadStream(d, iotest.TimeoutReader(iotest.OneByteReader(bytes.NewReader(full[:len(full)/2]))))
		if got.Kind != Truncated || !strings.HasPrefix(got.Reason, "cut") {
			t.Errorf("%s: broken mid-stream: %v %q", d, got.Kind, got.Reason)
		}
		r := io.MultiReader(bytes.NewReader(full), iotest.ErrReader(iotest.ErrTimeout))
		got = ReadStream(d, r)
		if got.Kind != Complete || got.Problem == "" {
			t.Errorf("%s: broken after the terminator: %v problem %q", d, got.Kind, got.Problem)
		}
	}
}

func TestParseAnswer(t *testing.T) {
	usage := canonical.Usage{InputTokens: 50, CachedInputTokens: 8, OutputTokens: 3}
	for _, d := range []Dialect{Chat, Responses, Messages} {
		req := decodeShape(t, Shape{Dialect: d, MaxTokens: 256})
		body := gatewayDialect(d).AppendResponse(nil, dialect.Meta{ID: "id-1", Model: testModel, Created: 1}, req,
			&canonical.Response{Text: "mock p-openai", Stop: canonical.StopEnd, Usage: usage})
		a, err := ParseAnswer(d, body)
		if err != nil {
			t.Fatalf("%s: %v\n%s", d, err, body)
		}
		if a.Model != testModel || a.Text != "mock p-openai" || a.Usage != (Usage{Input: 50, Cached: 8, Output: 3}) {
			t.Errorf("%s: %+v", d, a)
		}
		for _, bad := range [][]byte{nil, body[:len(body)/2], []byte(`{}`), []byte(`{"error":{"type":"x","message":"y"}}`)} {
			if _, err := ParseAnswer(d, bad); err == nil {
				t.Errorf("%s: %q parsed as an answer", d, bad)
			}
		}
		eb := gatewayDialect(d).AppendError(nil, &failure.Public{Status: 502, Code: "upstream_error", Message: "the provider failed"})
		if code, err := ParseError(d, eb); err != nil || code != "upstream_error" {
			t.Errorf("%s: error body %s: %q %v", d, eb, code, err)
		}
		if _, err := ParseError(d, body); err == nil {
			t.Errorf("%s: an answer parsed as an error", d)
		}
	}
	// The two error shapes are not interchangeable.
	chatErr := openaichat.New().AppendError(nil, &failure.Public{Status: 502, Code: "upstream_error", Message: "x"})
	if _, err := ParseError(Messages, chatErr); err == nil {
		t.Error("an OpenAI error body passed as Anthropic's")
	}
	msgErr := anthropicmsgs.New().AppendError(nil, &failure.Public{Status: 502, Code: "upstream_error", Message: "x"})
	if _, err := ParseError(Chat, msgErr); err == nil {
		t.Error("an Anthropic error body passed as OpenAI's")
	}
}

func TestParseMicroUSD(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"", 0, false}, {".5", 0, false}, {"1.0000001", 0, false}, {"-1.0", 0, false}, {"1e3", 0, false},
		{"0.00000x", 0, false}, {"1234567890123.0", 0, false}, {"1.", 0, false}, {"1.2.3", 0, false},
		{"0.000000", 0, true}, {"0.000123", 123, true}, {"1.5", 1_500_000, true}, {"12", 12_000_000, true},
	} {
		got, ok := parseMicroUSD(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("parseMicroUSD(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}
