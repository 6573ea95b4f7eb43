package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/provider"
)

var update = flag.Bool("update", false, "rewrite golden files")

func ptr[T any](v T) *T { return &v }

func user(text string) canonical.Message {
	return canonical.Message{Role: canonical.RoleUser, Content: []canonical.Part{canonical.TextPart(text)}}
}

func target() *provider.Target {
	return &provider.Target{Model: "claude-sonnet-4-5-20250929", MaxOutputTokens: 64000}
}

// fullRequest uses every canonical feature Messages can express.
func fullRequest() *canonical.Request {
	return &canonical.Request{
		Model:  "public-name-never-sent",
		System: "Be brief.",
		Messages: []canonical.Message{
			{Role: canonical.RoleUser, Content: []canonical.Part{
				canonical.TextPart("Compare these <two> & tell me the weather."),
				{Type: canonical.PartImage, ImageURL: "https://example.com/a.png"},
				{Type: canonical.PartImage, MediaType: "image/png", Data: "iVBORw0KGgo="},
				{Type: canonical.PartImage, ImageURL: "data:image/jpeg;base64,/9j/4AAQ"},
			}},
			user("Also: be quick."), // merges into the turn above
			{Role: canonical.RoleAssistant,
				Content: []canonical.Part{canonical.TextPart("Checking both."), canonical.TextPart("")},
				ToolCalls: []canonical.ToolCall{
					{ID: "toolu_1", Name: "get_weather", Arguments: "{\n  \"city\": \"Paris\"\n}"},
					{ID: "toolu_2", Name: "get_time", Arguments: ""},
				}},
			{Role: canonical.RoleTool, ToolCallID: "toolu_1", ToolName: "get_weather", Content: []canonical.Part{canonical.TextPart("18C")}},
			{Role: canonical.RoleTool, ToolCallID: "toolu_2", IsError: true, Content: []canonical.Part{canonical.TextPart("clock "), canonical.TextPart("broken")}},
			{Role: canonical.RoleTool, ToolCallID: "toolu_3", Content: []canonical.Part{canonical.TextPart("chart:"), {Type: canonical.PartImage, MediaType: "image/gif", Data: "R0lGOD"}}},
			{Role: canonical.RoleTool, ToolCallID: "toolu_4"},
			user("Thanks. Summarise."),                                                              // joins the tool-result turn, after the results
			{Role: canonical.RoleAssistant, Content: []canonical.Part{canonical.TextPart("Sure:")}}, // prefill
		},
		Tools: []canonical.Tool{
			{Name: "get_weather", Description: "Get weather", Strict: true,
				Parameters: json.RawMessage(`{ "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"] }`)},
			{Name: "get_time"},
		},
		ToolChoice:        &canonical.ToolChoice{Mode: canonical.ToolChoiceTool, Name: "get_weather"},
		ParallelToolCalls: ptr(false),
		MaxTokens:         256,
		Temperature:       ptr(0.0),
		TopP:              ptr(0.9),
		Stop:              []string{"END", "STOP"},
		ResponseFormat:    &canonical.ResponseFormat{Type: canonical.FormatText},
	}
}

func TestEncodeGolden(t *testing.T) {
	tests := []struct {
		name string
		req  *canonical.Request
		tgt  *provider.Target
	}{
		{"minimal_default_max_tokens", &canonical.Request{Messages: []canonical.Message{user("Hello")}},
			&provider.Target{Model: "claude-haiku-4-5"}},
		{"minimal_deployment_max_tokens", &canonical.Request{Messages: []canonical.Message{user("Hello")}, Stream: true}, target()},
		{"full", fullRequest(), target()},
		{"tool_choice_without_tools", &canonical.Request{Messages: []canonical.Message{user("x")},
			ToolChoice: &canonical.ToolChoice{Mode: canonical.ToolChoiceRequired}, ParallelToolCalls: ptr(false)}, target()},
		// Thinking within a budget, shown; the reasoning in history goes
		// back unchanged, before the text.
		{"thinking_budget_and_history", &canonical.Request{MaxTokens: 4096, Messages: []canonical.Message{user("x"),
			{Role: canonical.RoleAssistant, Content: []canonical.Part{{Type: canonical.PartThinking, Text: "hmm", Signature: "sig", Family: canonical.FamilyClaude},
				{Type: canonical.PartRedactedThinking, Data: "enc", Family: canonical.FamilyClaude}, canonical.TextPart("y")}}, user("z")},
			Reasoning: &canonical.Reasoning{Mode: canonical.ReasoningBudget, BudgetTokens: 2048, Show: true}}, target()},
		// An OpenAI caller's reasoning effort, with a JSON schema format: one
		// output_config.
		{"adaptive_effort_and_schema", &canonical.Request{Messages: []canonical.Message{user("x")},
			Reasoning:      &canonical.Reasoning{Mode: canonical.ReasoningAdaptive, Effort: "minimal"},
			ResponseFormat: &canonical.ResponseFormat{Type: canonical.FormatJSONSchema, Schema: json.RawMessage(`{"type":"object"}`)}}, target()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if reason := unsupported(tt.req); reason != "" {
				t.Fatal(reason)
			}
			body, err := encode(tt.req, tt.tgt)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("testdata", "encode_"+tt.name+".json"), body)
		})
	}
}

func TestEncodeToolChoice(t *testing.T) {
	tools := []canonical.Tool{{Name: "f"}}
	tests := []struct {
		choice   *canonical.ToolChoice
		parallel *bool
		want     string
	}{
		{nil, nil, ``},
		{nil, ptr(true), ``},
		{nil, ptr(false), `{"type":"auto","disable_parallel_tool_use":true}`},
		{&canonical.ToolChoice{Mode: canonical.ToolChoiceAuto}, nil, `{"type":"auto"}`},
		{&canonical.ToolChoice{Mode: canonical.ToolChoiceNone}, ptr(false), `{"type":"none"}`},
		{&canonical.ToolChoice{Mode: canonical.ToolChoiceRequired}, ptr(false), `{"type":"any","disable_parallel_tool_use":true}`},
		{&canonical.ToolChoice{Mode: canonical.ToolChoiceTool, Name: "f"}, ptr(true), `{"type":"tool","name":"f"}`},
	}
	for _, tt := range tests {
		body, err := encode(&canonical.Request{Messages: []canonical.Message{user("x")}, Tools: tools,
			ToolChoice: tt.choice, ParallelToolCalls: tt.parallel}, target())
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			ToolChoice json.RawMessage `json:"tool_choice"`
		}
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		if string(got.ToolChoice) != tt.want {
			t.Errorf("%v/%v: tool_choice = %s, want %s", tt.choice, tt.parallel, got.ToolChoice, tt.want)
		}
	}
}

func TestCheck(t *testing.T) {
	withCall := func(args string) *canonical.Request {
		return &canonical.Request{Messages: []canonical.Message{user("x"),
			{Role: canonical.RoleAssistant, ToolCalls: []canonical.ToolCall{{ID: "toolu_1", Name: "f", Arguments: args}}}}}
	}
	tests := []struct {
		name    string
		req     *canonical.Request
		wantErr string
	}{
		{"json_object", &canonical.Request{ResponseFormat: &canonical.ResponseFormat{Type: canonical.FormatJSONObject}}, "no JSON mode without a schema"},
		{"json_schema goes as output_config.format", &canonical.Request{ResponseFormat: &canonical.ResponseFormat{Type: canonical.FormatJSONSchema, Schema: json.RawMessage(`{}`)}}, ""},
		{"a thinking budget under 1024", &canonical.Request{Reasoning: &canonical.Reasoning{Mode: canonical.ReasoningBudget, BudgetTokens: 512}}, "at least 1024"},
		{"a thinking budget at max_tokens", &canonical.Request{MaxTokens: 2000, Reasoning: &canonical.Reasoning{Mode: canonical.ReasoningBudget, BudgetTokens: 2000}}, "below max_tokens"},
		{"Gemini's reasoning in history", &canonical.Request{Messages: []canonical.Message{user("x"), {Role: canonical.RoleAssistant,
			Content: []canonical.Part{{Type: canonical.PartThinking, Text: "t", Signature: "s", Family: canonical.FamilyGemini}, canonical.TextPart("y")}}}}, "signed by gemini"},
		{"Claude's reasoning in history", &canonical.Request{Messages: []canonical.Message{user("x"), {Role: canonical.RoleAssistant,
			Content: []canonical.Part{{Type: canonical.PartThinking, Text: "t", Signature: "s", Family: canonical.FamilyClaude}, canonical.TextPart("y")}}}}, ""},
		{"invalid arguments", withCall(`{"city":`), "not a JSON object"},
		{"array arguments", withCall(`[1,2]`), "not a JSON object"},
		{"temperature above 1", &canonical.Request{Temperature: ptr(1.5)}, "temperature"},
		{"text format", &canonical.Request{ResponseFormat: &canonical.ResponseFormat{Type: canonical.FormatText}}, ""},
		{"empty arguments", withCall(""), ""},
		{"object arguments", withCall(` {"a":[1]} `), ""},
		{"temperature 1", &canonical.Request{Temperature: ptr(1.0)}, ""},
	}
	a := New().(provider.Checker)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := a.Check(tt.req)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Check = %v, want an error about %q", err, tt.wantErr)
			}
			// Sent anyway, it is refused before reaching the provider.
			tgt, s := upstream(t, sseReply(minimalStream))
			st, err := New().Stream(context.Background(), tgt, tt.req)
			if st != nil {
				st.Close()
				t.Fatal("a stream was returned for an unsupported request")
			}
			if fe := failure.As(err); fe == nil || fe.Class != failure.InvalidRequest || !strings.Contains(fe.Message, tt.wantErr) {
				t.Errorf("Stream = %v, want invalid_request about %q", err, tt.wantErr)
			}
			if _, path, _, _ := s.get(); path != "" {
				t.Error("an unsupported request reached the provider")
			}
		})
	}
}

// TestRequestHeaders checks path, auth, version, idempotency and the
// provider's model id on the wire. A request whose caller wanted no stream
// is streamed all the same.
func TestRequestHeaders(t *testing.T) {
	for _, callerStream := range []bool{false, true} {
		tgt, s := upstream(t, sseReply(minimalStream))
		tgt.IdempotencyKey = "idem-rung-1"
		req := &canonical.Request{Model: "public", Messages: []canonical.Message{user("x")}, Stream: callerStream}
		st, err := New().Stream(context.Background(), tgt, req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := drain(t, st); !isEOF(err) {
			t.Fatal(err)
		}
		st.Close()
		method, path, h, body := s.get()
		if method != "POST" || path != "/v1/messages" {
			t.Errorf("%s %s, want POST /v1/messages", method, path)
		}
		for k, want := range map[string]string{
			"X-Api-Key":         tgt.APIKey,
			"Anthropic-Version": "2023-06-01",
			"Content-Type":      "application/json",
			"Idempotency-Key":   "idem-rung-1",
			"Accept":            "text/event-stream",
			"Authorization":     "",
		} {
			if got := h.Get(k); got != want {
				t.Errorf("%s = %q, want %q", k, got, want)
			}
		}
		var sent struct {
			Model  string `json:"model"`
			Stream bool   `json:"stream"`
		}
		if err := json.Unmarshal(body, &sent); err != nil {
			t.Fatal(err)
		}
		if sent.Model != tgt.Model || !sent.Stream {
			t.Errorf("sent model %q stream %v, want the target's model, streamed (caller stream=%v)", sent.Model, sent.Stream, callerStream)
		}
	}
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, got, "", "  "); err != nil {
		t.Fatalf("encoded body is not JSON: %v\n%s", err, got)
	}
	pretty.WriteByte('\n')
	if *update {
		if err := os.WriteFile(path, pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if !bytes.Equal(bytes.TrimSpace(pretty.Bytes()), bytes.TrimSpace(want)) {
		t.Errorf("%s mismatch:\n got: %s\nwant: %s", path, pretty.Bytes(), want)
	}
}

// The version sent upstream: the caller's, unless the request samples
// (only 2023-06-01 takes temperature, top_p and top_k), or the caller did
// not speak Anthropic. Betas travel in one header.
func TestVersionAndBetas(t *testing.T) {
	temp, k := 0.5, 5
	for _, tc := range []struct {
		name     string
		req      canonical.Request
		version  string
		betas    string
		bodyHave string
	}{
		{"an OpenAI caller", canonical.Request{}, "2023-06-01", "", ""},
		{"a 2023 caller", canonical.Request{AnthropicVersion: "2023-06-01"}, "2023-06-01", "", ""},
		{"a 2026 caller", canonical.Request{AnthropicVersion: "2026-10-21"}, "2026-10-21", "", ""},
		{"a 2026 caller's betas", canonical.Request{AnthropicVersion: "2026-10-21", Betas: []string{"context-1m-2025-08-07", "prompt-caching-2024-07-31"}},
			"2026-10-21", "context-1m-2025-08-07,prompt-caching-2024-07-31", ""},
		{"an OpenAI caller's temperature", canonical.Request{Temperature: &temp}, "2023-06-01", "", `"temperature":0.5`},
		{"top_k", canonical.Request{AnthropicVersion: "2026-10-21", TopK: &k}, "2023-06-01", "", `"top_k":5`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tgt, s := upstream(t, sseReply(minimalStream))
			req := tc.req
			req.Messages = []canonical.Message{user("x")}
			st, err := New().Stream(context.Background(), tgt, &req)
			if err != nil {
				t.Fatal(err)
			}
			st.Close()
			_, _, h, body := s.get()
			if got := h.Get("Anthropic-Version"); got != tc.version {
				t.Errorf("anthropic-version %q, want %q", got, tc.version)
			}
			if got := h.Get("Anthropic-Beta"); got != tc.betas {
				t.Errorf("anthropic-beta %q, want %q", got, tc.betas)
			}
			if !strings.Contains(string(body), tc.bodyHave) {
				t.Errorf("body %s lacks %s", body, tc.bodyHave)
			}
		})
	}
}

// count_tokens: the request as a generation would send it, without the
// fields that endpoint refuses; a missing, negative or absurd count is the
// provider's failure.
func TestCountTokens(t *testing.T) {
	temp := 0.3
	req := &canonical.Request{AnthropicVersion: "2026-10-21", System: "s", Messages: []canonical.Message{user("x")},
		MaxTokens: 9, Temperature: &temp, Stop: []string{"END"}, Tools: []canonical.Tool{{Name: "f"}}}
	tgt, s := upstream(t, reply{body: `{"input_tokens":42}`})
	n, err := New().(*Adapter).CountTokens(context.Background(), tgt, req)
	if err != nil || n != 42 {
		t.Fatalf("count %d, %v", n, err)
	}
	_, path, h, body := s.get()
	if path != "/v1/messages/count_tokens" || h.Get("Anthropic-Version") != "2023-06-01" {
		t.Errorf("%s version %q", path, h.Get("Anthropic-Version"))
	}
	for _, refused := range []string{"max_tokens", "temperature", "stop_sequences", "stream"} {
		if strings.Contains(string(body), refused) {
			t.Errorf("body carries %s: %s", refused, body)
		}
	}
	if !strings.Contains(string(body), `"tools"`) || !strings.Contains(string(body), `"system"`) {
		t.Errorf("body lacks tools or system: %s", body)
	}
	for _, bad := range []string{`{}`, `{"input_tokens":-1}`, `{"input_tokens":1e12}`, `not json`} {
		tgt, _ := upstream(t, reply{body: bad})
		if _, err := New().(*Adapter).CountTokens(context.Background(), tgt, req); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	tgt, _ = upstream(t, reply{status: 529, body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`})
	if _, err := New().(*Adapter).CountTokens(context.Background(), tgt, req); err == nil {
		t.Error("529 accepted")
	}
}

// minimalStream is the shortest whole Messages stream.
const minimalStream = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"m\"}}\n\n" +
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}}\n\n" +
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
