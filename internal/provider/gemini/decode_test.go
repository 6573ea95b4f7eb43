package gemini

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
)

// gen renders a GenerateContentResponse with one candidate.
func gen(parts, finish, extra string) string {
	cand := `{"content":{"parts":[` + parts + `],"role":"model"}`
	if finish != "" {
		cand += `,"finishReason":"` + finish + `"`
	}
	cand += `,"index":0}`
	return `{"candidates":[` + cand + `],"usageMetadata":{"promptTokenCount":20,"candidatesTokenCount":8,"totalTokenCount":28,"promptTokensDetails":[{"modality":"TEXT","tokenCount":20}]}` +
		extra + `,"modelVersion":"gemini-2.5-flash","responseId":"r-abc123"}`
}

func TestCompleteDecode(t *testing.T) {
	base := canonical.Response{ID: "r-abc123", Model: "gemini-2.5-flash", Usage: canonical.Usage{InputTokens: 20, OutputTokens: 8}}
	with := func(f func(r *canonical.Response)) *canonical.Response {
		r := base
		f(&r)
		return &r
	}
	text := `{"text":"Hello, "},{"text":"world."}`
	tests := []struct {
		name      string
		body      string
		want      *canonical.Response
		wantClass failure.Class
		detailHas string
	}{
		// Unhappy paths first.
		{name: "not json", body: `<html>`, wantClass: failure.ProviderUnavailable},
		{name: "truncated json", body: gen(text, "STOP", "")[:60], wantClass: failure.ProviderUnavailable},
		{name: "wrong shape", body: `{"candidates":{"content":{}}}`, wantClass: failure.ProviderUnavailable},
		{name: "neither candidates nor a block", body: `{"usageMetadata":{"promptTokenCount":3},"responseId":"r"}`, wantClass: failure.ProviderUnavailable, detailHas: "neither candidates"},
		{name: "error body with 200", body: `{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`, wantClass: failure.ProviderUnavailable},
		{name: "error body with 200, rate limit", body: `{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED"}}`, wantClass: failure.Throttled},
		{name: "malformed function call", body: gen(``, "MALFORMED_FUNCTION_CALL", ""), wantClass: failure.ProviderUnavailable, detailHas: "MALFORMED_FUNCTION_CALL"},
		{name: "unexpected tool call", body: gen(``, "UNEXPECTED_TOOL_CALL", ""), wantClass: failure.ProviderUnavailable, detailHas: "UNEXPECTED_TOOL_CALL"},
		{name: "too many tool calls", body: gen(`{"text":"a"}`, "TOO_MANY_TOOL_CALLS", ""), wantClass: failure.ProviderUnavailable, detailHas: "TOO_MANY_TOOL_CALLS"},
		{
			name: "text parts joined, thoughts and signatures skipped",
			body: gen(`{"text":"Let me think","thought":true},{"text":"","thoughtSignature":"c2ln"},`+text+`,{"executableCode":{"code":"1"}}`, "STOP", ""),
			want: with(func(r *canonical.Response) { r.Text, r.Stop = "Hello, world.", canonical.StopEnd }),
		},
		{
			name: "thought flag after the text",
			body: gen(`{"text":"hmm","thoughtSignature":"c2ln","thought":true},{"text":"ok"}`, "STOP", ""),
			want: with(func(r *canonical.Response) { r.Text, r.Stop = "ok", canonical.StopEnd }),
		},
		{
			name: "function calls: STOP becomes tool use, args compact, ids generated unless sent",
			body: gen(`{"text":"Checking."},{"functionCall":{"name":"get_weather","args":{ "city" : "Paris", "units": ["c"] }}},{"functionCall":{"id":"fc-7","name":"get_time"}},{"functionCall":{"name":"odd","args":[1]}}`, "STOP", ""),
			want: with(func(r *canonical.Response) {
				r.Text, r.Stop = "Checking.", canonical.StopToolUse
				r.ToolCalls = []canonical.ToolCall{
					{ID: callID("", "r-abc123", 0), Name: "get_weather", Arguments: `{"city":"Paris","units":["c"]}`},
					{ID: "fc-7", Name: "get_time", Arguments: `{}`},
					{ID: callID("", "r-abc123", 2), Name: "odd", Arguments: `{}`},
				}
			}),
		},
		{name: "max tokens", body: gen(`{"text":"cut"}`, "MAX_TOKENS", ""),
			want: with(func(r *canonical.Response) { r.Text, r.Stop = "cut", canonical.StopMaxTokens })},
		{name: "continuation reads as max tokens", body: gen(`{"text":"cut"}`, "CONTINUATION", ""),
			want: with(func(r *canonical.Response) { r.Text, r.Stop = "cut", canonical.StopMaxTokens })},
		{name: "safety with content withheld", body: `{"candidates":[{"finishReason":"SAFETY","index":0,"safetyRatings":[{"category":"HARM_CATEGORY_DANGEROUS_CONTENT","probability":"HIGH","blocked":true}]}],"usageMetadata":{"promptTokenCount":20,"candidatesTokenCount":8,"totalTokenCount":28},"modelVersion":"gemini-2.5-flash","responseId":"r-abc123"}`,
			want: with(func(r *canonical.Response) { r.Stop = canonical.StopContentFilter })},
		{name: "recitation after some text", body: gen(`{"text":"Once upon"}`, "RECITATION", ""),
			want: with(func(r *canonical.Response) { r.Text, r.Stop = "Once upon", canonical.StopContentFilter })},
		{name: "a STOP without calls stays an end even with tools declared", body: gen(`{"text":"No tool needed."}`, "STOP", ""),
			want: with(func(r *canonical.Response) { r.Text, r.Stop = "No tool needed.", canonical.StopEnd })},
		{name: "missing finishReason in a whole body", body: gen(`{"text":"ok"}`, "", ""),
			want: with(func(r *canonical.Response) { r.Text, r.Stop = "ok", canonical.StopEnd })},
		{
			name: "prompt blocked: a refusal with Gemini's message",
			body: `{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT","blockReasonMessage":"The prompt was blocked.","safetyRatings":[]},"usageMetadata":{"promptTokenCount":20,"totalTokenCount":20},"modelVersion":"gemini-2.5-flash","responseId":"r-abc123"}`,
			want: with(func(r *canonical.Response) {
				r.Stop, r.Refusal, r.Usage = canonical.StopRefusal, "The prompt was blocked.", canonical.Usage{InputTokens: 20}
			}),
		},
		{
			name: "prompt blocked without a message, empty candidates",
			body: `{"candidates":[],"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":20,"totalTokenCount":20},"modelVersion":"gemini-2.5-flash","responseId":"r-abc123"}`,
			want: with(func(r *canonical.Response) {
				r.Stop, r.Refusal, r.Usage = canonical.StopRefusal, blockedText("SAFETY", ""), canonical.Usage{InputTokens: 20}
			}),
		},
		{
			name: "usage: cached inside the prompt, thoughts are output and reasoning, tool-use prompt is input",
			body: `{"candidates":[{"content":{"parts":[{"text":"ok"}],"role":"model"},"finishReason":"STOP","index":0}],
			 "usageMetadata":{"promptTokenCount":5000,"cachedContentTokenCount":4096,"candidatesTokenCount":12,"thoughtsTokenCount":1171,"toolUsePromptTokenCount":30,"totalTokenCount":6213,
			  "cacheTokensDetails":[{"modality":"TEXT","tokenCount":4096}]},"modelVersion":"gemini-2.5-pro","responseId":"r9"}`,
			want: &canonical.Response{ID: "r9", Model: "gemini-2.5-pro", Text: "ok", Stop: canonical.StopEnd,
				Usage: canonical.Usage{InputTokens: 5030, CachedInputTokens: 4096, OutputTokens: 1183, ReasoningTokens: 1171}},
		},
		{name: "only the first candidate counts", body: `{"candidates":[{"content":{"parts":[{"text":"a"}]},"finishReason":"STOP"},{"content":{"parts":[{"text":"b"}]},"finishReason":"MAX_TOKENS","index":1}],"responseId":"r"}`,
			want: &canonical.Response{ID: "r", Text: "a", Stop: canonical.StopEnd}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tgt, _ := upstream(t, reply{body: tt.body})
			got, err := New().Complete(context.Background(), tgt, hello())
			if tt.wantClass != "" {
				fe := failure.As(err)
				if fe == nil || fe.Class != tt.wantClass {
					t.Fatalf("err = %v, want class %q", err, tt.wantClass)
				}
				if !strings.Contains(fe.Error(), tt.detailHas) {
					t.Errorf("error %q does not say %q", fe.Error(), tt.detailHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// Every finishReason go-genai knows maps to a stop reason or a failure.
func TestFinishReasons(t *testing.T) {
	tests := []struct {
		reason string
		want   canonical.StopReason // "" = a failure of the attempt
	}{
		{"STOP", canonical.StopEnd},
		{"FINISH_REASON_UNSPECIFIED", canonical.StopEnd},
		{"NO_IMAGE", canonical.StopEnd},
		{"SOMETHING_NEW", canonical.StopEnd},
		{"MAX_TOKENS", canonical.StopMaxTokens},
		{"CONTINUATION", canonical.StopMaxTokens},
		{"SAFETY", canonical.StopContentFilter},
		{"RECITATION", canonical.StopContentFilter},
		{"LANGUAGE", canonical.StopContentFilter},
		{"OTHER", canonical.StopContentFilter},
		{"BLOCKLIST", canonical.StopContentFilter},
		{"PROHIBITED_CONTENT", canonical.StopContentFilter},
		{"SPII", canonical.StopContentFilter},
		{"IMAGE_SAFETY", canonical.StopContentFilter},
		{"IMAGE_PROHIBITED_CONTENT", canonical.StopContentFilter},
		{"IMAGE_RECITATION", canonical.StopContentFilter},
		{"IMAGE_OTHER", canonical.StopContentFilter},
		{"MALFORMED_FUNCTION_CALL", ""},
		{"UNEXPECTED_TOOL_CALL", ""},
		{"TOO_MANY_TOOL_CALLS", ""},
	}
	for _, tt := range tests {
		got, err := decodeResponse([]byte(gen(`{"text":"x"}`, tt.reason, "")))
		if tt.want == "" {
			if classOf(err) != failure.ProviderUnavailable {
				t.Errorf("%s: %v, want provider_unavailable", tt.reason, err)
			}
			continue
		}
		if err != nil || got.Stop != tt.want {
			t.Errorf("%s: %v %v, want %s", tt.reason, got, err, tt.want)
		}
		// The stream maps it the same way.
		st := newStream(nopCloser(chunks(gen(`{"text":"x"}`, tt.reason, ""))))
		evs, err := drain(t, st)
		if !isEOF(err) || evs[len(evs)-1].Kind != canonical.EventStop || evs[len(evs)-1].Stop != tt.want {
			t.Errorf("%s streamed: %+v %v", tt.reason, evs, err)
		}
	}
}

func TestCallIDs(t *testing.T) {
	a, b := callID("", "resp-1", 0), callID("", "resp-1", 1)
	if a == b || a != callID("", "resp-1", 0) || a == callID("", "resp-2", 0) {
		t.Errorf("ids %q %q: want stable per response, distinct per call and per response", a, b)
	}
	if strings.Contains(a, "resp-1") || !strings.HasPrefix(a, "call_") {
		t.Errorf("id %q shows the response id or lacks the call_ prefix", a)
	}
	if got := callID("", "", 3); got != "call_3" {
		t.Errorf("without a response id: %q", got)
	}
	if got := callID("g-1", "resp-1", 0); got != "g-1" {
		t.Errorf("Gemini's own id replaced: %q", got)
	}
}
