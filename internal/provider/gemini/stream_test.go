package gemini

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/provider"
)

// Chunks as Gemini streams them (wire-formats.md 5.3).
const (
	chHel  = `{"candidates":[{"content":{"role":"model","parts":[{"text":"Hel"}]},"index":0}],"usageMetadata":{"promptTokenCount":5,"totalTokenCount":5},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`
	chLo   = `{"candidates":[{"content":{"role":"model","parts":[{"text":"lo!"}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":2,"totalTokenCount":7},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`
	chMid  = `{"candidates":[{"content":{"role":"model","parts":[{"text":"lo"}]},"index":0}],"usageMetadata":{"promptTokenCount":5,"totalTokenCount":5},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`
	chStop = `{"candidates":[{"content":{"parts":[{"text":""}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":2,"totalTokenCount":7},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`
)

var (
	evStart = canonical.Event{Kind: canonical.EventStart, ID: "r1", Name: "gemini-2.5-flash"}
	evIn5   = canonical.Event{Kind: canonical.EventUsage, Usage: canonical.Usage{InputTokens: 5}}
	evFull  = canonical.Event{Kind: canonical.EventUsage, Usage: canonical.Usage{InputTokens: 5, OutputTokens: 2}}
	evEnd   = canonical.Event{Kind: canonical.EventStop, Stop: canonical.StopEnd}
)

func text(s string) canonical.Event { return canonical.Event{Kind: canonical.EventTextDelta, Text: s} }

// rpcBlock is an in-stream error as Gemini sends it: a bare, pretty-printed
// Google RPC error, not a data: line.
const rpcBlock = "{\n  \"error\": {\n    \"code\": 429,\n    \"message\": \"Resource has been exhausted (e.g. check quota).\",\n    \"status\": \"RESOURCE_EXHAUSTED\",\n" +
	"    \"details\": [\n      {\n        \"@type\": \"type.googleapis.com/google.rpc.RetryInfo\",\n        \"retryDelay\": \"3.95s\"\n      }\n    ]\n  }\n}\n\n"

func TestStreamDecode(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		want    []canonical.Event
		wantEnd func(error) bool
	}{
		{"text", chunks(chHel, chLo), []canonical.Event{evStart, text("Hel"), evIn5, text("lo!"), evFull, evEnd}, isEOF},
		{"finish in a chunk of its own with empty text", chunks(chHel, chMid, chStop),
			[]canonical.Event{evStart, text("Hel"), evIn5, text("lo"), evFull, evEnd}, isEOF},
		{"last chunk without its blank line", chunks(chHel) + "data: " + chLo,
			[]canonical.Event{evStart, text("Hel"), evIn5, text("lo!"), evFull, evEnd}, isEOF},
		{"last chunk with one newline", chunks(chHel) + "data: " + chLo + "\n",
			[]canonical.Event{evStart, text("Hel"), evIn5, text("lo!"), evFull, evEnd}, isEOF},
		{"crlf framing", strings.ReplaceAll(chunks(chHel, chLo), "\n", "\r\n"),
			[]canonical.Event{evStart, text("Hel"), evIn5, text("lo!"), evFull, evEnd}, isEOF},
		{"no space after data:", "data:" + chHel + "\n\ndata:" + chLo + "\n\n",
			[]canonical.Event{evStart, text("Hel"), evIn5, text("lo!"), evFull, evEnd}, isEOF},
		{"comments and extra blank lines are skipped", "\n\n: keep-alive\n\n" + chunks(chHel) + "\n\n" + chunks(chLo),
			[]canonical.Event{evStart, text("Hel"), evIn5, text("lo!"), evFull, evEnd}, isEOF},
		{"a usage-only chunk after the finish still counts", chunks(chLo, `{"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":3,"totalTokenCount":8},"responseId":"r1"}`),
			[]canonical.Event{evStart, text("lo!"), evFull, evEnd, {Kind: canonical.EventUsage, Usage: canonical.Usage{InputTokens: 5, OutputTokens: 3}}}, isEOF},
		{
			name: "parallel function calls in one chunk",
			body: chunks(`{"candidates":[{"content":{"role":"model","parts":[{"text":"Checking."},{"functionCall":{"name":"get_weather","args":{"city": "Paris"}},"thoughtSignature":"c2ln"},{"functionCall":{"id":"g-2","name":"get_time","args":{}}}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":20,"candidatesTokenCount":8,"totalTokenCount":28},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`),
			want: []canonical.Event{evStart, text("Checking."),
				{Kind: canonical.EventToolCallStart, Index: 0, ID: callID("", "r1", 0), Name: "get_weather"},
				{Kind: canonical.EventToolCallDelta, Index: 0, Text: `{"city":"Paris"}`},
				{Kind: canonical.EventToolCallStart, Index: 1, ID: "g-2", Name: "get_time"},
				{Kind: canonical.EventToolCallDelta, Index: 1, Text: `{}`},
				{Kind: canonical.EventUsage, Usage: canonical.Usage{InputTokens: 20, OutputTokens: 8}},
				{Kind: canonical.EventStop, Stop: canonical.StopToolUse}},
			wantEnd: isEOF,
		},
		{
			name: "function calls over several chunks keep counting",
			body: chunks(`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"f","args":{"a":1}}}]},"index":0}],"responseId":"r1"}`,
				`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"g"}}]},"index":0}],"responseId":"r1"}`,
				`{"candidates":[{"content":{"parts":[{"text":""}],"role":"model"},"finishReason":"STOP","index":0}],"responseId":"r1"}`),
			want: []canonical.Event{{Kind: canonical.EventStart, ID: "r1"},
				{Kind: canonical.EventToolCallStart, Index: 0, ID: callID("", "r1", 0), Name: "f"},
				{Kind: canonical.EventToolCallDelta, Index: 0, Text: `{"a":1}`},
				{Kind: canonical.EventToolCallStart, Index: 1, ID: callID("", "r1", 1), Name: "g"},
				{Kind: canonical.EventToolCallDelta, Index: 1, Text: `{}`},
				{Kind: canonical.EventStop, Stop: canonical.StopToolUse}},
			wantEnd: isEOF,
		},
		{
			name: "thoughts are a thinking block closed by its signature, their tokens are output and reasoning",
			body: chunks(`{"candidates":[{"content":{"role":"model","parts":[{"text":"**Planning**","thought":true}]},"index":0}],"usageMetadata":{"promptTokenCount":5,"totalTokenCount":105,"thoughtsTokenCount":100},"responseId":"r1"}`,
				`{"candidates":[{"content":{"role":"model","parts":[{"text":"","thoughtSignature":"c2ln"},{"text":"Hi"}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":1,"totalTokenCount":106,"thoughtsTokenCount":100},"responseId":"r1"}`),
			want: []canonical.Event{{Kind: canonical.EventStart, ID: "r1"},
				{Kind: canonical.EventThinkingDelta, Index: 0, Text: "**Planning**"},
				{Kind: canonical.EventUsage, Usage: canonical.Usage{InputTokens: 5, OutputTokens: 100, ReasoningTokens: 100}},
				{Kind: canonical.EventThinkingSignature, Index: 0, Text: "c2ln", Family: canonical.FamilyGemini},
				text("Hi"),
				{Kind: canonical.EventUsage, Usage: canonical.Usage{InputTokens: 5, OutputTokens: 101, ReasoningTokens: 100}},
				evEnd},
			wantEnd: isEOF,
		},
		{
			name:    "unchanged usage is not repeated; cached counts",
			body:    chunks(strings.Replace(chHel, `"promptTokenCount":5,`, `"promptTokenCount":5,"cachedContentTokenCount":4,`, 1), strings.Replace(chMid, `"promptTokenCount":5,`, `"promptTokenCount":5,"cachedContentTokenCount":4,`, 1), chStop),
			want:    []canonical.Event{evStart, text("Hel"), {Kind: canonical.EventUsage, Usage: canonical.Usage{InputTokens: 5, CachedInputTokens: 4}}, text("lo"), evFull, evEnd},
			wantEnd: isEOF,
		},
		{
			name: "function call args: compacted, or {} when not an object",
			body: chunks(`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{ "city" : "Paris", "units": ["c"] }}},{"functionCall":{"name":"odd","args":[1]}}]},"finishReason":"STOP","index":0}],"responseId":"r1"}`),
			want: []canonical.Event{{Kind: canonical.EventStart, ID: "r1"},
				{Kind: canonical.EventToolCallStart, Index: 0, ID: callID("", "r1", 0), Name: "get_weather"},
				{Kind: canonical.EventToolCallDelta, Index: 0, Text: `{"city":"Paris","units":["c"]}`},
				{Kind: canonical.EventToolCallStart, Index: 1, ID: callID("", "r1", 1), Name: "odd"},
				{Kind: canonical.EventToolCallDelta, Index: 1, Text: `{}`},
				{Kind: canonical.EventStop, Stop: canonical.StopToolUse}},
			wantEnd: isEOF,
		},
		{
			name: "a thought flag after the text; parts of other kinds skipped",
			body: chunks(`{"candidates":[{"content":{"role":"model","parts":[{"text":"hmm","thoughtSignature":"c2ln","thought":true},{"executableCode":{"code":"1"}},{"text":"ok"}]},"finishReason":"STOP","index":0}],"responseId":"r1"}`),
			want: []canonical.Event{{Kind: canonical.EventStart, ID: "r1"},
				{Kind: canonical.EventThinkingDelta, Index: 0, Text: "hmm"},
				{Kind: canonical.EventThinkingSignature, Index: 0, Text: "c2ln", Family: canonical.FamilyGemini},
				text("ok"), evEnd},
			wantEnd: isEOF,
		},
		{
			name:    "only the first candidate counts",
			body:    chunks(`{"candidates":[{"content":{"parts":[{"text":"a"}]},"finishReason":"STOP"},{"content":{"parts":[{"text":"b"}]},"finishReason":"MAX_TOKENS","index":1}],"responseId":"r1"}`),
			want:    []canonical.Event{{Kind: canonical.EventStart, ID: "r1"}, text("a"), evEnd},
			wantEnd: isEOF,
		},
		{
			name: "usage: cached inside the prompt, thoughts are output and reasoning, tool-use prompt is input",
			body: chunks(`{"candidates":[{"content":{"parts":[{"text":"ok"}],"role":"model"},"finishReason":"STOP","index":0}],` +
				`"usageMetadata":{"promptTokenCount":5000,"cachedContentTokenCount":4096,"candidatesTokenCount":12,"thoughtsTokenCount":1171,"toolUsePromptTokenCount":30,"totalTokenCount":6213,` +
				`"cacheTokensDetails":[{"modality":"TEXT","tokenCount":4096}]},"modelVersion":"gemini-2.5-pro","responseId":"r9"}`),
			want: []canonical.Event{{Kind: canonical.EventStart, ID: "r9", Name: "gemini-2.5-pro"}, text("ok"),
				{Kind: canonical.EventUsage, Usage: canonical.Usage{InputTokens: 5030, CachedInputTokens: 4096, OutputTokens: 1183, ReasoningTokens: 1171}},
				evEnd},
			wantEnd: isEOF,
		},
		{
			name: "prompt blocked: Gemini's message is the refusal",
			body: chunks(`{"candidates":[],"promptFeedback":{"blockReason":"PROHIBITED_CONTENT","blockReasonMessage":"The prompt was blocked.","safetyRatings":[]},"usageMetadata":{"promptTokenCount":20,"totalTokenCount":20},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`),
			want: []canonical.Event{evStart, {Kind: canonical.EventRefusalDelta, Text: "The prompt was blocked."},
				{Kind: canonical.EventUsage, Usage: canonical.Usage{InputTokens: 20}}, {Kind: canonical.EventStop, Stop: canonical.StopRefusal}},
			wantEnd: isEOF,
		},
		{
			name:    "prompt blocked: a refusal, and a complete answer",
			body:    chunks(`{"promptFeedback":{"blockReason":"SAFETY","safetyRatings":[{"category":"HARM_CATEGORY_DANGEROUS_CONTENT","probability":"HIGH"}]},"usageMetadata":{"promptTokenCount":9,"totalTokenCount":9},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`),
			want:    []canonical.Event{evStart, {Kind: canonical.EventRefusalDelta, Text: blockedText("SAFETY", "")}, {Kind: canonical.EventUsage, Usage: canonical.Usage{InputTokens: 9}}, {Kind: canonical.EventStop, Stop: canonical.StopRefusal}},
			wantEnd: isEOF,
		},
		{
			name: "safety after some text",
			body: chunks(chHel, `{"candidates":[{"finishReason":"SAFETY","index":0,"safetyRatings":[{"category":"HARM_CATEGORY_HARASSMENT","probability":"HIGH","blocked":true}]}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":1,"totalTokenCount":6},"responseId":"r1"}`),
			want: []canonical.Event{evStart, text("Hel"), evIn5, {Kind: canonical.EventUsage, Usage: canonical.Usage{InputTokens: 5, OutputTokens: 1}},
				{Kind: canonical.EventStop, Stop: canonical.StopContentFilter}},
			wantEnd: isEOF,
		},
		{"long chunk", chunks(`{"candidates":[{"content":{"parts":[{"text":"` + strings.Repeat("x", 70000) + `"}]},"finishReason":"STOP"}]}`),
			[]canonical.Event{{Kind: canonical.EventStart}, text(strings.Repeat("x", 70000)), evEnd}, isEOF},

		// The body ends without a finishReason: the only sign of a cut answer.
		{"truncated without a finishReason", chunks(chHel, chMid), []canonical.Event{evStart, text("Hel"), evIn5, text("lo")}, truncated},
		{"empty body", "", nil, truncated},
		{"only blank lines", "\n\n\n", nil, truncated},
		{"a lone carriage return", "\r", nil, truncated},
		{"cut inside the last chunk", chunks(chHel) + "data: " + chLo[:40], []canonical.Event{evStart, text("Hel"), evIn5}, truncated},
		{"cut inside an error block", chunks(chHel) + rpcBlock[:30], []canonical.Event{evStart, text("Hel"), evIn5}, truncated},

		// Errors inside the stream.
		{"error block after content", chunks(chHel) + rpcBlock, []canonical.Event{evStart, text("Hel"), evIn5}, func(err error) bool {
			fe := failure.As(err)
			return fe != nil && fe.Class == failure.Throttled && fe.Status == 429 && fe.ProviderType == "RESOURCE_EXHAUSTED" && fe.RetryAfter == 3950*time.Millisecond
		}},
		{"error block on one line, no code", chunks(chHel) + `{"error":{"message":"Internal error encountered.","status":"INTERNAL"}}` + "\n\n", []canonical.Event{evStart, text("Hel"), evIn5}, func(err error) bool {
			fe := failure.As(err)
			return fe != nil && fe.Class == failure.ProviderUnavailable && fe.Status == 500
		}},
		{"error in a data chunk", chunks(chHel, `{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`), []canonical.Event{evStart, text("Hel"), evIn5}, func(err error) bool {
			fe := failure.As(err)
			return fe != nil && fe.Class == failure.ProviderUnavailable && fe.Status == 503 && fe.ProviderType == "UNAVAILABLE"
		}},
		{"an error after the finish is still an error", chunks(chLo) + rpcBlock, []canonical.Event{evStart, text("lo!"), evFull, evEnd}, func(err error) bool {
			return classOf(err) == failure.Throttled
		}},
		{"malformed chunk", chunks(chHel, `{"candidates":[{"content":`, chLo), []canonical.Event{evStart, text("Hel"), evIn5}, malformed},
		{"chunk that is not an object", chunks(`[1,2]`), nil, malformed},
		{"block that is neither data nor an error", chunks(chHel) + "event: x\n\n", []canonical.Event{evStart, text("Hel"), evIn5}, malformed},
		{"too large", "data: " + strings.Repeat("x", maxBlock+10) + "\n\n", nil, malformed},
		{"unusable function call after text", chunks(chHel, `{"candidates":[{"content":{"parts":[{"text":""}],"role":"model"},"finishReason":"MALFORMED_FUNCTION_CALL","finishMessage":"Malformed function call: print(x)","index":0}],"responseId":"r1"}`),
			[]canonical.Event{evStart, text("Hel"), evIn5}, func(err error) bool {
				fe := failure.As(err)
				return fe != nil && fe.Class == failure.ProviderUnavailable && strings.Contains(fe.Detail, "MALFORMED_FUNCTION_CALL")
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := streamOf(t, sseReply(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			got, err := drain(t, st)
			if !tt.wantEnd(err) {
				t.Errorf("end = %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("events:\n got %+v\nwant %+v", got, tt.want)
			}
			// The end is sticky.
			if _, again := st.Next(); again != err {
				t.Errorf("second end = %v, first %v", again, err)
			}
		})
	}
}

func truncated(err error) bool {
	fe := failure.As(err)
	return fe != nil && fe.Class == failure.ProviderUnavailable && strings.Contains(fe.Detail, "terminal event")
}

func malformed(err error) bool {
	fe := failure.As(err)
	return fe != nil && fe.Class == failure.ProviderUnavailable && strings.Contains(fe.Detail, "malformed")
}

// errAfter yields data, then fails the read with err.
type errAfter struct {
	data string
	err  error
}

func (r *errAfter) Read(p []byte) (int, error) {
	if r.data == "" {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func (r *errAfter) Close() error { return nil }

func TestStreamReadErrors(t *testing.T) {
	reset := errors.New("connection reset by peer")
	// Before a finishReason a broken read is a transport failure, with the
	// cause kept.
	st := newStream(&errAfter{chunks(chHel), reset})
	evs, err := drain(t, st)
	if fe := failure.As(err); len(evs) != 3 || fe == nil || fe.Class != failure.ProviderUnavailable || fe.NoResponse || !errors.Is(err, reset) {
		t.Errorf("before the finish: %d events, %v", len(evs), err)
	}
	// After one, the answer is complete whatever breaks.
	for _, cause := range []error{reset, io.ErrUnexpectedEOF, context.Canceled} {
		st = newStream(&errAfter{chunks(chLo), cause})
		if evs, err := drain(t, st); !isEOF(err) || len(evs) != 4 {
			t.Errorf("after the finish (%v): %d events, %v", cause, len(evs), err)
		}
	}
	// A cut chunked body (the mock's die_after) is a truncation.
	st = newStream(&errAfter{chunks(chHel), io.ErrUnexpectedEOF})
	if _, err := drain(t, st); !truncated(err) {
		t.Errorf("unexpected EOF: %v", err)
	}
}

// readSignal is a body that closes reading when a Read starts once armed.
type readSignal struct {
	io.ReadCloser
	armed   atomic.Bool
	once    sync.Once
	reading chan struct{}
}

func (r *readSignal) Read(p []byte) (int, error) {
	if r.armed.Load() {
		r.once.Do(func() { close(r.reading) })
	}
	return r.ReadCloser.Read(p)
}

func TestStreamClose(t *testing.T) {
	pr, pw := io.Pipe()
	body := &readSignal{ReadCloser: pr, reading: make(chan struct{})}
	st := newStream(body)
	go func() { _, _ = io.WriteString(pw, chunks(chHel)) }()
	if ev, err := st.Next(); err != nil || ev.Kind != canonical.EventStart {
		t.Fatalf("first event %+v %v", ev, err)
	}
	st.Next()
	st.Next() // usage; the next Next blocks on the pipe
	done := make(chan error, 1)
	body.armed.Store(true)
	go func() {
		_, err := st.Next()
		done <- err
	}()
	// Close once Next is reading the body, past its closed check: the pipe
	// then fails that read with io.ErrClosedPipe, whether the read had
	// blocked yet or not. (A Close before Next would fail it at the closed
	// check instead, without testing the unblocking.)
	<-body.reading
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if classOf(err) != failure.ProviderUnavailable || !errors.Is(err, io.ErrClosedPipe) {
			t.Errorf("Next after Close = %v, want a transport failure wrapping the closed body", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not unblock Next")
	}
	if err := st.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if _, err := st.Next(); !errors.Is(err, provider.ErrStreamClosed) && classOf(err) != failure.ProviderUnavailable {
		t.Errorf("Next after Close = %v", err)
	}
}

// A stream request whose answer is JSON, not events, is an error answer.
func TestStreamJSONInsteadOfEvents(t *testing.T) {
	_, err := streamOf(t, reply{body: `{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"7s"}]}}`})
	if fe := failure.As(err); fe == nil || fe.Class != failure.Throttled || fe.RetryAfter != 7*time.Second {
		t.Errorf("error JSON: %v", err)
	}
	_, err = streamOf(t, reply{body: `[{"candidates":[]}]`})
	if !malformed(err) {
		t.Errorf("JSON array stream (alt=sse dropped): %v", err)
	}
}

func TestCancellation(t *testing.T) {
	// A server that sends headers and one chunk, then holds the stream.
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, chunks(chHel))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	tgt := &provider.Target{BaseURL: srv.URL, Model: "gemini-2.5-flash", APIKey: testKey, HTTP: srv.Client()}

	ctx, cancel := context.WithCancel(context.Background())
	st, err := New().Stream(ctx, tgt, hello())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for range 3 { // start, text, usage
		if _, err := st.Next(); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	_, err = st.Next()
	if fe := failure.As(err); fe == nil || !errors.Is(err, context.Canceled) {
		t.Errorf("after cancel: %v, want a failure wrapping context.Canceled", err)
	}

	// Cancelled before the answer: no byte arrived.
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	_, err = New().Stream(ctx, tgt, hello())
	if fe := failure.As(err); fe == nil || !fe.NoResponse || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled before sending: %v", err)
	}
}

// The recorded streams in testdata decode to complete answers (and are
// fuzz seeds).
func TestStreamTestdata(t *testing.T) {
	files, _ := filepath.Glob("testdata/stream_*.sse")
	if len(files) == 0 {
		t.Fatal("no stream recordings")
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := drain(t, newStream(io.NopCloser(strings.NewReader(string(b)))))
		if !isEOF(err) || len(evs) < 3 || evs[0].Kind != canonical.EventStart {
			t.Errorf("%s: %d events, %v", name, len(evs), err)
		}
	}
}
