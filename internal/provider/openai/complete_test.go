package openai

import (
	"context"
	"reflect"
	"testing"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
)

func TestCompleteDecode(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		want      *canonical.Response
		wantClass failure.Class
	}{
		// Unhappy paths first.
		{name: "not json", body: `<html>oops</html>`, wantClass: failure.ProviderUnavailable},
		{name: "no choices", body: `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o","choices":[]}`, wantClass: failure.ProviderUnavailable},
		{name: "error object in a 200 body", body: `{"error":{"message":"Rate limit exceeded","code":429}}`, wantClass: failure.Throttled},
		{name: "error string in a 200 body", body: `{"error":"upstream exploded"}`, wantClass: failure.ProviderUnavailable},
		// vLLM ends an aborted generation with "abort", OpenRouter a failed
		// one with "error": partial text, not an answer.
		{name: "finish_reason error", body: `{"id":"chatcmpl-1","model":"gpt-4o","choices":[{"index":0,"finish_reason":"error","message":{"role":"assistant","content":"Hel"}}]}`, wantClass: failure.ProviderUnavailable},
		{name: "finish_reason abort", body: `{"id":"chatcmpl-1","model":"gpt-4o","choices":[{"index":0,"finish_reason":"abort","message":{"role":"assistant","content":"Hel"}}]}`, wantClass: failure.ProviderUnavailable},
		{
			name: "text",
			body: `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-4o-2024-08-06",
			 "choices":[{"index":0,"finish_reason":"stop","logprobs":null,"message":{"role":"assistant","content":"Hello there.","refusal":null}}],
			 "usage":{"prompt_tokens":40,"completion_tokens":3,"total_tokens":43}}`,
			want: &canonical.Response{ID: "chatcmpl-1", Model: "gpt-4o-2024-08-06", Text: "Hello there.", Stop: canonical.StopEnd,
				Usage: canonical.Usage{InputTokens: 40, OutputTokens: 3}},
		},
		{
			name: "tool calls",
			body: `{"id":"chatcmpl-2","object":"chat.completion","created":1700000000,"model":"gpt-4o",
			 "choices":[{"index":0,"finish_reason":"tool_calls","logprobs":null,
			   "message":{"role":"assistant","content":null,"refusal":null,
			     "tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
			                   {"id":"call_2","type":"function","function":{"name":"get_time","arguments":""}}]}}],
			 "usage":{"prompt_tokens":40,"completion_tokens":12,"total_tokens":52,
			   "prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},
			   "completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`,
			want: &canonical.Response{ID: "chatcmpl-2", Model: "gpt-4o", Stop: canonical.StopToolUse,
				ToolCalls: []canonical.ToolCall{
					{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`},
					{ID: "call_2", Name: "get_time", Arguments: `{}`},
				},
				Usage: canonical.Usage{InputTokens: 40, OutputTokens: 12}},
		},
		{
			name: "refusal",
			body: `{"id":"chatcmpl-3","object":"chat.completion","created":1,"model":"gpt-4o",
			 "choices":[{"index":0,"finish_reason":"stop","logprobs":null,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."}}],
			 "usage":{"prompt_tokens":10,"completion_tokens":7,"total_tokens":17}}`,
			want: &canonical.Response{ID: "chatcmpl-3", Model: "gpt-4o", Refusal: "I can't help with that.", Stop: canonical.StopRefusal,
				Usage: canonical.Usage{InputTokens: 10, OutputTokens: 7}},
		},
		{
			name: "cached, cache-write and reasoning tokens",
			body: `{"id":"chatcmpl-4","object":"chat.completion","created":1,"model":"o3",
			 "choices":[{"index":0,"finish_reason":"length","logprobs":null,"message":{"role":"assistant","content":"Partial","refusal":null}}],
			 "usage":{"prompt_tokens":2000,"completion_tokens":500,"total_tokens":2500,
			   "prompt_tokens_details":{"cached_tokens":1536,"cache_write_tokens":200},
			   "completion_tokens_details":{"reasoning_tokens":448}}}`,
			want: &canonical.Response{ID: "chatcmpl-4", Model: "o3", Text: "Partial", Stop: canonical.StopMaxTokens,
				Usage: canonical.Usage{InputTokens: 2000, CachedInputTokens: 1536, CacheWriteTokens: 200, OutputTokens: 500, ReasoningTokens: 448}},
		},
		{
			name: "content filter",
			body: `{"id":"c","model":"m","choices":[{"index":0,"finish_reason":"content_filter","message":{"content":"","refusal":null}}]}`,
			want: &canonical.Response{ID: "c", Model: "m", Stop: canonical.StopContentFilter},
		},
		{
			name: "deprecated function_call",
			body: `{"id":"c","model":"m","choices":[{"index":0,"finish_reason":"function_call","message":{"content":null}}]}`,
			want: &canonical.Response{ID: "c", Model: "m", Stop: canonical.StopToolUse},
		},
		{
			name: "only choice 0 is read",
			body: `{"id":"c","model":"m","choices":[{"index":1,"finish_reason":"stop","message":{"content":"other"}},{"index":0,"finish_reason":"stop","message":{"content":"mine"}}]}`,
			want: &canonical.Response{ID: "c", Model: "m", Text: "mine", Stop: canonical.StopEnd},
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
