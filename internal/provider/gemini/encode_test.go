package gemini

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

func target(model string) *provider.Target {
	return &provider.Target{Model: model, MaxOutputTokens: 65536}
}

// fullRequest uses every canonical feature Gemini can express.
func fullRequest() *canonical.Request {
	return &canonical.Request{
		Model:  "public-name-never-sent",
		System: "Be brief.",
		Messages: []canonical.Message{
			{Role: canonical.RoleUser, Content: []canonical.Part{
				canonical.TextPart("Compare these <two> & tell me the weather."),
				canonical.TextPart(""), // dropped: Gemini rejects empty text
				{Type: canonical.PartImage, MediaType: "image/png", Data: "iVBORw0KGgo="},
				{Type: canonical.PartImage, ImageURL: "data:image/jpeg;base64,/9j/4AAQ"},
			}},
			user("Also: be quick."), // merges into the turn above
			{Role: canonical.RoleAssistant,
				Content: []canonical.Part{canonical.TextPart("Checking both.")},
				ToolCalls: []canonical.ToolCall{
					{ID: "toolu_1", Name: "get_weather", Arguments: "{\n  \"city\": \"Paris\"\n}"},
					{ID: "call_abc", Name: "get_time", Arguments: ""},
				}},
			{Role: canonical.RoleTool, ToolCallID: "toolu_1", ToolName: "get_weather", Content: []canonical.Part{canonical.TextPart("18C")}},
			// No ToolName: the name comes from the call with this id.
			{Role: canonical.RoleTool, ToolCallID: "call_abc", IsError: true, Content: []canonical.Part{canonical.TextPart("clock "), canonical.TextPart("broken")}},
			user("Thanks. Summarise."), // joins the function-response turn, after the responses
			{Role: canonical.RoleAssistant, Content: []canonical.Part{canonical.TextPart("")}}, // nothing to send: left out
			{Role: canonical.RoleAssistant, Content: []canonical.Part{canonical.TextPart("Sure:")}},
		},
		Tools: []canonical.Tool{
			{Name: "get_weather", Description: "Get weather", Strict: true,
				Parameters: json.RawMessage(`{ "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false }`)},
			{Name: "get_time"},
		},
		ToolChoice:        &canonical.ToolChoice{Mode: canonical.ToolChoiceTool, Name: "get_weather"},
		ParallelToolCalls: ptr(true),
		MaxTokens:         256,
		Temperature:       ptr(0.0),
		TopP:              ptr(0.9),
		Stop:              []string{"END", "STOP"},
		ResponseFormat: &canonical.ResponseFormat{Type: canonical.FormatJSONSchema, Name: "answer",
			Schema: json.RawMessage(`{"type": "object", "properties": {"summary": {"type": "string"}}}`)},
	}
}

func TestEncodeGolden(t *testing.T) {
	tests := []struct {
		name string
		req  *canonical.Request
		tgt  *provider.Target
	}{
		{"minimal", hello(), &provider.Target{Model: "gemini-2.5-flash"}},
		{"minimal_deployment_max_tokens", hello(), target("gemini-2.5-flash")},
		{"full", fullRequest(), target("gemini-2.5-flash")},
		// Gemini 3 validates thought signatures on replayed function calls.
		{"full_gemini3", fullRequest(), target("gemini-3-pro-preview")},
		{"json_object", &canonical.Request{Messages: []canonical.Message{user("JSON please")},
			ResponseFormat: &canonical.ResponseFormat{Type: canonical.FormatJSONObject}, Temperature: ptr(1.5)}, &provider.Target{Model: "gemini-2.5-flash"}},
		{"tool_choice_without_tools", &canonical.Request{Messages: []canonical.Message{user("x")},
			ToolChoice: &canonical.ToolChoice{Mode: canonical.ToolChoiceRequired}, ParallelToolCalls: ptr(false)}, &provider.Target{Model: "gemini-2.5-flash"}},
		// Reasoning: a budget with its thoughts shown, and Gemini's own
		// thought (with its signature) in history.
		{"thinking_budget_and_history", &canonical.Request{Messages: []canonical.Message{user("x"),
			{Role: canonical.RoleAssistant, Content: []canonical.Part{{Type: canonical.PartThinking, Text: "hmm", Signature: "c2ln", Family: canonical.FamilyGemini}, canonical.TextPart("y")}}, user("z")},
			Reasoning: &canonical.Reasoning{Mode: canonical.ReasoningBudget, BudgetTokens: 2048}}, &provider.Target{Model: "gemini-2.5-flash"}},
		{"thinking_effort_hidden", &canonical.Request{Messages: []canonical.Message{user("x")},
			Reasoning: &canonical.Reasoning{Mode: canonical.ReasoningAdaptive, Effort: "xhigh", Hide: true}}, &provider.Target{Model: "gemini-3-pro-preview"}},
		{"thinking_off", &canonical.Request{Messages: []canonical.Message{user("x")},
			Reasoning: &canonical.Reasoning{Mode: canonical.ReasoningOff}}, &provider.Target{Model: "gemini-2.5-flash"}},
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

func TestEncodeToolConfig(t *testing.T) {
	tools := []canonical.Tool{{Name: "f"}}
	tests := []struct {
		choice *canonical.ToolChoice
		want   string
	}{
		{nil, ``},
		{&canonical.ToolChoice{Mode: canonical.ToolChoiceAuto}, `{"functionCallingConfig":{"mode":"AUTO"}}`},
		{&canonical.ToolChoice{Mode: canonical.ToolChoiceNone}, `{"functionCallingConfig":{"mode":"NONE"}}`},
		{&canonical.ToolChoice{Mode: canonical.ToolChoiceRequired}, `{"functionCallingConfig":{"mode":"ANY"}}`},
		{&canonical.ToolChoice{Mode: canonical.ToolChoiceTool, Name: "f"}, `{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["f"]}}`},
	}
	for _, tt := range tests {
		body, err := encode(&canonical.Request{Messages: []canonical.Message{user("x")}, Tools: tools, ToolChoice: tt.choice}, target("m"))
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			ToolConfig json.RawMessage `json:"toolConfig"`
		}
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		if string(got.ToolConfig) != tt.want {
			t.Errorf("%v: toolConfig = %s, want %s", tt.choice, got.ToolConfig, tt.want)
		}
	}
}

func TestCheck(t *testing.T) {
	withCall := func(args string) *canonical.Request {
		return &canonical.Request{Messages: []canonical.Message{user("x"),
			{Role: canonical.RoleAssistant, ToolCalls: []canonical.ToolCall{{ID: "toolu_1", Name: "f", Arguments: args}}}}}
	}
	result := func(m canonical.Message) *canonical.Request {
		return &canonical.Request{Messages: []canonical.Message{user("x"),
			{Role: canonical.RoleAssistant, ToolCalls: []canonical.ToolCall{{ID: "call_1", Name: "f", Arguments: "{}"}}}, m}}
	}
	tools := func(parallel *bool, names ...string) *canonical.Request {
		r := hello()
		for _, n := range names {
			r.Tools = append(r.Tools, canonical.Tool{Name: n})
		}
		r.ParallelToolCalls = parallel
		return r
	}
	tests := []struct {
		name    string
		req     *canonical.Request
		wantErr string
	}{
		// Refused: each would be dropped or changed silently.
		{"a Claude beta", &canonical.Request{Betas: []string{"prompt-caching-2024-07-31", "context-1m-2025-08-07"}}, "beta context-1m-2025-08-07: only Claude's own API"},
		{"image by URL", &canonical.Request{Messages: []canonical.Message{{Role: canonical.RoleUser,
			Content: []canonical.Part{{Type: canonical.PartImage, ImageURL: "https://example.com/a.png"}}}}}, "not by URL"},
		{"data URL without base64", &canonical.Request{Messages: []canonical.Message{{Role: canonical.RoleUser,
			Content: []canonical.Part{{Type: canonical.PartImage, ImageURL: "data:image/png,raw"}}}}}, "not by URL"},
		{"invalid arguments", withCall(`{"city":`), "not a JSON object"},
		{"array arguments", withCall(`[1,2]`), "not a JSON object"},
		{"unknown function of a tool result", result(canonical.Message{Role: canonical.RoleTool, ToolCallID: "call_other",
			Content: []canonical.Part{canonical.TextPart("r")}}), "does not name its function"},
		{"image in a tool result", result(canonical.Message{Role: canonical.RoleTool, ToolCallID: "call_1",
			Content: []canonical.Part{{Type: canonical.PartImage, MediaType: "image/png", Data: "AA=="}}}), "JSON only"},
		{"parallel calls off", tools(ptr(false), "f"), "at most one function call"},
		{"name starting with a digit", tools(nil, "1f"), "not a valid Gemini function name"},
		{"name with a space", tools(nil, "get weather"), "not a valid Gemini function name"},
		{"name too long", tools(nil, strings.Repeat("a", 129)), "not a valid Gemini function name"},
		// Accepted.
		{"empty arguments", withCall(""), ""},
		{"object arguments", withCall(` {"a":[1]} `), ""},
		{"tool result named by the call", result(canonical.Message{Role: canonical.RoleTool, ToolCallID: "call_1",
			Content: []canonical.Part{canonical.TextPart("r")}}), ""},
		{"parallel calls off without tools", tools(ptr(false)), ""},
		{"parallel calls on", tools(ptr(true), "f"), ""},
		{"name with dots, colons and dashes", tools(nil, "_ns.get:weather-v2", strings.Repeat("a", 128)), ""},
		{"inline image", &canonical.Request{Messages: []canonical.Message{{Role: canonical.RoleUser,
			Content: []canonical.Part{{Type: canonical.PartImage, ImageURL: "data:image/png;base64,AA=="}}}}}, ""},
		{"temperature 2", &canonical.Request{Temperature: ptr(2.0), Messages: []canonical.Message{user("x")}}, ""},
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
			tgt, s := upstream(t, sseReply(chunks(chLo)))
			st, err := New().Stream(context.Background(), tgt, tt.req)
			if st != nil {
				st.Close()
				t.Fatal("a stream was returned for an unsupported request")
			}
			if fe := failure.As(err); fe == nil || fe.Class != failure.InvalidRequest || !strings.Contains(fe.Message, tt.wantErr) {
				t.Errorf("Stream = %v, want invalid_request about %q", err, tt.wantErr)
			}
			if _, uri, _, _ := s.get(); uri != "" {
				t.Error("an unsupported request reached the provider")
			}
		})
	}
}

func TestEndpoint(t *testing.T) {
	tests := []struct {
		model, want string
	}{
		{"gemini-2.5-flash", "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"},
		{"models/gemini-2.5-pro", "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"},
		{"tunedModels/my-model-1", "/v1beta/tunedModels/my-model-1:streamGenerateContent?alt=sse"},
	}
	for _, tt := range tests {
		tgt := &provider.Target{BaseURL: "https://generativelanguage.googleapis.com", Model: tt.model}
		if got := endpoint(tgt); got != tgt.BaseURL+tt.want {
			t.Errorf("%s: %s, want %s", tt.model, got, tt.want)
		}
	}
}

// TestRequestHeaders checks the method, URL, auth and body on the wire:
// the key goes in x-goog-api-key (never a bearer token), and a request
// whose caller wanted no stream is streamed all the same, with the same
// body.
func TestRequestHeaders(t *testing.T) {
	var bodies [2][]byte
	for i, callerStream := range []bool{false, true} {
		tgt, s := upstream(t, sseReply(chunks(`{"candidates":[{"content":{"parts":[{"text":"ok"}],"role":"model"},"finishReason":"STOP","index":0}],"responseId":"r1"}`)))
		req := fullRequest()
		req.Stream = callerStream
		st, err := New().Stream(context.Background(), tgt, req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := drain(t, st); !isEOF(err) {
			t.Fatal(err)
		}
		st.Close()
		method, uri, h, body := s.get()
		if want := endpoint(&provider.Target{Model: tgt.Model}); method != "POST" || uri != want {
			t.Errorf("%s %s, want POST %s", method, uri, want)
		}
		for k, want := range map[string]string{
			"X-Goog-Api-Key": testKey,
			"Content-Type":   "application/json",
			"Accept":         "text/event-stream",
			"Authorization":  "",
		} {
			if got := h.Get(k); got != want {
				t.Errorf("%s = %q, want %q", k, got, want)
			}
		}
		if bytes.Contains(body, []byte("public-name-never-sent")) || bytes.Contains(body, []byte(tgt.Model)) {
			t.Error("the model travels in the body; Gemini takes it from the path")
		}
		bodies[i] = body
	}
	if !bytes.Equal(bodies[0], bodies[1]) {
		t.Errorf("the bodies differ with the caller's stream flag:\n%s\n%s", bodies[0], bodies[1])
	}
}

func TestEncodeRejectsInvalidRawJSON(t *testing.T) {
	tests := []*canonical.Request{
		{Messages: []canonical.Message{user("x")}, Tools: []canonical.Tool{{Name: "f", Parameters: json.RawMessage(`{"type":`)}}},
		{Messages: []canonical.Message{user("x")}, ResponseFormat: &canonical.ResponseFormat{Type: canonical.FormatJSONSchema, Schema: json.RawMessage(`{`)}},
	}
	for _, req := range tests {
		if _, err := encode(req, target("m")); err == nil {
			t.Errorf("encode accepted invalid JSON in %+v", req)
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
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
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
