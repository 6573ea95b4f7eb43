package mock

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// brPath is the escaped Converse path for model, as the AWS SDK writes it.
func brPath(model string, stream bool) string {
	op := "/converse"
	if stream {
		op = "/converse-stream"
	}
	return "/model/" + strings.ReplaceAll(url.PathEscape(model), ":", "%3A") + op
}

const brBody = `{"messages":[{"role":"user","content":[{"text":"Weather in Paris?"}]}],"inferenceConfig":{"maxTokens":256}}`

// brExchange posts body to path (already escaped) with a SigV4-looking
// Authorization header plus hdr, and reads the whole answer.
func brExchange(t testing.TB, ctx context.Context, srv *httptest.Server, path, body string, hdr ...string) result {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/bedrock/aws4_request, SignedHeaders=host;x-amz-date, Signature=00")
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		return result{readErr: err}
	}
	defer resp.Body.Close()
	b, rerr := io.ReadAll(resp.Body)
	return result{resp.StatusCode, resp.Header, b, rerr}
}

// brFrame is one decoded event-stream message.
type brFrame struct {
	headers map[string]string
	payload map[string]any
	raw     []byte
}

// brFrames decodes a stream body with the AWS decoder, checking that every
// header is a string (type 7); err is the decoder's error at the end (nil
// for a clean end of the body).
func brFrames(t testing.TB, body []byte) ([]brFrame, error) {
	t.Helper()
	r := bytes.NewReader(body)
	dec := eventstream.NewDecoder()
	var out []brFrame
	for r.Len() > 0 {
		msg, err := dec.Decode(r, nil)
		if err != nil {
			return out, err
		}
		f := brFrame{headers: map[string]string{}, raw: msg.Payload}
		for _, h := range msg.Headers {
			s, ok := h.Value.(eventstream.StringValue)
			if !ok {
				t.Errorf("header %s is %T, want a string", h.Name, h.Value)
			}
			f.headers[h.Name] = string(s)
		}
		if err := json.Unmarshal(msg.Payload, &f.payload); err != nil {
			t.Errorf("payload %q: %v", msg.Payload, err)
		}
		out = append(out, f)
	}
	return out, nil
}

// brStats is what a client counts in a decoded stream.
type brStats struct {
	types     []string
	deltas    []string
	stop      string
	usageOut  int // -1 when no metadata
	usageIn   int
	cacheRead int
	exception string
}

func brCount(t testing.TB, frames []brFrame) brStats {
	t.Helper()
	st := brStats{usageOut: -1}
	for _, f := range frames {
		switch f.headers[":message-type"] {
		case "exception":
			st.exception = f.headers[":exception-type"]
			continue
		case "event":
		default:
			t.Errorf(":message-type %q", f.headers[":message-type"])
		}
		typ := f.headers[":event-type"]
		st.types = append(st.types, typ)
		if ct := f.headers[":content-type"]; ct != "application/json" {
			t.Errorf("%s :content-type %q", typ, ct)
		}
		if _, ok := f.payload["p"]; !ok {
			t.Errorf("%s has no p padding: %s", typ, f.raw)
		}
		switch typ {
		case "contentBlockDelta":
			d, _ := f.payload["delta"].(map[string]any)
			s, _ := d["text"].(string)
			if tu, ok := d["toolUse"].(map[string]any); ok {
				s, _ = tu["input"].(string)
			}
			st.deltas = append(st.deltas, s)
		case "messageStop":
			st.stop, _ = f.payload["stopReason"].(string)
		case "metadata":
			u, _ := f.payload["usage"].(map[string]any)
			num := func(k string) int { v, _ := u[k].(float64); return int(v) }
			st.usageOut, st.usageIn, st.cacheRead = num("outputTokens"), num("inputTokens")+num("cacheReadInputTokens"), num("cacheReadInputTokens")
			if num("totalTokens") != st.usageIn+st.usageOut {
				t.Errorf("totalTokens %d, want %d", num("totalTokens"), st.usageIn+st.usageOut)
			}
		}
	}
	return st
}

// The mock frames events byte for byte as AWS does: wire-formats.md 4.4's
// test vector, which aws-sdk-go-v2's decoder reads and re-encodes exactly.
func TestBedrockFrameTestVector(t *testing.T) {
	want, err := hex.DecodeString(strings.Join(strings.Fields(`
		00000081 00000052 6cc17693
		0b 3a6576656e742d74797065 07 000c 6d6573736167655374617274
		0d 3a636f6e74656e742d74797065 07 0010 6170706c69636174696f6e2f6a736f6e
		0d 3a6d6573736167652d74797065 07 0005 6576656e74
		7b2270223a2261626364222c22726f6c65223a22617373697374616e74227d
		f512a005`), ""))
	if err != nil {
		t.Fatal(err)
	}
	got := bedrockEvent("messageStart", []byte(`{"p":"abcd","role":"assistant"}`))
	if !bytes.Equal(got, want) {
		t.Fatalf("frame\n got %x\nwant %x", got, want)
	}
	// The malformed frame differs only in its message CRC.
	bad := bedrockConverse{}.malformedEvent(nil)
	if _, err := eventstream.NewDecoder().Decode(bytes.NewReader(bad), nil); !errors.As(err, new(eventstream.ChecksumError)) {
		t.Errorf("malformed frame decodes with %v, want a checksum error", err)
	}
}

func TestBedrockRoutes(t *testing.T) {
	m, srv := newMock(t, "bedrock", Options{})
	tests := []struct {
		name, method, path string
		status             int
		errType            string
	}{
		{"inference profile ARN, escaped", "POST", brPath(brProfileARN, false), 200, ""},
		{"stream", "POST", brPath("anthropic.claude-3-haiku-20240307-v1:0", true), 200, ""},
		{"unescaped ':' still one label", "POST", "/model/amazon.nova-pro-v1:0/converse", 200, ""},
		{"raw '/' in the model id is another route", "POST", "/model/arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.x/converse", 404, "UnknownOperationException"},
		{"unknown operation", "POST", "/model/m/invoke", 404, "UnknownOperationException"},
		{"empty model", "POST", "/model//converse", 404, "UnknownOperationException"},
		{"other path", "POST", "/v1/messages", 404, "UnknownOperationException"},
		{"GET", "GET", brPath("m", false), 405, "UnknownOperationException"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, srv.URL+tt.path, strings.NewReader(brBody))
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, body)
			}
			if got, _, _ := strings.Cut(resp.Header.Get("X-Amzn-ErrorType"), ":"); got != tt.errType {
				t.Errorf("X-Amzn-ErrorType %q, want %q", got, tt.errType)
			}
			if resp.Header.Get("x-amzn-RequestId") == "" {
				t.Error("no x-amzn-RequestId")
			}
		})
	}
	if rec := m.Requests(); len(rec) != 3 || rec[0].Path != "/model/"+brProfileARN+"/converse" {
		t.Errorf("recorded %d requests; first path %q", len(rec), rec[0].Path)
	}
}

func TestBedrockStatusFaults(t *testing.T) {
	tests := []struct {
		fault  string
		status int
		typ    string
		msgHas string
	}{
		{"status=400", 400, "ValidationException", "Input is too long"},
		{"status=401", 401, "UnrecognizedClientException", "security token"},
		{"status=402", 402, "ValidationException", "Payment Required"},
		{"status=403", 403, "AccessDeniedException", "don't have access"},
		{"status=404", 404, "ResourceNotFoundException", "Could not resolve"},
		{"status=408", 408, "ModelTimeoutException", "timed out"},
		{"status=413", 413, "ValidationException", "Too Large"},
		{"status=424", 424, "ModelErrorException", "unexpected error"},
		{"status=429", 429, "ThrottlingException", "Too many requests"},
		{"status=500", 500, "InternalServerException", "unexpected error"},
		{"status=502", 502, "InternalServerException", "Bad Gateway"},
		{"status=503", 503, "ServiceUnavailableException", "unable to process"},
		{"status=529", 503, "ServiceUnavailableException", "unable to process"},
		{"status=429;error_type=ModelNotReadyException;message=Model is not ready", 429, "ModelNotReadyException", "Model is not ready"},
		{"status=400;error_type=ServiceQuotaExceededException", 400, "ServiceQuotaExceededException", "Input is too long"},
		// error_after: the non-streaming answer is the error it stands for.
		{"error_after=1", 503, "ServiceUnavailableException", "unable to process"},
		{"error_after=1;error_type=throttlingException", 429, "ThrottlingException", "Too many requests"},
	}
	for _, tt := range tests {
		t.Run(tt.fault, func(t *testing.T) {
			for _, stream := range []bool{false, true} {
				if stream && strings.HasPrefix(tt.fault, "error_after") {
					continue
				}
				_, srv := newMock(t, "bedrock", Options{})
				r := brExchange(t, context.Background(), srv, brPath("m", stream), brBody, "X-Mock-Fault", tt.fault)
				if r.status != tt.status {
					t.Fatalf("stream=%v: status %d, want %d (%s)", stream, r.status, tt.status, r.body)
				}
				if ct := r.header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("content type %q", ct)
				}
				typ, suffix, _ := strings.Cut(r.header.Get("X-Amzn-ErrorType"), ":")
				var b map[string]string
				if err := json.Unmarshal(r.body, &b); err != nil || len(b) != 1 {
					t.Fatalf("body %s: want exactly {\"message\"}", r.body)
				}
				if typ != tt.typ || !strings.HasPrefix(suffix, "http://internal.amazon.com/") || !strings.Contains(b["message"], tt.msgHas) {
					t.Errorf("stream=%v: type %q (%q) message %q; want %q containing %q", stream, typ, suffix, b["message"], tt.typ, tt.msgHas)
				}
				if r.header.Get("retry-after") != "" {
					t.Error("retry-after sent unasked")
				}
			}
		})
	}
	_, srv := newMock(t, "bedrock", Options{})
	r := brExchange(t, context.Background(), srv, brPath("m", false), brBody, "X-Mock-Fault", "status=429;retry_after=3")
	if r.status != 429 || r.header.Get("retry-after") != "3" {
		t.Errorf("retry_after: %d %q", r.status, r.header.Get("retry-after"))
	}
	if _, err := New("bedrock", Options{Fault: "status=429;error_code=x"}); err == nil {
		t.Error("error_code accepted; Bedrock errors have no code")
	}
}

func TestBedrockAdmit(t *testing.T) {
	_, srv := newMock(t, "bedrock", Options{APIKey: "ABSKkey"})
	tests := []struct {
		auth   string
		status int
		typ    string
	}{
		{"", 403, "MissingAuthenticationTokenException"},
		{"Bearer nope", 403, "UnrecognizedClientException"},
		{"AWS4-HMAC-SHA256 nothing", 403, "UnrecognizedClientException"},
		{"Bearer ABSKkey", 200, ""},
		{"AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/bedrock/aws4_request, SignedHeaders=host, Signature=ff", 200, ""},
	}
	for _, tt := range tests {
		hdr := []string{"Authorization", tt.auth}
		r := brExchange(t, context.Background(), srv, brPath("m", false), brBody, hdr...)
		if typ, _, _ := strings.Cut(r.header.Get("X-Amzn-ErrorType"), ":"); r.status != tt.status || typ != tt.typ {
			t.Errorf("Authorization %q: %d %q, want %d %q", tt.auth, r.status, typ, tt.status, tt.typ)
		}
	}
}

func TestBedrockStreamShape(t *testing.T) {
	tests := []struct {
		name, fault string
		body        string
		types       string
		deltas      int
		stop        string
	}{
		{"text", "", brBody, "messageStart," + strings.Repeat("contentBlockDelta,", defaultTokens) + "contentBlockStop,messageStop,metadata", defaultTokens, "end_turn"},
		{"refusal has no content", "refusal", brBody, "messageStart,messageStop,metadata", 0, "guardrail_intervened"},
		{"refusal after tokens", "refusal;tokens=2", brBody, "messageStart,contentBlockDelta,contentBlockDelta,contentBlockStop,messageStop,metadata", 2, "guardrail_intervened"},
		{"tool", `args={"a":1}`, strings.TrimSuffix(brBody, "}") + `,"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{"json":{}}}}],"toolChoice":{"any":{}}}}`,
			"messageStart,contentBlockStart,contentBlockDelta,contentBlockDelta,contentBlockStop,messageStop,metadata", 2, "tool_use"},
		{"no_terminal drops metadata", "no_terminal", brBody, "messageStart," + strings.Repeat("contentBlockDelta,", defaultTokens) + "contentBlockStop,messageStop", defaultTokens, "end_turn"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, srv := newMock(t, "bedrock", Options{})
			r := brExchange(t, context.Background(), srv, brPath(brProfileARN, true), tt.body, "X-Mock-Fault", tt.fault)
			if r.status != 200 || r.readErr != nil || r.header.Get("Content-Type") != "application/vnd.amazon.eventstream" {
				t.Fatalf("%d %v %q", r.status, r.readErr, r.header.Get("Content-Type"))
			}
			frames, err := brFrames(t, r.body)
			if err != nil {
				t.Fatal(err)
			}
			st := brCount(t, frames)
			if got := strings.Join(st.types, ","); got != tt.types {
				t.Errorf("events %s\nwant   %s", got, tt.types)
			}
			if len(st.deltas) != tt.deltas || st.stop != tt.stop {
				t.Errorf("%d deltas %q, stop %q", len(st.deltas), st.deltas, st.stop)
			}
			for _, d := range st.deltas {
				if d == "" || len(d) > 4 {
					t.Errorf("delta %q: want 1..4 bytes", d)
				}
			}
			if tt.fault != "no_terminal" {
				total := (len(m.Requests()[0].Body) + 3) / 4
				if st.usageOut != len(st.deltas) || st.usageIn != total {
					t.Errorf("usage out %d in %d, want %d and %d", st.usageOut, st.usageIn, len(st.deltas), total)
				}
			} else if st.usageOut != -1 {
				t.Error("no_terminal sent metadata")
			}
		})
	}
}

func TestBedrockStreamFaults(t *testing.T) {
	t.Run("die_after cuts the body", func(t *testing.T) {
		for _, k := range []int{0, 3, 100} {
			_, srv := newMock(t, "bedrock", Options{})
			r := brExchange(t, context.Background(), srv, brPath("m", true), brBody, "X-Mock-Fault", fmt.Sprintf("die_after=%d", k))
			if r.status != 200 || !errors.Is(r.readErr, io.ErrUnexpectedEOF) {
				t.Fatalf("die_after=%d: %d %v", k, r.status, r.readErr)
			}
			frames, err := brFrames(t, r.body)
			if err != nil {
				t.Fatal(err)
			}
			if st := brCount(t, frames); len(st.deltas) != min(k, defaultTokens) || st.stop != "" || st.usageOut != -1 {
				t.Errorf("die_after=%d: %d deltas, stop %q", k, len(st.deltas), st.stop)
			}
		}
		_, srv := newMock(t, "bedrock", Options{})
		r := brExchange(t, context.Background(), srv, brPath("m", false), brBody, "X-Mock-Fault", "die_after=1")
		if r.status != 200 || !errors.Is(r.readErr, io.ErrUnexpectedEOF) || json.Valid(r.body) {
			t.Errorf("non-streaming die_after: %d %v %q", r.status, r.readErr, r.body)
		}
	})
	t.Run("error_after sends an exception frame", func(t *testing.T) {
		_, srv := newMock(t, "bedrock", Options{})
		r := brExchange(t, context.Background(), srv, brPath("m", true), brBody, "X-Mock-Fault", "error_after=2;error_type=ThrottlingException")
		frames, err := brFrames(t, r.body)
		if err != nil || r.readErr != nil {
			t.Fatal(err, r.readErr)
		}
		st := brCount(t, frames)
		last := frames[len(frames)-1]
		if len(st.deltas) != 2 || st.exception != "throttlingException" || last.headers[":content-type"] != "application/json" || last.payload["message"] == nil {
			t.Errorf("deltas %d exception %q last %v", len(st.deltas), st.exception, last)
		}
	})
	t.Run("malformed_after breaks one frame's CRC", func(t *testing.T) {
		_, srv := newMock(t, "bedrock", Options{})
		r := brExchange(t, context.Background(), srv, brPath("m", true), brBody, "X-Mock-Fault", "malformed_after=3")
		frames, err := brFrames(t, r.body)
		if !errors.As(err, new(eventstream.ChecksumError)) {
			t.Fatalf("decode ended with %v, want a checksum error", err)
		}
		if st := brCount(t, frames); len(st.deltas) != 3 {
			t.Errorf("%d deltas before the bad frame", len(st.deltas))
		}
		r = brExchange(t, context.Background(), srv, brPath("m", false), brBody, "X-Mock-Fault", "malformed_after=3")
		if r.status != 200 || r.readErr != nil || json.Valid(r.body) {
			t.Errorf("non-streaming malformed_after: %d %v %q", r.status, r.readErr, r.body)
		}
	})
	t.Run("stalls end with the client", func(t *testing.T) {
		for _, fault := range []string{"stall", "stall_after=2"} {
			base := runtime.NumGoroutine()
			m, srv := newMock(t, "bedrock", Options{})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
			r := brExchange(t, ctx, srv, brPath("m", true), brBody, "X-Mock-Fault", fault)
			cancel()
			if r.readErr == nil {
				t.Fatalf("%s: read ended cleanly", fault)
			}
			if fault == "stall_after=2" {
				frames, _ := brFrames(t, r.body)
				if st := brCount(t, frames); len(st.deltas) != 2 || st.stop != "" {
					t.Errorf("before the stall: %d deltas, stop %q", len(st.deltas), st.stop)
				}
			}
			deadline := time.Now().Add(5 * time.Second)
			for m.Active() != 0 {
				if time.Now().After(deadline) {
					t.Fatal("handler still running after its client left")
				}
				time.Sleep(time.Millisecond)
			}
			m.Close()
			srv.Close()
			srv.Client().CloseIdleConnections()
			waitGoroutines(t, base)
		}
	})
	t.Run("times heals", func(t *testing.T) {
		_, srv := newMock(t, "bedrock", Options{Fault: "status=503;times=1"})
		if r := brExchange(t, context.Background(), srv, brPath("m", false), brBody); r.status != 503 {
			t.Fatalf("first: %d", r.status)
		}
		if r := brExchange(t, context.Background(), srv, brPath("m", false), brBody); r.status != 200 {
			t.Fatalf("second: %d", r.status)
		}
	})
}

func TestBedrockCompleteBody(t *testing.T) {
	_, srv := newMock(t, "bedrock", Options{Name: "b"})
	r := brExchange(t, context.Background(), srv, brPath("m", false), brBody, "X-Mock-Fault", "tokens=5;cached=3")
	var out struct {
		Output struct {
			Message struct {
				Role    string           `json:"role"`
				Content []map[string]any `json:"content"`
			} `json:"message"`
		} `json:"output"`
		StopReason string         `json:"stopReason"`
		Usage      map[string]int `json:"usage"`
		Metrics    map[string]int `json:"metrics"`
	}
	if err := json.Unmarshal(r.body, &out); err != nil {
		t.Fatal(err)
	}
	total := (len(brBody) + 3) / 4
	if out.Output.Message.Role != "assistant" || out.Output.Message.Content[0]["text"] != "mock b lorem ips" || out.StopReason != "end_turn" {
		t.Errorf("%s", r.body)
	}
	if u := out.Usage; u["inputTokens"] != total-3 || u["cacheReadInputTokens"] != 3 || u["outputTokens"] != 5 || u["totalTokens"] != total+5 {
		t.Errorf("usage %v, want %d prompt tokens with 3 cached apart", u, total)
	}
	if _, ok := out.Metrics["latencyMs"]; !ok || r.header.Get("x-amzn-RequestId") == "" {
		t.Errorf("metrics %v request id %q", out.Metrics, r.header.Get("x-amzn-RequestId"))
	}
}
