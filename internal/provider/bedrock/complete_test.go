package bedrock

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
)

func converse(content, stop, usage string) string {
	return `{"metrics":{"latencyMs":812},"output":{"message":{"content":[` + content + `],"role":"assistant"}},"stopReason":` + stop + `,"usage":` + usage + `}`
}

const plainUsage = `{"inputTokens":30,"outputTokens":20,"totalTokens":50}`

func TestCompleteDecode(t *testing.T) {
	base := canonical.Response{ID: "4b7b5a4c-0e5d-4a0b-9a51-5b6c7d8e9f00", Model: profileARN, Usage: canonical.Usage{InputTokens: 30, OutputTokens: 20}}
	with := func(f func(r *canonical.Response)) *canonical.Response {
		r := base
		f(&r)
		return &r
	}
	tests := []struct {
		name      string
		body      string
		want      *canonical.Response
		wantClass failure.Class
		detail    string
	}{
		// Unhappy paths first.
		{name: "not json", body: `<html>`, wantClass: failure.ProviderUnavailable},
		{name: "truncated json", body: `{"output":{"message":{"content":[{"text":"Hi"}`, wantClass: failure.ProviderUnavailable},
		{name: "wrong shape", body: `{"output":{"message":{"content":{"text":"Hi"}}},"stopReason":"end_turn"}`, wantClass: failure.ProviderUnavailable},
		{name: "no stopReason", body: `{"message":"Internal error"}`, wantClass: failure.ProviderUnavailable, detail: "without stopReason"},
		{name: "malformed model output", body: converse(`{"text":"Hal"}`, `"malformed_model_output"`, plainUsage), wantClass: failure.ProviderUnavailable, detail: "malformed_model_output"},
		{name: "malformed tool use", body: converse(``, `"malformed_tool_use"`, plainUsage), wantClass: failure.ProviderUnavailable, detail: "malformed_tool_use"},
		{
			name: "text blocks joined, reasoning ignored",
			body: converse(`{"reasoningContent":{"reasoningText":{"text":"hmm","signature":"sig"}}},{"text":"Hello, "},{"text":"\"world\".\u00e9"}`, `"end_turn"`, plainUsage),
			want: with(func(r *canonical.Response) { r.Text, r.Stop = "Hello, \"world\".\u00e9", canonical.StopEnd }),
		},
		{
			name: "tool use, input re-marshalled compact",
			body: converse(`{"text":"Checking."},{"toolUse":{"toolUseId":"tooluse_kZJMlvQmRJ6eAyJE5GIl7Q","name":"get_weather","input":{ "city" : "San Francisco", "units": ["c"] }}},{"toolUse":{"toolUseId":"tooluse_2","name":"get_time","input":{}}},{"toolUse":{"toolUseId":"tooluse_3","name":"ping"}}`, `"tool_use"`, plainUsage),
			want: with(func(r *canonical.Response) {
				r.Text, r.Stop = "Checking.", canonical.StopToolUse
				r.ToolCalls = []canonical.ToolCall{
					{ID: "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", Name: "get_weather", Arguments: `{"city":"San Francisco","units":["c"]}`},
					{ID: "tooluse_2", Name: "get_time", Arguments: `{}`},
					{ID: "tooluse_3", Name: "ping", Arguments: `{}`},
				}
			}),
		},
		{name: "max tokens", body: converse(`{"text":"cut"}`, `"max_tokens"`, plainUsage),
			want: with(func(r *canonical.Response) { r.Text, r.Stop = "cut", canonical.StopMaxTokens })},
		{name: "stop sequence (Converse does not say which)", body: converse(`{"text":"a b"}`, `"stop_sequence"`, plainUsage),
			want: with(func(r *canonical.Response) { r.Text, r.Stop = "a b", canonical.StopSequence })},
		{name: "guardrail intervened, no content", body: converse(``, `"guardrail_intervened"`, plainUsage),
			want: with(func(r *canonical.Response) { r.Stop = canonical.StopContentFilter })},
		{name: "guardrail's blocked message stays text", body: converse(`{"text":"Sorry, the model cannot answer this question."}`, `"guardrail_intervened"`, plainUsage),
			want: with(func(r *canonical.Response) {
				r.Text, r.Stop = "Sorry, the model cannot answer this question.", canonical.StopContentFilter
			})},
		{name: "content filtered", body: converse(`{"text":"par"}`, `"content_filtered"`, plainUsage),
			want: with(func(r *canonical.Response) { r.Text, r.Stop = "par", canonical.StopContentFilter })},
		{name: "context window", body: converse(`{"text":"long"}`, `"model_context_window_exceeded"`, plainUsage),
			want: with(func(r *canonical.Response) { r.Text, r.Stop = "long", canonical.StopContextWindow })},
		{name: "unknown stop reason reads as end", body: converse(``, `"something_new"`, plainUsage),
			want: with(func(r *canonical.Response) { r.Stop = canonical.StopEnd })},
		{
			name: "cache reads and writes add to input tokens",
			body: converse(`{"text":"ok"}`, `"end_turn"`, `{"inputTokens":12,"outputTokens":7,"totalTokens":5319,"cacheReadInputTokens":5000,"cacheWriteInputTokens":300}`),
			want: with(func(r *canonical.Response) {
				r.Text, r.Stop = "ok", canonical.StopEnd
				r.Usage = canonical.Usage{InputTokens: 5312, CachedInputTokens: 5000, CacheWriteTokens: 300, OutputTokens: 7}
			}),
		},
		{
			name: "a total that leaves the cache out means inputTokens already counts it",
			body: converse(`{"text":"ok"}`, `"end_turn"`, `{"inputTokens":5312,"outputTokens":7,"totalTokens":5319,"cacheReadInputTokens":5000,"cacheWriteInputTokens":300}`),
			want: with(func(r *canonical.Response) {
				r.Text, r.Stop = "ok", canonical.StopEnd
				r.Usage = canonical.Usage{InputTokens: 5312, CachedInputTokens: 5000, CacheWriteTokens: 300, OutputTokens: 7}
			}),
		},
		{
			name: "extra members (trace, serviceTier, additional fields) skipped",
			body: `{"additionalModelResponseFields":{"stop_sequence":"END"},"trace":{"guardrail":{}},"serviceTier":{"type":"default"},` + converse(`{"text":"x"}`, `"end_turn"`, plainUsage)[1:],
			want: with(func(r *canonical.Response) { r.Text, r.Stop = "x", canonical.StopEnd }),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tgt, _ := upstream(t, reply{body: []byte(tt.body)})
			got, err := newAdapter().Complete(context.Background(), tgt, hello())
			if tt.wantClass != "" {
				fe := failure.As(err)
				if fe == nil || fe.Class != tt.wantClass || !strings.Contains(fe.Detail, tt.detail) {
					t.Fatalf("err = %v, want %q about %q", err, tt.wantClass, tt.detail)
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
