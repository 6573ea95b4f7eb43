package anthropic

import (
	"context"
	"reflect"
	"testing"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
)

func msg(content, stop, extra string) string {
	return `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[` + content + `],
	 "stop_reason":` + stop + `,"stop_sequence":null` + extra + `,
	 "usage":{"input_tokens":402,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},"output_tokens":89,"service_tier":"standard"}}`
}

func TestCompleteDecode(t *testing.T) {
	base := canonical.Response{ID: "msg_01", Model: "claude-sonnet-4-5-20250929", Usage: canonical.Usage{InputTokens: 402, OutputTokens: 89}}
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
	}{
		// Unhappy paths first.
		{name: "not json", body: `<html>`, wantClass: failure.ProviderUnavailable},
		{name: "truncated json", body: `{"id":"msg_01","content":[{"type":"text","text":"Hi"}`, wantClass: failure.ProviderUnavailable},
		{name: "wrong shape", body: `{"content":{"type":"text"}}`, wantClass: failure.ProviderUnavailable},
		{name: "error body with 200", body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, wantClass: failure.ProviderUnavailable},
		{
			name: "text blocks joined, thinking ignored",
			body: msg(`{"type":"thinking","thinking":"hmm","signature":"sig"},{"type":"text","text":"Hello, ","citations":null},{"type":"text","text":"world."}`, `"end_turn"`, ""),
			want: with(func(r *canonical.Response) { r.Text, r.Stop = "Hello, world.", canonical.StopEnd }),
		},
		{
			name: "tool use, input re-marshalled compact",
			body: msg(`{"type":"text","text":"Checking."},{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{ "city" : "San Francisco", "units": ["c"] }},{"type":"tool_use","id":"toolu_02","name":"get_time","input":{}}`, `"tool_use"`, ""),
			want: with(func(r *canonical.Response) {
				r.Text, r.Stop = "Checking.", canonical.StopToolUse
				r.ToolCalls = []canonical.ToolCall{
					{ID: "toolu_01", Name: "get_weather", Arguments: `{"city":"San Francisco","units":["c"]}`},
					{ID: "toolu_02", Name: "get_time", Arguments: `{}`},
				}
			}),
		},
		{
			name: "stop sequence",
			body: `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"a b"}],"stop_reason":"stop_sequence","stop_sequence":"END","usage":{"input_tokens":402,"output_tokens":89}}`,
			want: with(func(r *canonical.Response) { r.Text, r.Stop, r.StopSequence = "a b", canonical.StopSequence, "END" }),
		},
		{name: "max tokens", body: msg(`{"type":"text","text":"cut"}`, `"max_tokens"`, ""),
			want: with(func(r *canonical.Response) { r.Text, r.Stop = "cut", canonical.StopMaxTokens })},
		{name: "pause turn", body: msg(``, `"pause_turn"`, ""),
			want: with(func(r *canonical.Response) { r.Stop = canonical.StopPause })},
		{name: "context window", body: msg(`{"type":"text","text":"long"}`, `"model_context_window_exceeded"`, ""),
			want: with(func(r *canonical.Response) { r.Text, r.Stop = "long", canonical.StopContextWindow })},
		{name: "unknown stop reason reads as end", body: msg(``, `"something_new"`, ""),
			want: with(func(r *canonical.Response) { r.Stop = canonical.StopEnd })},
		{
			name: "refusal explanation becomes the refusal when there is no text",
			body: msg(``, `"refusal"`, `,"stop_details":{"type":"refusal","category":"cyber","explanation":"This request asks for malware."}`),
			want: with(func(r *canonical.Response) {
				r.Refusal, r.Stop = "This request asks for malware.", canonical.StopRefusal
			}),
		},
		{
			name: "refusal after text keeps the text only",
			body: msg(`{"type":"text","text":"Here is"}`, `"refusal"`, `,"stop_details":{"type":"refusal","category":null,"explanation":"Stopped."}`),
			want: with(func(r *canonical.Response) { r.Text, r.Stop = "Here is", canonical.StopRefusal }),
		},
		{
			name: "cached input counts add to input tokens",
			body: `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,
			 "usage":{"input_tokens":12,"cache_creation_input_tokens":300,"cache_read_input_tokens":5000,"output_tokens":7}}`,
			want: with(func(r *canonical.Response) {
				r.Text, r.Stop = "ok", canonical.StopEnd
				r.Usage = canonical.Usage{InputTokens: 5312, CachedInputTokens: 5000, CacheWriteTokens: 300, OutputTokens: 7}
			}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tgt, _ := upstream(t, reply{body: tt.body})
			got, err := New().Complete(context.Background(), tgt, &canonical.Request{Messages: []canonical.Message{user("x")}})
			if tt.wantClass != "" {
				if c := classOf(err); c != tt.wantClass {
					t.Fatalf("class = %q (err %v), want %q", c, err, tt.wantClass)
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
