package bedrock

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/provider"
)

var update = flag.Bool("update", false, "rewrite golden files")

func target() *provider.Target {
	return &provider.Target{Model: profileARN, MaxOutputTokens: 64000}
}

// fullRequest uses every canonical feature Converse can express.
func fullRequest() *canonical.Request {
	return &canonical.Request{
		Model:  "public-name-never-sent",
		System: "Be brief.",
		Messages: []canonical.Message{
			{Role: canonical.RoleUser, Content: []canonical.Part{
				canonical.TextPart("Compare these <two> & tell me the weather."),
				{Type: canonical.PartImage, MediaType: "image/png", Data: "iVBORw0KGgo="},
				{Type: canonical.PartImage, ImageURL: "data:image/jpeg;base64,/9j/4AAQ"},
				{Type: canonical.PartImage, MediaType: "image/webp", Data: "UklGRg=="},
			}},
			user("Also: be quick."), // merges into the turn above
			{Role: canonical.RoleAssistant,
				Content: []canonical.Part{canonical.TextPart("Checking both."), canonical.TextPart("")},
				ToolCalls: []canonical.ToolCall{
					{ID: "tooluse_1", Name: "get_weather", Arguments: "{\n  \"city\": \"Paris\"\n}"},
					{ID: "tooluse_2", Name: "get_time", Arguments: ""},
				}},
			{Role: canonical.RoleTool, ToolCallID: "tooluse_1", ToolName: "get_weather", Content: []canonical.Part{canonical.TextPart("18C")}},
			{Role: canonical.RoleTool, ToolCallID: "tooluse_2", IsError: true, Content: []canonical.Part{canonical.TextPart("clock "), canonical.TextPart("broken")}},
			{Role: canonical.RoleTool, ToolCallID: "tooluse_3", Content: []canonical.Part{canonical.TextPart("chart:"), {Type: canonical.PartImage, MediaType: "image/gif", Data: "R0lGOD"}}},
			{Role: canonical.RoleTool, ToolCallID: "tooluse_4"},
			user("Thanks. Summarise."),                                                              // joins the tool-result turn, after the results
			{Role: canonical.RoleAssistant, Content: []canonical.Part{canonical.TextPart("Sure:")}}, // prefill
		},
		Tools: []canonical.Tool{
			{Name: "get_weather", Description: "Get weather", Strict: true,
				Parameters: json.RawMessage(`{ "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"] }`)},
			{Name: "get_time"},
		},
		ToolChoice:        &canonical.ToolChoice{Mode: canonical.ToolChoiceTool, Name: "get_weather"},
		ParallelToolCalls: ptr(true),
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
		{"minimal_no_inference_config", hello(), &provider.Target{Model: "amazon.nova-pro-v1:0"}},
		{"minimal_deployment_max_tokens", hello(), target()},
		{"full", fullRequest(), target()},
		{"tool_choice_none_drops_tools", &canonical.Request{Messages: []canonical.Message{user("x")},
			Tools: []canonical.Tool{{Name: "f"}}, ToolChoice: &canonical.ToolChoice{Mode: canonical.ToolChoiceNone}, ParallelToolCalls: ptr(false)}, target()},
		{"tool_choice_without_tools", &canonical.Request{Messages: []canonical.Message{user("x")},
			ToolChoice: &canonical.ToolChoice{Mode: canonical.ToolChoiceRequired}}, target()},
		// Claude on Bedrock reads top_k and the caller's betas from the
		// fields Converse passes to the model.
		{"claude_top_k_and_betas", &canonical.Request{Messages: []canonical.Message{user("x")}, TopK: ptr(7),
			Betas: []string{"context-1m-2025-08-07", "prompt-caching-2024-07-31"}}, target()},
		// Structured output: the schema travels as a string.
		{"json_schema", &canonical.Request{Messages: []canonical.Message{user("x")},
			ResponseFormat: &canonical.ResponseFormat{Type: canonical.FormatJSONSchema, Name: "city", Schema: json.RawMessage(`{"type": "object", "properties": {"a": {"type": "string"}}}`)}}, target()},
		// Claude's thinking on Bedrock, and its reasoning in history.
		{"thinking", &canonical.Request{Messages: []canonical.Message{user("x"), {Role: canonical.RoleAssistant, Content: []canonical.Part{
			{Type: canonical.PartThinking, Text: "hmm", Signature: "sig", Family: canonical.FamilyClaude},
			{Type: canonical.PartRedactedThinking, Data: "enc", Family: canonical.FamilyClaude}, canonical.TextPart("y")}}, user("z")},
			MaxTokens: 4096, Reasoning: &canonical.Reasoning{Mode: canonical.ReasoningBudget, BudgetTokens: 2048}}, target()},
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
		choice *canonical.ToolChoice
		want   string
	}{
		{nil, ``},
		{&canonical.ToolChoice{Mode: canonical.ToolChoiceAuto}, `{"auto":{}}`},
		{&canonical.ToolChoice{Mode: canonical.ToolChoiceRequired}, `{"any":{}}`},
		{&canonical.ToolChoice{Mode: canonical.ToolChoiceTool, Name: "f"}, `{"tool":{"name":"f"}}`},
	}
	for _, tt := range tests {
		body, err := encode(&canonical.Request{Messages: []canonical.Message{user("x")}, Tools: tools, ToolChoice: tt.choice}, target())
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			ToolConfig struct {
				ToolChoice json.RawMessage `json:"toolChoice"`
			} `json:"toolConfig"`
		}
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		if string(got.ToolConfig.ToolChoice) != tt.want {
			t.Errorf("%v: toolChoice = %s, want %s", tt.choice, got.ToolConfig.ToolChoice, tt.want)
		}
	}
}

func TestEncodeRejectsBadJSON(t *testing.T) {
	tests := []*canonical.Request{
		{Messages: []canonical.Message{user("x")}, Tools: []canonical.Tool{{Name: "f", Parameters: json.RawMessage(`{"type":`)}}},
		{Messages: []canonical.Message{user("x")}, Temperature: ptr(math.NaN())},
	}
	for i, req := range tests {
		tgt, s := upstream(t, streamReply(nil))
		st, err := newAdapter().Stream(context.Background(), tgt, req)
		if st != nil {
			st.Close()
			t.Fatalf("%d: a stream was returned for an unencodable request", i)
		}
		if fe := failure.As(err); fe == nil || fe.Class != failure.InvalidRequest {
			t.Errorf("%d: err = %v, want invalid_request", i, err)
		}
		if _, path, _, _ := s.get(); path != "" {
			t.Errorf("%d: an unencodable request reached the provider", i)
		}
	}
}

func TestCheck(t *testing.T) {
	withCall := func(args string) *canonical.Request {
		return &canonical.Request{Messages: []canonical.Message{user("x"),
			{Role: canonical.RoleAssistant, ToolCalls: []canonical.ToolCall{{ID: "tooluse_1", Name: "f", Arguments: args}}},
			{Role: canonical.RoleTool, ToolCallID: "tooluse_1", Content: []canonical.Part{canonical.TextPart("ok")}}},
			Tools: []canonical.Tool{{Name: "f"}}}
	}
	image := func(p canonical.Part) *canonical.Request {
		p.Type = canonical.PartImage
		return &canonical.Request{Messages: []canonical.Message{{Role: canonical.RoleUser, Content: []canonical.Part{p}}}}
	}
	noneWithHistory := withCall(`{}`)
	noneWithHistory.ToolChoice = &canonical.ToolChoice{Mode: canonical.ToolChoiceNone}
	noToolsWithHistory := withCall(`{}`)
	noToolsWithHistory.Tools = nil
	serial := hello()
	serial.Tools, serial.ParallelToolCalls = []canonical.Tool{{Name: "f"}}, ptr(false)
	tests := []struct {
		name    string
		req     *canonical.Request
		wantErr string
	}{
		{"json_object", &canonical.Request{ResponseFormat: &canonical.ResponseFormat{Type: canonical.FormatJSONObject}}, "no JSON mode without a schema"},
		{"Gemini's reasoning in history", &canonical.Request{Messages: []canonical.Message{user("x"), {Role: canonical.RoleAssistant,
			Content: []canonical.Part{{Type: canonical.PartThinking, Text: "t", Signature: "s", Family: canonical.FamilyGemini}, canonical.TextPart("y")}}}}, "signed by gemini"},
		{"image URL", image(canonical.Part{ImageURL: "https://example.com/a.png"}), "image URLs"},
		{"image media type", image(canonical.Part{MediaType: "image/tiff", Data: "AA=="}), `not "image/tiff"`},
		{"data URL media type", image(canonical.Part{ImageURL: "data:image/bmp;base64,AA=="}), `not "image/bmp"`},
		{"invalid arguments", withCall(`{"city":`), "not a JSON object"},
		{"array arguments", withCall(`[1,2]`), "not a JSON object"},
		{"temperature above 1", &canonical.Request{Temperature: ptr(1.5)}, "temperature"},
		{"negative top_p", &canonical.Request{TopP: ptr(-0.1)}, "top_p"},
		{"tool history without tools", noToolsWithHistory, "declares no tools"},
		{"tool_choice none with tool history", noneWithHistory, "tool_choice none"},
		{"parallel_tool_calls false", serial, "parallel tool calls"},
		{"text format", &canonical.Request{ResponseFormat: &canonical.ResponseFormat{Type: canonical.FormatText}}, ""},
		{"empty arguments", withCall(""), ""},
		{"object arguments", withCall(` {"a":[1]} `), ""},
		{"temperature 1", &canonical.Request{Temperature: ptr(1.0)}, ""},
		{"data URL png", image(canonical.Part{ImageURL: "data:image/png;base64,AA=="}), ""},
		{"parallel false without tools", &canonical.Request{ParallelToolCalls: ptr(false)}, ""},
		{"tool_choice none without history", &canonical.Request{Tools: []canonical.Tool{{Name: "f"}},
			ToolChoice: &canonical.ToolChoice{Mode: canonical.ToolChoiceNone}, ParallelToolCalls: ptr(false)}, ""},
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
			tgt, s := upstream(t, streamReply(nil))
			st, err := newAdapter().Stream(context.Background(), tgt, tt.req)
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

// sendOnce streams one request, its caller wanting a stream or not, and
// returns what the upstream saw.
func sendOnce(t *testing.T, tgt *provider.Target, s *seen, callerStream bool) (string, http.Header, []byte) {
	t.Helper()
	req := &canonical.Request{Model: "public", Messages: []canonical.Message{user("x")}, Stream: callerStream}
	st, err := newAdapter().Stream(context.Background(), tgt, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := drain(t, st); !isEOF(err) {
		t.Fatal(err)
	}
	st.Close()
	_, path, h, body := s.get()
	return path, h, body
}

// TestRequestPathAndBearer checks the escaped path, the bearer key and the
// other headers. A request whose caller wanted no stream goes through
// ConverseStream all the same.
func TestRequestPathAndBearer(t *testing.T) {
	for _, callerStream := range []bool{false, true} {
		r := streamReply(join(ev("messageStart", `{"role":"assistant"}`), ev("messageStop", `{"stopReason":"end_turn"}`), ev("metadata", `{"usage":{"inputTokens":1,"outputTokens":0,"totalTokens":1}}`)))
		tgt, s := upstream(t, r)
		tgt.IdempotencyKey = "idem-rung-1"
		tgt.AWS = &provider.AWSKeys{AccessKeyID: "AKID", SecretAccessKey: "secret"} // the API key wins
		path, h, body := sendOnce(t, tgt, s, callerStream)
		if want := profilePath + "/converse-stream"; path != want {
			t.Errorf("path %s\nwant %s", path, want)
		}
		for k, want := range map[string]string{
			"Authorization":   "Bearer " + testKey,
			"Content-Type":    "application/json",
			"Accept":          eventStreamType,
			"Idempotency-Key": "", // Converse has none
			"X-Amz-Date":      "",
		} {
			if got := h.Get(k); got != want {
				t.Errorf("caller stream=%v: %s = %q, want %q", callerStream, k, got, want)
			}
		}
		var sent map[string]json.RawMessage
		if err := json.Unmarshal(body, &sent); err != nil {
			t.Fatal(err)
		}
		if _, ok := sent["modelId"]; ok || sent["stream"] != nil {
			t.Errorf("body carries the model or a stream flag: %s", body)
		}
	}
}

func TestRequestPathJoinsBasePath(t *testing.T) {
	tests := []struct{ base, model, want string }{
		{"/", "amazon.nova-pro-v1:0", "/model/amazon.nova-pro-v1%3A0/converse-stream"},
		{"/proxy/bedrock/", "m", "/proxy/bedrock/model/m/converse-stream"},
		{"/a%2Fb", "meta.llama3-70b-instruct-v1:0", "/a%2Fb/model/meta.llama3-70b-instruct-v1%3A0/converse-stream"},
		{"", "a b/c?d#e%f", "/model/a%20b%2Fc%3Fd%23e%25f/converse-stream"},
	}
	for _, tt := range tests {
		r, err := http.NewRequest(http.MethodPost, "https://bedrock-runtime.us-east-1.amazonaws.com"+tt.base, nil)
		if err != nil {
			t.Fatal(err)
		}
		setPath(r, tt.model, opConverseStream)
		if got := r.URL.EscapedPath(); got != tt.want {
			t.Errorf("base %q model %q: %s, want %s", tt.base, tt.model, got, tt.want)
		}
		if got := r.URL.RequestURI(); got != tt.want {
			t.Errorf("request URI %s, want %s", got, tt.want)
		}
	}
}

// TestSigV4 checks the signed headers, and that the signature holds for
// the bytes that arrived: re-signing the received request (same time,
// same keys, the received body's hash) gives the same Authorization.
func TestSigV4(t *testing.T) {
	for _, session := range []string{"", "FwoGZXIvYXdzEBYaDH"} {
		for _, callerStream := range []bool{false, true} {
			tgt, s := upstream(t, streamReply(join(ev("messageStart", `{"role":"assistant"}`), ev("messageStop", `{"stopReason":"end_turn"}`), ev("metadata", `{}`))))
			tgt.APIKey = ""
			tgt.AWS = &provider.AWSKeys{AccessKeyID: "AKIAIOSFODNN7EXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", SessionToken: session}
			tgt.Region = "eu-west-3"
			path, h, body := sendOnce(t, tgt, s, callerStream)
			auth := h.Get("Authorization")
			if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20260102/eu-west-3/bedrock/aws4_request, SignedHeaders=") {
				t.Fatalf("Authorization %q", auth)
			}
			if h.Get("X-Amz-Date") != "20260102T030405Z" || h.Get("X-Amz-Security-Token") != session {
				t.Errorf("X-Amz-Date %q X-Amz-Security-Token %q", h.Get("X-Amz-Date"), h.Get("X-Amz-Security-Token"))
			}
			_, signed, _ := strings.Cut(auth, "SignedHeaders=")
			signed, _, _ = strings.Cut(signed, ",")
			for _, want := range []string{"content-type", "host", "x-amz-date"} {
				if !strings.Contains(";"+signed+";", ";"+want+";") {
					t.Errorf("%s not signed: %s", want, signed)
				}
			}
			// Re-sign what arrived.
			re, _ := http.NewRequest(http.MethodPost, tgt.BaseURL, bytes.NewReader(body))
			re.URL.RawPath = path
			re.URL.Path, _ = url.PathUnescape(path)
			for name := range strings.SplitSeq(signed, ";") {
				if name != "host" && name != "content-length" {
					re.Header.Set(name, h.Get(name))
				}
			}
			sum := sha256.Sum256(body)
			creds := aws.Credentials{AccessKeyID: tgt.AWS.AccessKeyID, SecretAccessKey: tgt.AWS.SecretAccessKey, SessionToken: session}
			if err := v4.NewSigner().SignHTTP(context.Background(), creds, re, hex.EncodeToString(sum[:]), "bedrock", "eu-west-3", fixedTime); err != nil {
				t.Fatal(err)
			}
			if got := re.Header.Get("Authorization"); got != auth {
				t.Errorf("signature does not match the received request:\n got %s\nsent %s", got, auth)
			}
		}
	}
}

func TestMisbound(t *testing.T) {
	tests := []struct {
		name string
		edit func(*provider.Target)
		want string
	}{
		{"no credentials", func(t *provider.Target) { t.APIKey = "" }, "no Bedrock API key"},
		{"AWS keys without region", func(t *provider.Target) {
			t.APIKey, t.Region, t.AWS = "", "", &provider.AWSKeys{AccessKeyID: "a", SecretAccessKey: "b"}
		}, "region"},
		{"bad base URL", func(t *provider.Target) { t.BaseURL = "http://[::1" }, "cannot build"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tgt, s := upstream(t, streamReply(nil))
			tt.edit(tgt)
			st, err := newAdapter().Stream(context.Background(), tgt, hello())
			if st != nil {
				st.Close()
				t.Fatal("a stream was returned for a misbound deployment")
			}
			fe := failure.As(err)
			if fe == nil || fe.Class != failure.ProviderBindingInvalid || !fe.NoResponse || !strings.Contains(fe.Detail, tt.want) {
				t.Fatalf("err = %v, want provider_binding_invalid about %q", err, tt.want)
			}
			if _, path, _, _ := s.get(); path != "" {
				t.Error("the request was sent")
			}
		})
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
