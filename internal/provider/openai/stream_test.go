package openai

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

// data frames each JSON chunk as a data-only SSE event.
func data(chunks ...string) string {
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString("data: " + c + "\n\n")
	}
	return b.String()
}

const (
	cFirst = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}`
	cHello = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}],"usage":null}`
	cStop  = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}`
	cUsage = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}`
)

var (
	start1   = canonical.Event{Kind: canonical.EventStart, ID: "chatcmpl-1", Name: "gpt-4o"}
	hello1   = canonical.Event{Kind: canonical.EventTextDelta, Text: "Hello"}
	stopEnd  = canonical.Event{Kind: canonical.EventStop, Stop: canonical.StopEnd}
	usageEnd = canonical.Event{Kind: canonical.EventUsage, Usage: canonical.Usage{InputTokens: 9, OutputTokens: 1}}
)

func TestStream(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []canonical.Event
		// wantClass is the class of the final error; "" means io.EOF.
		wantClass failure.Class
		wantType  string
		wantRetry bool
	}{
		// Unhappy paths first.
		{name: "empty body", body: "", wantClass: failure.ProviderUnavailable},
		{name: "missing [DONE]", body: data(cFirst, cHello, cStop, cUsage),
			want: []canonical.Event{start1, hello1, stopEnd, usageEnd}, wantClass: failure.ProviderUnavailable},
		// Every choice ends with a finish_reason: [DONE] without one is a
		// server that lost the generation.
		{name: "[DONE] without a finish_reason", body: data(cFirst, cHello, "[DONE]"),
			want: []canonical.Event{start1, hello1}, wantClass: failure.ProviderUnavailable},
		{name: "finish_reason error (OpenRouter)", body: data(cFirst, cHello, `{"id":"chatcmpl-1","model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"error"}]}`, "[DONE]"),
			want: []canonical.Event{start1, hello1}, wantClass: failure.ProviderUnavailable},
		{name: "finish_reason abort (vLLM)", body: data(cFirst, cHello, `{"id":"chatcmpl-1","model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"abort"}]}`, "[DONE]"),
			want: []canonical.Event{start1, hello1}, wantClass: failure.ProviderUnavailable},
		{name: "cut mid event", body: data(cFirst, cHello) + "data: {\"id\":\"chatcmpl-1\",\"choi",
			want: []canonical.Event{start1, hello1}, wantClass: failure.ProviderUnavailable},
		{name: "malformed chunk", body: data(cFirst, `{"choices":[{"delta":{"content":}]}`, cStop),
			want: []canonical.Event{start1}, wantClass: failure.ProviderUnavailable},
		{name: "wrong JSON type", body: data(`{"choices":{"delta":"x"}}`), wantClass: failure.ProviderUnavailable},
		{name: "in-stream server_error", body: data(cFirst, cHello, `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`),
			want: []canonical.Event{start1, hello1}, wantClass: failure.ProviderUnavailable, wantType: "server_error"},
		{name: "in-stream rate limit", body: data(`{"error":{"message":"Rate limit reached","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`),
			wantClass: failure.Throttled, wantType: "tokens"},
		{name: "in-stream quota", body: data(`{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`),
			wantClass: failure.ProviderCreditExhausted, wantType: "insufficient_quota"},
		{name: "in-stream invalid request", body: data(`{"error":{"message":"bad","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`),
			wantClass: failure.InvalidRequest, wantType: "invalid_request_error"},
		{name: "in-stream OpenRouter numeric code", body: data(cFirst, `{"id":"gen-1","object":"chat.completion.chunk","created":1,"model":"x","error":{"code":502,"message":"Provider returned error"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}`),
			want: []canonical.Event{start1}, wantClass: failure.ProviderUnavailable},
		{
			name: "text with usage",
			body: transcript(t, "stream_text.sse"),
			want: []canonical.Event{
				{Kind: canonical.EventStart, ID: "chatcmpl-7", Name: "gpt-4o-2024-08-06"},
				{Kind: canonical.EventTextDelta, Text: "Hel"},
				{Kind: canonical.EventTextDelta, Text: "lo é\n\"world\""},
				{Kind: canonical.EventStop, Stop: canonical.StopEnd},
				{Kind: canonical.EventUsage, Usage: canonical.Usage{InputTokens: 1200, CachedInputTokens: 1024, OutputTokens: 4}},
			},
		},
		{
			name: "parallel tool calls with fragmented arguments",
			body: transcript(t, "stream_tools.sse"),
			want: []canonical.Event{
				{Kind: canonical.EventStart, ID: "chatcmpl-8", Name: "gpt-4o"},
				{Kind: canonical.EventToolCallStart, Index: 0, ID: "call_a", Name: "get_weather"},
				{Kind: canonical.EventToolCallDelta, Index: 0, Text: `{"city":`},
				{Kind: canonical.EventToolCallStart, Index: 1, ID: "call_b", Name: "get_time"},
				{Kind: canonical.EventToolCallDelta, Index: 1, Text: `{"tz"`},
				{Kind: canonical.EventToolCallDelta, Index: 0, Text: `"Paris"}`},
				{Kind: canonical.EventToolCallDelta, Index: 1, Text: `:"CET"}`},
				{Kind: canonical.EventStop, Stop: canonical.StopToolUse},
				{Kind: canonical.EventUsage, Usage: canonical.Usage{InputTokens: 40, OutputTokens: 24}},
			},
		},
		{
			name: "refusal",
			body: transcript(t, "stream_refusal.sse"),
			want: []canonical.Event{
				{Kind: canonical.EventStart, ID: "chatcmpl-9", Name: "gpt-4o"},
				{Kind: canonical.EventRefusalDelta, Text: "I can't "},
				{Kind: canonical.EventRefusalDelta, Text: "help with that."},
				{Kind: canonical.EventStop, Stop: canonical.StopRefusal},
				{Kind: canonical.EventUsage, Usage: canonical.Usage{InputTokens: 15, OutputTokens: 6}},
			},
		},
		{
			name: "max tokens, CRLF framing, keep-alive empty data",
			body: strings.ReplaceAll(data(cFirst, cHello, "", `{"id":"chatcmpl-1","choices":[{"index":0,"delta":{},"finish_reason":"length"}],"usage":null}`, cUsage, "[DONE]"), "\n", "\r\n"),
			want: []canonical.Event{start1, hello1, {Kind: canonical.EventStop, Stop: canonical.StopMaxTokens}, usageEnd},
		},
		{
			name: "cached, cache-write and reasoning tokens",
			body: data(cFirst, `{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"Partial"},"finish_reason":"length"}],"usage":null}`,
				`{"id":"chatcmpl-1","choices":[],"usage":{"prompt_tokens":2000,"completion_tokens":500,"total_tokens":2500,`+
					`"prompt_tokens_details":{"cached_tokens":1536,"cache_write_tokens":200},"completion_tokens_details":{"reasoning_tokens":448}}}`, "[DONE]"),
			want: []canonical.Event{start1, {Kind: canonical.EventTextDelta, Text: "Partial"},
				{Kind: canonical.EventStop, Stop: canonical.StopMaxTokens},
				{Kind: canonical.EventUsage, Usage: canonical.Usage{InputTokens: 2000, CachedInputTokens: 1536, CacheWriteTokens: 200, OutputTokens: 500, ReasoningTokens: 448}}},
		},
		{
			name: "deprecated function_call",
			body: data(cFirst, `{"id":"chatcmpl-1","choices":[{"index":0,"delta":{},"finish_reason":"function_call"}],"usage":null}`, "[DONE]"),
			want: []canonical.Event{start1, {Kind: canonical.EventStop, Stop: canonical.StopToolUse}},
		},
		{
			name: "usage on the finish chunk (vLLM continuous usage)",
			body: data(cFirst, `{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"content_filter"}],"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}`, "[DONE]"),
			want: []canonical.Event{start1, {Kind: canonical.EventTextDelta, Text: "Hi"}, {Kind: canonical.EventStop, Stop: canonical.StopContentFilter}, usageEnd},
		},
		{
			name: "first tool chunk carries arguments; repeated ids start nothing new",
			body: data(`{"id":"chatcmpl-1","model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_x","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},"finish_reason":null}]}`,
				`{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_x","function":{"name":"f","arguments":""}}]},"finish_reason":"tool_calls"}]}`, "[DONE]"),
			want: []canonical.Event{start1,
				{Kind: canonical.EventToolCallStart, ID: "call_x", Name: "f"},
				{Kind: canonical.EventToolCallDelta, Text: `{"a":1}`},
				{Kind: canonical.EventStop, Stop: canonical.StopToolUse}},
		},
		{
			name: "error:null is not an error; other choices ignored",
			body: data(`{"id":"chatcmpl-1","model":"gpt-4o","error":null,"choices":[{"index":1,"delta":{"content":"other"},"finish_reason":null},{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}`, cStop, "[DONE]"),
			want: []canonical.Event{start1, hello1, stopEnd},
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
				if fe == nil || fe.Class != tt.wantClass || fe.ProviderType != tt.wantType {
					t.Fatalf("end = %v, want class %s type %q", err, tt.wantClass, tt.wantType)
				}
			}
			// The end is sticky, and Close is idempotent.
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
	tgt, _ := upstream(t, reply{body: `{"error":{"message":"Rate limit exceeded: free-models-per-min","code":429}}`})
	_, err := New().Stream(context.Background(), tgt, &canonical.Request{Messages: []canonical.Message{user("x")}})
	if c := classOf(err); c != failure.Throttled {
		t.Fatalf("class = %q (%v), want throttled", c, err)
	}
	tgt, _ = upstream(t, reply{body: `{"id":"x"}`})
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
			_, _ = w.Write([]byte(data(cFirst)))
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
			// The phase travels in the query, added by the client's transport.
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
				if ev, err := st.Next(); err != nil || ev.Kind != canonical.EventStart {
					done <- err
					return
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

// A compatible server may answer a stream request with a JSON body (an
// error, whatever the status says): it is classified from that body, never
// read as a stream.
func TestStreamAnsweredWithJSON(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		wantClass failure.Class
	}{
		{"rate limit in a 200", `{"error":{"message":"Rate limit exceeded","type":"rate_limit_exceeded","code":429}}`, failure.Throttled},
		{"server error in a 200", `{"error":{"message":"upstream exploded","type":"server_error"}}`, failure.ProviderUnavailable},
		{"error string in a 200", `{"error":"upstream exploded"}`, failure.ProviderUnavailable},
		{"JSON that is no error", `{"id":"chatcmpl-1","choices":[]}`, failure.ProviderUnavailable},
		{"not even JSON", `<html>oops</html>`, failure.ProviderUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := streamOf(t, reply{header: map[string]string{"Content-Type": "application/json; charset=utf-8"}, body: tt.body})
			if st != nil || classOf(err) != tt.wantClass {
				t.Fatalf("stream %v, err %v (class %q), want class %q", st, err, classOf(err), tt.wantClass)
			}
		})
	}
}
