package bedrock

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/provider"
)

const reqID = "4b7b5a4c-0e5d-4a0b-9a51-5b6c7d8e9f00"

var (
	fStart    = ev("messageStart", `{"p":"abcd","role":"assistant"}`)
	fHi       = ev("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Hi"},"p":"abcdefgh"}`)
	fThere    = ev("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":" th\u00e9re\n\"q\""},"p":"ab"}`)
	fStop0    = ev("contentBlockStop", `{"contentBlockIndex":0,"p":"abcdefghijk"}`)
	fEndTurn  = ev("messageStop", `{"stopReason":"end_turn","p":"abcdefghijklmnop"}`)
	fMetadata = ev("metadata", `{"usage":{"inputTokens":10,"outputTokens":3,"totalTokens":13},"metrics":{"latencyMs":210},"p":"abc"}`)

	evStart = canonical.Event{Kind: canonical.EventStart, ID: reqID, Name: profileARN}
	evHi    = canonical.Event{Kind: canonical.EventTextDelta, Text: "Hi"}
	evThere = canonical.Event{Kind: canonical.EventTextDelta, Text: " th\u00e9re\n\"q\""}
	evEnd   = canonical.Event{Kind: canonical.EventStop, Stop: canonical.StopEnd}
	evUsage = canonical.Event{Kind: canonical.EventUsage, Usage: canonical.Usage{InputTokens: 10, OutputTokens: 3}}
)

// badCRC is f with its message CRC broken.
func badCRC(f []byte) []byte {
	b := bytes.Clone(f)
	b[len(b)-1] ^= 0xff
	return b
}

// prelude is a message prelude (with a correct prelude CRC) claiming the
// given lengths, followed by nothing.
func prelude(total, headers uint32) []byte {
	b := make([]byte, 12)
	binary.BigEndian.PutUint32(b, total)
	binary.BigEndian.PutUint32(b[4:], headers)
	binary.BigEndian.PutUint32(b[8:], crc32.ChecksumIEEE(b[:8]))
	return b
}

func TestStream(t *testing.T) {
	tests := []struct {
		name string
		body []byte
		want []canonical.Event
		// wantClass is the class of the final error; "" means io.EOF.
		wantClass  failure.Class
		wantType   string
		wantStatus int
		detail     string
	}{
		// Unhappy paths first.
		{name: "empty body", wantClass: failure.ProviderUnavailable, detail: "before metadata"},
		{name: "ends after messageStop, before metadata", body: join(fStart, fHi, fStop0, fEndTurn),
			want: []canonical.Event{evStart, evHi, evEnd}, wantClass: failure.ProviderUnavailable, detail: "before metadata"},
		{name: "cut mid-message", body: join(fStart, fHi, fThere[:len(fThere)-7]),
			want: []canonical.Event{evStart, evHi}, wantClass: failure.ProviderUnavailable, detail: "before metadata"},
		{name: "cut mid-prelude", body: join(fStart, fHi[:5]),
			want: []canonical.Event{evStart}, wantClass: failure.ProviderUnavailable, detail: "before metadata"},
		{name: "bad message CRC", body: join(fStart, fHi, badCRC(fThere), fMetadata),
			want: []canonical.Event{evStart, evHi}, wantClass: failure.ProviderUnavailable, detail: "checksum"},
		{name: "bad prelude CRC", body: join(fStart, func() []byte { b := bytes.Clone(fHi); b[9] ^= 1; return b }()),
			want: []canonical.Event{evStart}, wantClass: failure.ProviderUnavailable, detail: "checksum"},
		{name: "length below the minimum", body: join(fStart, prelude(15, 0)),
			want: []canonical.Event{evStart}, wantClass: failure.ProviderUnavailable, detail: "impossible lengths"},
		{name: "headers longer than the message", body: prelude(40, 30), wantClass: failure.ProviderUnavailable, detail: "impossible lengths"},
		{name: "headers over 128 KiB", body: prelude(200<<10, 129<<10), wantClass: failure.ProviderUnavailable, detail: "impossible lengths"},
		{name: "payload over 16 MiB, not read", body: prelude(17<<20, 0), wantClass: failure.ProviderUnavailable, detail: "16 MiB"},
		{name: "bad JSON payload", body: join(fStart, ev("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Hi}}`)),
			want: []canonical.Event{evStart}, wantClass: failure.ProviderUnavailable, detail: "contentBlockDelta event"},
		{name: "wrong JSON type", body: ev("messageStop", `{"stopReason":7}`), wantClass: failure.ProviderUnavailable, detail: "messageStop event"},
		{name: "unknown message type", body: frame(eventstream.Headers{str(":message-type", "surprise")}, `{}`),
			wantClass: failure.ProviderUnavailable, detail: ":message-type"},
		{name: "message type not a string", body: frame(eventstream.Headers{{Name: ":message-type", Value: eventstream.BytesValue("event")}, str(":event-type", "messageStart")}, `{}`),
			wantClass: failure.ProviderUnavailable, detail: ":message-type"},
		{name: "metadata without messageStop", body: join(fStart, fHi, fMetadata),
			want: []canonical.Event{evStart, evHi, evUsage}, wantClass: failure.ProviderUnavailable, detail: "without messageStop"},
		{name: "malformed tool use, usage still counted", body: join(fStart, fHi, ev("messageStop", `{"stopReason":"malformed_tool_use"}`), fMetadata),
			want: []canonical.Event{evStart, evHi, evUsage}, wantClass: failure.ProviderUnavailable, detail: "malformed_tool_use"},
		{name: "malformed model output", body: join(fStart, fHi, ev("messageStop", `{"stopReason":"malformed_model_output"}`), fMetadata),
			want: []canonical.Event{evStart, evHi, evUsage}, wantClass: failure.ProviderUnavailable, detail: "malformed_model_output"},
		{name: "throttlingException mid-stream", body: join(fStart, fHi, exception("throttlingException", `{"message":"Too many tokens per day, please wait before trying again."}`)),
			want: []canonical.Event{evStart, evHi}, wantClass: failure.Throttled, wantType: "throttlingException", wantStatus: 429},
		{name: "ThrottlingException, shape-name spelling", body: exception("ThrottlingException", `{"message":"slow"}`),
			wantClass: failure.Throttled, wantType: "ThrottlingException", wantStatus: 429},
		{name: "serviceUnavailableException", body: join(fStart, exception("serviceUnavailableException", `{"message":"Bedrock is unable to process your request."}`)),
			want: []canonical.Event{evStart}, wantClass: failure.ProviderUnavailable, wantType: "serviceUnavailableException", wantStatus: 503},
		{name: "internalServerException", body: exception("internalServerException", `{"message":"x"}`),
			wantClass: failure.ProviderUnavailable, wantType: "internalServerException", wantStatus: 500},
		{name: "modelStreamErrorException", body: exception("modelStreamErrorException", `{"message":"x","originalStatusCode":500,"originalMessage":"y"}`),
			wantClass: failure.ProviderUnavailable, wantType: "modelStreamErrorException", wantStatus: 424},
		{name: "validationException", body: exception("validationException", `{"message":"Input is too long for requested model."}`),
			wantClass: failure.InvalidRequest, wantType: "validationException", wantStatus: 400},
		{name: "unknown exception with a body that is not JSON", body: exception("mysteryException", `oops`),
			wantClass: failure.ProviderUnavailable, wantType: "mysteryException", wantStatus: 500},
		{name: "unmodelled error message", body: join(fStart, frame(eventstream.Headers{str(":message-type", "error"), str(":error-code", "ThrottlingException"), str(":error-message", "rate")}, ``)),
			want: []canonical.Event{evStart}, wantClass: failure.ProviderUnavailable, wantType: "ThrottlingException", detail: "in-stream error"},

		// Complete streams.
		{name: "text without contentBlockStart, p padding ignored", body: join(fStart, fHi, fThere, fStop0, fEndTurn, fMetadata),
			want: []canonical.Event{evStart, evHi, evThere, evEnd, evUsage}},
		{
			name: "parallel tool calls after text, numbered by tool ordinal",
			body: join(fStart, fHi, fStop0,
				ev("contentBlockStart", `{"contentBlockIndex":1,"start":{"toolUse":{"toolUseId":"tooluse_a","name":"get_weather"}},"p":"x"}`),
				ev("contentBlockDelta", `{"contentBlockIndex":1,"delta":{"toolUse":{"input":"{\"city\": "}}}`),
				ev("contentBlockStart", `{"contentBlockIndex":2,"start":{"toolUse":{"toolUseId":"tooluse_b","name":"get_time"}}}`),
				ev("contentBlockDelta", `{"contentBlockIndex":2,"delta":{"toolUse":{"input":"{\"tz\":\"CET\"}"}}}`),
				ev("contentBlockDelta", `{"contentBlockIndex":1,"delta":{"toolUse":{"input":"\"Paris\"}"}}}`),
				ev("contentBlockStop", `{"contentBlockIndex":1}`),
				ev("contentBlockStop", `{"contentBlockIndex":2}`),
				ev("messageStop", `{"stopReason":"tool_use"}`),
				ev("metadata", `{"usage":{"inputTokens":397,"outputTokens":89,"totalTokens":486},"metrics":{"latencyMs":1}}`)),
			want: []canonical.Event{evStart, evHi,
				{Kind: canonical.EventToolCallStart, Index: 0, ID: "tooluse_a", Name: "get_weather"},
				{Kind: canonical.EventToolCallDelta, Index: 0, Text: `{"city": `},
				{Kind: canonical.EventToolCallStart, Index: 1, ID: "tooluse_b", Name: "get_time"},
				{Kind: canonical.EventToolCallDelta, Index: 1, Text: `{"tz":"CET"}`},
				{Kind: canonical.EventToolCallDelta, Index: 0, Text: `"Paris"}`},
				{Kind: canonical.EventStop, Stop: canonical.StopToolUse},
				{Kind: canonical.EventUsage, Usage: canonical.Usage{InputTokens: 397, OutputTokens: 89}},
			},
		},
		{
			name: "guardrail intervened with no content",
			body: join(fStart, ev("messageStop", `{"stopReason":"guardrail_intervened"}`),
				ev("metadata", `{"usage":{"inputTokens":10,"outputTokens":0,"totalTokens":10},"trace":{"guardrail":{"actionReason":"x"}}}`)),
			want: []canonical.Event{evStart, {Kind: canonical.EventStop, Stop: canonical.StopContentFilter},
				{Kind: canonical.EventUsage, Usage: canonical.Usage{InputTokens: 10}}},
		},
		{
			name: "content filtered, max tokens",
			body: join(fStart, fHi, ev("messageStop", `{"stopReason":"content_filtered"}`), fMetadata),
			want: []canonical.Event{evStart, evHi, {Kind: canonical.EventStop, Stop: canonical.StopContentFilter}, evUsage},
		},
		{
			name: "cached usage; reasoning carried with its signature; citations, empty and orphan deltas skipped; unknown events ignored",
			body: join(fStart,
				ev("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"hmm"}}}`),
				ev("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"signature":"sig"}}}`),
				ev("contentBlockStop", `not even JSON: never parsed`),
				fHi,
				ev("contentBlockDelta", `{"contentBlockIndex":1,"delta":{"text":""}}`),
				ev("contentBlockDelta", `{"contentBlockIndex":7,"delta":{"toolUse":{"input":"{}"}}}`),
				ev("somethingNew", `{"x":1}`),
				ev("messageStop", `{"stopReason":"max_tokens","additionalModelResponseFields":{"a":1}}`),
				ev("metadata", `{"usage":{"inputTokens":12,"outputTokens":7,"totalTokens":5319,"cacheReadInputTokens":5000,"cacheWriteInputTokens":300},"metrics":{"latencyMs":3}}`)),
			want: []canonical.Event{evStart,
				{Kind: canonical.EventThinkingDelta, Index: 0, Text: "hmm"},
				{Kind: canonical.EventThinkingSignature, Index: 0, Text: "sig", Family: canonical.FamilyClaude},
				evHi, {Kind: canonical.EventStop, Stop: canonical.StopMaxTokens},
				{Kind: canonical.EventUsage, Usage: canonical.Usage{InputTokens: 5312, CachedInputTokens: 5000, CacheWriteTokens: 300, OutputTokens: 7}}},
		},
		{
			name: "nothing after metadata is read",
			body: join(fStart, fEndTurn, fMetadata, []byte("garbage that would not decode")),
			want: []canonical.Event{evStart, evEnd, evUsage},
		},
		{
			name: "stop sequence",
			body: join(fStart, ev("messageStop", `{"stopReason":"stop_sequence"}`), ev("metadata", `{}`)),
			want: []canonical.Event{evStart, {Kind: canonical.EventStop, Stop: canonical.StopSequence}},
		},
		{
			name: "context window exceeded",
			body: join(fStart, fHi, ev("messageStop", `{"stopReason":"model_context_window_exceeded"}`), ev("metadata", `{}`)),
			want: []canonical.Event{evStart, evHi, {Kind: canonical.EventStop, Stop: canonical.StopContextWindow}},
		},
		{
			name: "unknown stop reason reads as end",
			body: join(fStart, ev("messageStop", `{"stopReason":"something_new"}`), fMetadata),
			want: []canonical.Event{evStart, evEnd, evUsage},
		},
		{
			name: "a guardrail's blocked message stays text",
			body: join(fStart, ev("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Sorry, the model cannot answer this question."}}`),
				ev("messageStop", `{"stopReason":"guardrail_intervened"}`), fMetadata),
			want: []canonical.Event{evStart, {Kind: canonical.EventTextDelta, Text: "Sorry, the model cannot answer this question."},
				{Kind: canonical.EventStop, Stop: canonical.StopContentFilter}, evUsage},
		},
		{
			name: "a total that leaves the cache out means inputTokens already counts it",
			body: join(fStart, fHi, fEndTurn,
				ev("metadata", `{"usage":{"inputTokens":5312,"outputTokens":7,"totalTokens":5319,"cacheReadInputTokens":5000,"cacheWriteInputTokens":300}}`)),
			want: []canonical.Event{evStart, evHi, evEnd,
				{Kind: canonical.EventUsage, Usage: canonical.Usage{InputTokens: 5312, CachedInputTokens: 5000, CacheWriteTokens: 300, OutputTokens: 7}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := streamOf(t, streamReply(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			got, err := drain(t, st)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("events:\n got %+v\nwant %+v", got, tt.want)
			}
			if tt.wantClass == "" {
				if !isEOF(err) {
					t.Fatalf("end = %v, want io.EOF", err)
				}
			} else {
				fe := failure.As(err)
				if fe == nil || fe.Class != tt.wantClass || fe.ProviderType != tt.wantType || fe.Status != tt.wantStatus {
					t.Fatalf("end = %v, want class %s type %q status %d", err, tt.wantClass, tt.wantType, tt.wantStatus)
				}
				if !strings.Contains(err.Error(), tt.detail) {
					t.Errorf("end = %v, want it to mention %q", err, tt.detail)
				}
			}
			if _, again := st.Next(); again != err {
				t.Errorf("second Next after the end = %v, want %v", again, err)
			}
			if err := st.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if err := st.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
			if _, err := st.Next(); err == nil {
				t.Error("Next after Close returned no error")
			}
		})
	}
}

// okBody is a Converse (non-streamed) answer.
const okBody = `{"output":{"message":{"role":"assistant","content":[{"text":"ok"}]}},"stopReason":"end_turn","usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2},"metrics":{"latencyMs":5}}`

func TestStreamJSONInsteadOfEvents(t *testing.T) {
	tests := []struct {
		name   string
		header map[string]string
		body   string
		class  failure.Class
		status int
		typ    string
	}{
		{"error body with __type", nil, `{"__type":"com.amazon.bedrock#ThrottlingException","message":"slow"}`, failure.Throttled, 429, "ThrottlingException"},
		{"error header", map[string]string{"X-Amzn-ErrorType": "ServiceUnavailableException:http://internal.amazon.com/coral/com.amazon.bedrock/"}, `{"message":"x"}`, failure.ProviderUnavailable, 503, "ServiceUnavailableException"},
		{"a Converse body", nil, okBody, failure.ProviderUnavailable, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := map[string]string{"Content-Type": "application/json"}
			for k, v := range tt.header {
				h[k] = v
			}
			tgt, _ := upstream(t, reply{header: h, body: []byte(tt.body)})
			st, err := newAdapter().Stream(context.Background(), tgt, hello())
			fe := failure.As(err)
			if st != nil || fe == nil || fe.Class != tt.class || fe.Status != tt.status || fe.ProviderType != tt.typ {
				t.Fatalf("stream %v err %v, want %s %d %q", st, err, tt.class, tt.status, tt.typ)
			}
		})
	}
}

// TestCancel checks that cancelling the context ends a request promptly,
// whether it is waiting for headers or for the next event, and that Close
// from another goroutine unblocks a Next.
func TestCancel(t *testing.T) {
	release := make(chan struct{})
	// holding says the handler reached its silence; one request per phase.
	holding := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if !strings.Contains(r.URL.Path, "/model/silent/") {
			w.Header().Set("Content-Type", eventStreamType)
			_, _ = w.Write(fStart)
			w.(http.Flusher).Flush()
		}
		select { // the request is in and its headers or next event withheld
		case holding <- struct{}{}:
		default:
		}
		select { // then silence
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)

	for _, phase := range []string{"headers", "events", "close"} {
		t.Run(phase, func(t *testing.T) {
			model := "m"
			if phase == "headers" {
				model = "silent" // no header ever comes
			}
			tgt := &provider.Target{BaseURL: srv.URL, Model: model, APIKey: testKey, HTTP: srv.Client()}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			started := make(chan canonical.Stream, 1)
			go func() {
				st, err := newAdapter().Stream(ctx, tgt, hello())
				if err != nil {
					done <- err
					return
				}
				defer st.Close()
				if phase == "headers" {
					done <- errors.New("a stream was returned before any header arrived")
					return
				}
				if _, err := st.Next(); err != nil { // messageStart
					done <- err
					return
				}
				started <- st
				_, err = st.Next()
				done <- err
			}()
			if phase == "headers" {
				select { // the handler holds the request
				case <-holding:
				case err := <-done:
					t.Fatalf("ended before the cancel: %v", err)
				}
				cancel()
			} else {
				// The first event was read and the next Next is on its way
				// to the body. It may be blocked there or not yet there when
				// the cancel or Close lands: either way it fails as checked
				// below (net/http fails a cancelled request's body reads with
				// the cause; a closed stream's Next fails as a transport
				// failure, be it in the read or at its closed check), so the
				// order does not change the outcome.
				var st canonical.Stream
				select {
				case st = <-started:
				case err := <-done:
					t.Fatalf("ended before the cancel: %v", err)
				}
				if phase == "close" {
					st.Close()
				} else {
					cancel()
				}
			}
			select {
			case err := <-done:
				if classOf(err) != failure.ProviderUnavailable {
					t.Fatalf("class = %q (%v)", classOf(err), err)
				}
				if phase != "close" && !strings.Contains(err.Error(), "context canceled") {
					t.Fatalf("err = %v, want one wrapping context.Canceled", err)
				}
			case <-time.After(2 * time.Second):
				t.Fatal("the request did not end")
			}
		})
	}
}
