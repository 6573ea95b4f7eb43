package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/spillway-gw/spillway/internal/canonical"
)

var update = flag.Bool("update", false, "rewrite golden files")

func ptr[T any](v T) *T { return &v }

func user(text string) canonical.Message {
	return canonical.Message{Role: canonical.RoleUser, Content: []canonical.Part{canonical.TextPart(text)}}
}

// fullRequest uses every canonical feature.
func fullRequest() *canonical.Request {
	return &canonical.Request{
		Model:  "public-name-never-sent",
		System: "Be brief.",
		Messages: []canonical.Message{
			{Role: canonical.RoleUser, Content: []canonical.Part{
				canonical.TextPart("Compare these <two> & tell me the weather."),
				{Type: canonical.PartImage, ImageURL: "https://example.com/a.png"},
				{Type: canonical.PartImage, MediaType: "image/png", Data: "iVBORw0KGgo="},
			}},
			{Role: canonical.RoleAssistant,
				Content: []canonical.Part{canonical.TextPart("Checking both.")},
				ToolCalls: []canonical.ToolCall{
					{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`},
					{ID: "call_2", Name: "get_time", Arguments: ""},
				}},
			{Role: canonical.RoleTool, ToolCallID: "call_1", ToolName: "get_weather", Content: []canonical.Part{canonical.TextPart("18C")}},
			{Role: canonical.RoleTool, ToolCallID: "call_2", IsError: true, Content: []canonical.Part{canonical.TextPart("clock "), canonical.TextPart("broken")}},
			{Role: canonical.RoleAssistant, ToolCalls: []canonical.ToolCall{{ID: "call_3", Name: "get_time", Arguments: `{}`}}},
			{Role: canonical.RoleTool, ToolCallID: "call_3", Content: []canonical.Part{canonical.TextPart("noon")}},
		},
		Tools: []canonical.Tool{
			{Name: "get_weather", Description: "Get weather", Strict: true,
				Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`)},
			{Name: "get_time"},
		},
		ToolChoice:        &canonical.ToolChoice{Mode: canonical.ToolChoiceTool, Name: "get_weather"},
		ParallelToolCalls: ptr(false),
		MaxTokens:         256,
		Temperature:       ptr(0.0),
		TopP:              ptr(0.9),
		Stop:              []string{"END", "STOP"},
		ResponseFormat: &canonical.ResponseFormat{Type: canonical.FormatJSONSchema, Name: "weather", Strict: true,
			Schema: json.RawMessage(`{"type":"object","properties":{"temp":{"type":"number"}}}`)},
		IncludeUsage: false,
	}
}

func TestEncodeGolden(t *testing.T) {
	tests := []struct {
		name string
		req  *canonical.Request
	}{
		{"minimal", &canonical.Request{Messages: []canonical.Message{user("Hello")}}},
		{"full", fullRequest()},
		{"tool_choice_without_tools", &canonical.Request{Messages: []canonical.Message{user("x")},
			ToolChoice: &canonical.ToolChoice{Mode: canonical.ToolChoiceRequired}, ParallelToolCalls: ptr(true)}},
		{"json_object", &canonical.Request{Messages: []canonical.Message{user("x")},
			ResponseFormat: &canonical.ResponseFormat{Type: canonical.FormatJSONObject}}},
		{"json_schema_unnamed", &canonical.Request{Messages: []canonical.Message{user("x")},
			ResponseFormat: &canonical.ResponseFormat{Type: canonical.FormatJSONSchema, Schema: json.RawMessage(`{"type":"object"}`)}}},
		{"text_format_and_empty_message", &canonical.Request{Messages: []canonical.Message{{Role: canonical.RoleUser}},
			ResponseFormat: &canonical.ResponseFormat{Type: canonical.FormatText}}},
		// A thinking budget becomes the nearest effort level.
		{"reasoning_budget", &canonical.Request{Messages: []canonical.Message{user("x")},
			Reasoning: &canonical.Reasoning{Mode: canonical.ReasoningBudget, BudgetTokens: 4096}}},
		{"reasoning_effort", &canonical.Request{Messages: []canonical.Message{user("x")},
			Reasoning: &canonical.Reasoning{Mode: canonical.ReasoningAdaptive, Effort: "high"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, err := encode(tt.req, "gpt-4o-2024-08-06")
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
		choice *canonical.ToolChoice
		want   string
	}{
		{nil, ``},
		{&canonical.ToolChoice{Mode: canonical.ToolChoiceAuto}, `"auto"`},
		{&canonical.ToolChoice{Mode: canonical.ToolChoiceNone}, `"none"`},
		{&canonical.ToolChoice{Mode: canonical.ToolChoiceRequired}, `"required"`},
		{&canonical.ToolChoice{Mode: canonical.ToolChoiceTool, Name: "f"}, `{"type":"function","function":{"name":"f"}}`},
	}
	for _, tt := range tests {
		body, err := encode(&canonical.Request{Messages: []canonical.Message{user("x")}, Tools: tools, ToolChoice: tt.choice}, "m")
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			ToolChoice json.RawMessage `json:"tool_choice"`
		}
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		if string(got.ToolChoice) != tt.want {
			t.Errorf("%v: tool_choice = %s, want %s", tt.choice, got.ToolChoice, tt.want)
		}
	}
}

func TestEncodeInvalidRawJSON(t *testing.T) {
	req := &canonical.Request{Messages: []canonical.Message{user("x")},
		Tools: []canonical.Tool{{Name: "f", Parameters: json.RawMessage(`{not json`)}}}
	tgt, s := upstream(t, sseReply("data: [DONE]\n\n"))
	st, err := New().Stream(context.Background(), tgt, req)
	if st != nil {
		st.Close()
		t.Fatal("a stream was returned for an unencodable request")
	}
	if got := classOf(err); got != "invalid_request" {
		t.Fatalf("class = %q (%v), want invalid_request", got, err)
	}
	if _, path, _, _ := s.get(); path != "" {
		t.Errorf("an unencodable request reached the provider")
	}
}

// TestRequestHeaders checks path, auth, idempotency and the provider's
// model id on the wire. A request whose caller wanted no stream is
// streamed all the same.
func TestRequestHeaders(t *testing.T) {
	for _, callerStream := range []bool{false, true} {
		for _, key := range []string{"sk-test-secret-key-123", ""} {
			tgt, s := upstream(t, sseReply("data: [DONE]\n\n"))
			tgt.APIKey = key
			tgt.IdempotencyKey = "idem-rung-1"
			req := &canonical.Request{Model: "public", Messages: []canonical.Message{user("x")}, Stream: callerStream}
			st, err := New().Stream(context.Background(), tgt, req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = drain(t, st)
			st.Close()
			method, path, h, body := s.get()
			if method != "POST" || path != "/v1/chat/completions" {
				t.Errorf("%s %s, want POST /v1/chat/completions", method, path)
			}
			wantAuth := ""
			if key != "" {
				wantAuth = "Bearer " + key
			}
			if got := h.Get("Authorization"); got != wantAuth {
				t.Errorf("Authorization = %q, want %q", got, wantAuth)
			}
			if got := h.Get("Idempotency-Key"); got != "idem-rung-1" {
				t.Errorf("Idempotency-Key = %q", got)
			}
			if got := h.Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type = %q", got)
			}
			if got := h.Get("Accept"); got != "text/event-stream" {
				t.Errorf("Accept = %q", got)
			}
			var sent struct {
				Model         string `json:"model"`
				Stream        bool   `json:"stream"`
				StreamOptions struct {
					IncludeUsage bool `json:"include_usage"`
				} `json:"stream_options"`
			}
			if err := json.Unmarshal(body, &sent); err != nil {
				t.Fatal(err)
			}
			if sent.Model != "gpt-4o-2024-08-06" || !sent.Stream || !sent.StreamOptions.IncludeUsage {
				t.Errorf("sent model %q stream %v include_usage %v, want the target's model, streamed with usage (caller stream=%v)",
					sent.Model, sent.Stream, sent.StreamOptions.IncludeUsage, callerStream)
			}
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
