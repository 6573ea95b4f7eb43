package anthropic

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/provider"
)

func transcript(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// events frames "name", "data" pairs as SSE events; the name is repeated in
// the data's type, as Anthropic does.
func events(pairs ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i] != "" {
			b.WriteString("event: " + pairs[i] + "\n")
		}
		b.WriteString("data: " + pairs[i+1] + "\n\n")
	}
	return b.String()
}

const (
	msgStart  = `{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`
	textStart = `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`
	textHi    = `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`
	blockStop = `{"type":"content_block_stop","index":0}`
	msgDelta  = `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":3}}`
	msgStop   = `{"type":"message_stop"}`
)

var (
	evStart  = canonical.Event{Kind: canonical.EventStart, ID: "msg_01", Name: "claude-sonnet-4-5"}
	evInput  = canonical.Event{Kind: canonical.EventUsage, Usage: canonical.Usage{InputTokens: 10}}
	evHi     = canonical.Event{Kind: canonical.EventTextDelta, Text: "Hi"}
	evUsage  = canonical.Event{Kind: canonical.EventUsage, Usage: canonical.Usage{InputTokens: 10, OutputTokens: 3}}
	evEndTur = canonical.Event{Kind: canonical.EventStop, Stop: canonical.StopEnd}
)

func TestStream(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []canonical.Event
		// wantClass is the class of the final error; "" means io.EOF.
		wantClass  failure.Class
		wantType   string
		wantStatus int
	}{
		// Unhappy paths first.
		{name: "empty body", body: "", wantClass: failure.ProviderUnavailable},
		{name: "message_stop alone", body: events("message_stop", msgStop), wantClass: failure.ProviderUnavailable},
		{name: "text before message_start", body: events("content_block_delta", textHi, "message_delta", msgDelta, "message_stop", msgStop),
			wantClass: failure.ProviderUnavailable},
		{name: "unnamed foreign events", body: "data: {}\n\ndata: {\"object\":\"list\"}\n\n", wantClass: failure.ProviderUnavailable},
		{name: "message_stop before any stop_reason", body: events("message_start", msgStart, "content_block_delta", textHi, "message_stop", msgStop),
			want: []canonical.Event{evStart, evInput, evHi}, wantClass: failure.ProviderUnavailable},
		{name: "missing message_stop", body: events("message_start", msgStart, "content_block_start", textStart, "content_block_delta", textHi, "message_delta", msgDelta),
			want: []canonical.Event{evStart, evInput, evHi, evUsage, evEndTur}, wantClass: failure.ProviderUnavailable},
		{name: "cut mid event", body: events("message_start", msgStart, "content_block_delta", textHi) + "event: content_block_delta\ndata: {\"type\":\"content_bl",
			want: []canonical.Event{evStart, evInput, evHi}, wantClass: failure.ProviderUnavailable},
		{name: "malformed event", body: events("message_start", msgStart, "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi}}`),
			want: []canonical.Event{evStart, evInput}, wantClass: failure.ProviderUnavailable},
		{name: "wrong JSON type", body: events("message_start", `{"type":"message_start","message":[]}`), wantClass: failure.ProviderUnavailable},
		{name: "overloaded mid-stream", body: events("message_start", msgStart, "content_block_delta", textHi,
			"error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`),
			want: []canonical.Event{evStart, evInput, evHi}, wantClass: failure.ProviderUnavailable, wantType: "overloaded_error", wantStatus: 529},
		{name: "rate limit error event", body: events("error", `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`),
			wantClass: failure.Throttled, wantType: "rate_limit_error", wantStatus: 429},
		{name: "api_error event", body: events("error", `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`),
			wantClass: failure.ProviderUnavailable, wantType: "api_error", wantStatus: 500},
		{name: "billing error event", body: events("error", `{"type":"error","error":{"type":"billing_error","message":"no credit"}}`),
			wantClass: failure.ProviderCreditExhausted, wantType: "billing_error", wantStatus: 402},
		{name: "invalid request error event", body: events("error", `{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}`),
			wantClass: failure.InvalidRequest, wantType: "invalid_request_error", wantStatus: 400},
		{
			name: "text, ping, cached usage merged into the final count",
			body: transcript(t, "stream_text.sse"),
			want: []canonical.Event{
				{Kind: canonical.EventStart, ID: "msg_01", Name: "claude-sonnet-4-5-20250929"},
				{Kind: canonical.EventUsage, Usage: canonical.Usage{InputTokens: 2125, CachedInputTokens: 2000, CacheWriteTokens: 100}},
				{Kind: canonical.EventTextDelta, Text: "Hello"},
				{Kind: canonical.EventTextDelta, Text: ", \"world\"\n\u00e9"},
				{Kind: canonical.EventUsage, Usage: canonical.Usage{InputTokens: 2125, CachedInputTokens: 2000, CacheWriteTokens: 100, OutputTokens: 15}},
				{Kind: canonical.EventStop, Stop: canonical.StopEnd},
			},
		},
		{
			name: "thinking carried with its signature, parallel tools numbered by tool ordinal, unknown event ignored",
			body: transcript(t, "stream_tools.sse"),
			want: []canonical.Event{
				{Kind: canonical.EventStart, ID: "msg_02", Name: "claude-sonnet-4-5-20250929"},
				{Kind: canonical.EventUsage, Usage: canonical.Usage{InputTokens: 397}},
				{Kind: canonical.EventThinkingDelta, Index: 0, Text: "Two lookups."},
				{Kind: canonical.EventThinkingSignature, Index: 0, Text: "EqQBCgIYAhIM", Family: canonical.FamilyClaude},
				{Kind: canonical.EventTextDelta, Text: "Checking."},
				{Kind: canonical.EventToolCallStart, Index: 0, ID: "toolu_01", Name: "get_weather"},
				{Kind: canonical.EventToolCallDelta, Index: 0, Text: `{"city": `},
				{Kind: canonical.EventToolCallDelta, Index: 0, Text: `"SF"}`},
				{Kind: canonical.EventToolCallStart, Index: 1, ID: "toolu_02", Name: "get_time"},
				{Kind: canonical.EventToolCallDelta, Index: 1, Text: `{"tz":"PST"}`},
				{Kind: canonical.EventUsage, Usage: canonical.Usage{InputTokens: 397, OutputTokens: 89}},
				{Kind: canonical.EventStop, Stop: canonical.StopToolUse},
			},
		},
		{
			name: "refusal explanation surfaces as the refusal",
			body: transcript(t, "stream_refusal.sse"),
			want: []canonical.Event{
				{Kind: canonical.EventStart, ID: "msg_03", Name: "claude-sonnet-4-5-20250929"},
				{Kind: canonical.EventUsage, Usage: canonical.Usage{InputTokens: 30}},
				{Kind: canonical.EventUsage, Usage: canonical.Usage{InputTokens: 30}},
				{Kind: canonical.EventRefusalDelta, Text: "I can't help build malware."},
				{Kind: canonical.EventStop, Stop: canonical.StopRefusal},
			},
		},
		{
			name: "refusal after text adds no explanation",
			body: events("message_start", msgStart, "content_block_delta", textHi,
				"message_delta", `{"type":"message_delta","delta":{"stop_reason":"refusal","stop_details":{"type":"refusal","explanation":"no"}},"usage":{"output_tokens":3}}`,
				"message_stop", msgStop),
			want: []canonical.Event{evStart, evInput, evHi, evUsage, {Kind: canonical.EventStop, Stop: canonical.StopRefusal}},
		},
		{
			name: "text carried by content_block_start is delivered",
			body: events("message_start", msgStart,
				"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"Hi"}}`,
				"message_delta", msgDelta, "message_stop", msgStop),
			want: []canonical.Event{evStart, evInput, evHi, evUsage, evEndTur},
		},
		{
			name: "stop sequence; data-only events dispatch on their type",
			body: events("", msgStart, "", textHi,
				"", `{"type":"message_delta","delta":{"stop_reason":"stop_sequence","stop_sequence":"END"},"usage":{"output_tokens":3}}`,
				"", msgStop),
			want: []canonical.Event{evStart, evInput, evHi, evUsage, {Kind: canonical.EventStop, Stop: canonical.StopSequence, StopSequence: "END"}},
		},
		{
			name: "max tokens, pause and context window",
			body: events("message_start", msgStart,
				"message_delta", `{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":3}}`,
				"message_stop", msgStop),
			want: []canonical.Event{evStart, evInput, evUsage, {Kind: canonical.EventStop, Stop: canonical.StopMaxTokens}},
		},
		{
			name: "pause turn, CRLF framing",
			body: strings.ReplaceAll(events("message_start", msgStart,
				"message_delta", `{"type":"message_delta","delta":{"stop_reason":"pause_turn"},"usage":{"output_tokens":3}}`,
				"message_stop", msgStop), "\n", "\r\n"),
			want: []canonical.Event{evStart, evInput, evUsage, {Kind: canonical.EventStop, Stop: canonical.StopPause}},
		},
		{
			name: "context window exceeded; empty deltas and deltas for unknown blocks skipped",
			body: events("message_start", msgStart,
				"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}}`,
				"content_block_delta", `{"type":"content_block_delta","index":5,"delta":{"type":"input_json_delta","partial_json":"{}"}}`,
				"content_block_stop", `not even json: ignored, as the SDK does`,
				"message_delta", `{"type":"message_delta","delta":{"stop_reason":"model_context_window_exceeded"},"usage":{"output_tokens":3}}`,
				"message_stop", msgStop),
			want: []canonical.Event{evStart, evInput, evUsage, {Kind: canonical.EventStop, Stop: canonical.StopContextWindow}},
		},
		{
			name: "unknown stop reason reads as end",
			body: events("message_start", msgStart,
				"message_delta", `{"type":"message_delta","delta":{"stop_reason":"something_new"},"usage":{"output_tokens":3}}`,
				"message_stop", msgStop),
			want: []canonical.Event{evStart, evInput, evUsage, evEndTur},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := streamOf(t, sseReply(tt.body))
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

func TestStreamJSONErrorInsteadOfEvents(t *testing.T) {
	tgt, _ := upstream(t, reply{body: errBody("overloaded_error", "Overloaded")})
	_, err := New().Stream(context.Background(), tgt, &canonical.Request{Messages: []canonical.Message{user("x")}})
	if fe := failure.As(err); fe == nil || fe.Class != failure.ProviderUnavailable || fe.Status != 529 {
		t.Fatalf("err = %v, want provider_unavailable as 529", err)
	}
	tgt, _ = upstream(t, reply{body: `{"id":"msg_1"}`})
	_, err = New().Stream(context.Background(), tgt, &canonical.Request{Messages: []canonical.Message{user("x")}})
	if c := classOf(err); c != failure.ProviderUnavailable {
		t.Fatalf("class = %q (%v), want provider_unavailable", c, err)
	}
}

// TestCancel checks that cancelling the context ends a request promptly,
// whether it is waiting for headers or for the next event.
func TestCancel(t *testing.T) {
	release := make(chan struct{})
	// holding says the handler reached its silence; one request per phase.
	holding := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // lets the server notice the client leaving
		if r.URL.Query().Get("phase") == "events" {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, events("message_start", msgStart))
			w.(http.Flusher).Flush()
		}
		select { // the request is in and its headers withheld
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
	req := &canonical.Request{Messages: []canonical.Message{user("x")}}

	for _, phase := range []string{"headers", "events"} {
		t.Run(phase, func(t *testing.T) {
			tgt := &provider.Target{BaseURL: srv.URL, Model: "m",
				HTTP: &http.Client{Transport: rewrite{phase: phase, next: srv.Client().Transport}}}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			reading := make(chan struct{}, 1)
			go func() {
				st, err := New().Stream(ctx, tgt, req)
				if err != nil {
					done <- err
					return
				}
				defer st.Close()
				if phase == "headers" {
					done <- errors.New("a stream was returned before any header arrived")
					return
				}
				for range 2 { // start, input usage
					if _, err := st.Next(); err != nil {
						done <- err
						return
					}
				}
				reading <- struct{}{}
				_, err = st.Next()
				done <- err
			}()
			// Cancel once the request waits where the phase says: for
			// headers, the handler holds the request; for events, the first
			// ones were read and the next Next is on its way to the body.
			// That Next may be blocked on the body or not yet there when
			// the cancel lands: either way its read fails with the cancel
			// (net/http fails a cancelled request's body reads with the
			// cause), so the order does not change what is checked.
			wait := holding
			if phase == "events" {
				wait = reading
			}
			select {
			case <-wait:
			case err := <-done:
				t.Fatalf("ended before the cancel: %v", err)
			}
			cancel()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "context canceled") {
					t.Fatalf("err = %v, want one wrapping context.Canceled", err)
				}
				if c := classOf(err); c != failure.ProviderUnavailable {
					t.Errorf("class = %q", c)
				}
			case <-time.After(2 * time.Second):
				t.Fatal("cancellation did not end the request")
			}
		})
	}
}

type rewrite struct {
	phase string
	next  http.RoundTripper
}

func (r rewrite) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.URL.RawQuery = "phase=" + r.phase
	return r.next.RoundTrip(req)
}
