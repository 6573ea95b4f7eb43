package mock

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"google.golang.org/genai"
)

// The official go-genai SDK is the judge of the Gemini mock's wire format.

const gmKey = "AIzaSyTEST-0123456789abcdefghijklmnop"

func geminiClient(t *testing.T, opts Options, key string) (*genai.Client, *Mock) {
	t.Helper()
	if opts.APIKey == "" {
		opts.APIKey = gmKey
	}
	if key == "" {
		key = opts.APIKey
	}
	m, srv := newMock(t, "gemini", opts)
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey:      key,
		Backend:     genai.BackendGeminiAPI,
		HTTPClient:  srv.Client(),
		HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL, APIVersion: "v1beta"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c, m
}

// gmConfig returns a config carrying a per-request fault script.
func gmConfig(fault string) *genai.GenerateContentConfig {
	cfg := &genai.GenerateContentConfig{}
	if fault != "" {
		cfg.HTTPOptions = &genai.HTTPOptions{Headers: map[string][]string{"X-Mock-Fault": {fault}}}
	}
	return cfg
}

var gmPrompt = genai.Text("Weather in Paris?")

func gmWeatherTools(names ...string) []*genai.Tool {
	var fns []*genai.FunctionDeclaration
	for _, n := range names {
		fns = append(fns, &genai.FunctionDeclaration{
			Name:                 n,
			Description:          "Get the weather",
			ParametersJsonSchema: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
		})
	}
	return []*genai.Tool{{FunctionDeclarations: fns}}
}

// gmStream reads a whole stream the SDK's way: the chunks, and the error
// that ended it (nil for a clean end).
func gmStream(t *testing.T, c *genai.Client, cfg *genai.GenerateContentConfig, contents []*genai.Content) ([]*genai.GenerateContentResponse, error) {
	t.Helper()
	var chunks []*genai.GenerateContentResponse
	for chunk, err := range c.Models.GenerateContentStream(context.Background(), "gemini-2.5-flash", contents, cfg) {
		if err != nil {
			return chunks, err
		}
		chunks = append(chunks, chunk)
	}
	return chunks, nil
}

// gmSummary is what a client gathers from a stream.
type gmSummary struct {
	text   string
	deltas int // content chunks: text pieces and whole function calls
	calls  []*genai.FunctionCall
	finish genai.FinishReason
	usage  *genai.GenerateContentResponseUsageMetadata
}

func gmSummarise(t *testing.T, chunks []*genai.GenerateContentResponse) gmSummary {
	t.Helper()
	var s gmSummary
	for i, ch := range chunks {
		if ch.ResponseID == "" || ch.ResponseID != chunks[0].ResponseID || ch.ModelVersion != "gemini-2.5-flash" {
			t.Errorf("chunk %d: responseId %q modelVersion %q", i, ch.ResponseID, ch.ModelVersion)
		}
		if ch.UsageMetadata == nil || ch.UsageMetadata.PromptTokenCount == 0 {
			t.Errorf("chunk %d carries no prompt usage", i)
		}
		if len(ch.Candidates) != 1 {
			t.Fatalf("chunk %d: %d candidates", i, len(ch.Candidates))
		}
		cand := ch.Candidates[0]
		s.usage = ch.UsageMetadata
		if cand.FinishReason != "" {
			if s.finish != "" {
				t.Errorf("a second finishReason %q", cand.FinishReason)
			}
			s.finish = cand.FinishReason
		} else if ch.UsageMetadata != nil && ch.UsageMetadata.CandidatesTokenCount != 0 {
			t.Errorf("chunk %d: full usage before the last chunk", i)
		}
		if cand.Content == nil {
			continue
		}
		for _, p := range cand.Content.Parts {
			switch {
			case p.FunctionCall != nil:
				s.calls = append(s.calls, p.FunctionCall)
				s.deltas++
			case p.Text != "":
				s.text += p.Text
				s.deltas++
				if len(p.Text) > 4 {
					t.Errorf("chunk %d: text delta %q longer than 4 bytes", i, p.Text)
				}
			}
		}
	}
	return s
}

func TestGeminiSDKText(t *testing.T) {
	client, m := geminiClient(t, Options{Name: "primary"}, "")
	res, err := client.Models.GenerateContent(context.Background(), "gemini-2.5-flash", gmPrompt, gmConfig("cached=5"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Text(), "mock primary ") || res.Candidates[0].FinishReason != genai.FinishReasonStop {
		t.Fatalf("text %q finish %q", res.Text(), res.Candidates[0].FinishReason)
	}
	if res.ModelVersion != "gemini-2.5-flash" || len(res.ResponseID) != 23 {
		t.Errorf("modelVersion %q responseId %q", res.ModelVersion, res.ResponseID)
	}
	reqs := m.Requests()
	if got := reqs[0].Path; got != "/v1beta/models/gemini-2.5-flash:generateContent" {
		t.Errorf("path %q", got)
	}
	if got := reqs[0].Header.Get("x-goog-api-key"); got != gmKey {
		t.Errorf("x-goog-api-key %q", got)
	}
	total := int32((len(reqs[0].Body) + 3) / 4)
	u := res.UsageMetadata
	if u.CandidatesTokenCount != defaultTokens || u.PromptTokenCount != total || u.CachedContentTokenCount != 5 || u.TotalTokenCount != total+defaultTokens {
		t.Errorf("usage %+v, want candidates %d, prompt %d with 5 cached", u, defaultTokens, total)
	}

	chunks, err := gmStream(t, client, gmConfig("cached=5"), gmPrompt)
	if err != nil {
		t.Fatal(err)
	}
	s := gmSummarise(t, chunks)
	if s.text != res.Text() || s.finish != genai.FinishReasonStop || s.deltas != defaultTokens || len(chunks) != defaultTokens+1 {
		t.Errorf("streamed %q (%s, %d deltas in %d chunks), non-streamed %q", s.text, s.finish, s.deltas, len(chunks), res.Text())
	}
	if got := m.Requests()[1].Path; got != "/v1beta/models/gemini-2.5-flash:streamGenerateContent" {
		t.Errorf("stream path %q", got)
	}
	if int(s.usage.CandidatesTokenCount) != s.deltas || s.usage.CachedContentTokenCount != 5 || s.usage.PromptTokenCount != u.PromptTokenCount {
		t.Errorf("streamed usage %+v with %d deltas", s.usage, s.deltas)
	}
}

func TestGeminiSDKMaxTokensAndStop(t *testing.T) {
	client, _ := geminiClient(t, Options{Name: "x"}, "")
	cfg := gmConfig("")
	cfg.MaxOutputTokens = 3
	res, err := client.Models.GenerateContent(context.Background(), "gemini-2.5-flash", gmPrompt, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Candidates[0].FinishReason != genai.FinishReasonMaxTokens || res.UsageMetadata.CandidatesTokenCount != 3 {
		t.Errorf("finish %q candidates %d", res.Candidates[0].FinishReason, res.UsageMetadata.CandidatesTokenCount)
	}
	cfg = gmConfig("")
	cfg.StopSequences = []string{"ipsum"}
	chunks, err := gmStream(t, client, cfg, gmPrompt)
	if err != nil {
		t.Fatal(err)
	}
	s := gmSummarise(t, chunks)
	// Gemini reports a matched stop sequence as STOP.
	if s.finish != genai.FinishReasonStop || strings.Contains(s.text, "ipsum") || int(s.usage.CandidatesTokenCount) != s.deltas {
		t.Errorf("stop sequence: %q finish %q usage %d deltas %d", s.text, s.finish, s.usage.CandidatesTokenCount, s.deltas)
	}
}

func TestGeminiSDKFunctionCalls(t *testing.T) {
	client, _ := geminiClient(t, Options{}, "")
	cfg := gmConfig("tools=2;args={\"city\":\"Oslo\"}")
	cfg.Tools = gmWeatherTools("get_weather", "get_time")
	res, err := client.Models.GenerateContent(context.Background(), "gemini-2.5-flash", gmPrompt, cfg)
	if err != nil {
		t.Fatal(err)
	}
	calls := res.FunctionCalls()
	if len(calls) != 2 || calls[0].Name != "get_weather" || calls[1].Name != "get_time" || calls[0].Args["city"] != "Oslo" {
		t.Fatalf("calls %+v", calls)
	}
	// No tool-use finish reason: a call ends with STOP. Each call is one
	// output delta.
	if res.Candidates[0].FinishReason != genai.FinishReasonStop || res.UsageMetadata.CandidatesTokenCount != 2 {
		t.Errorf("finish %q candidates %d", res.Candidates[0].FinishReason, res.UsageMetadata.CandidatesTokenCount)
	}

	chunks, err := gmStream(t, client, cfg, gmPrompt)
	if err != nil {
		t.Fatal(err)
	}
	s := gmSummarise(t, chunks)
	if len(s.calls) != 2 || s.calls[1].Args["city"] != "Oslo" || s.deltas != 2 || s.usage.CandidatesTokenCount != 2 || s.finish != genai.FinishReasonStop {
		t.Errorf("streamed calls %+v deltas %d usage %d finish %q", s.calls, s.deltas, s.usage.CandidatesTokenCount, s.finish)
	}

	// A forced function, then the tool loop: results go back as
	// functionResponse parts and the model answers in text.
	cfg = gmConfig("")
	cfg.Tools = gmWeatherTools("get_weather", "get_time")
	cfg.ToolConfig = &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{
		Mode: genai.FunctionCallingConfigModeAny, AllowedFunctionNames: []string{"get_time"}}}
	res, err = client.Models.GenerateContent(context.Background(), "gemini-2.5-flash", gmPrompt, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if calls := res.FunctionCalls(); len(calls) != 1 || calls[0].Name != "get_time" {
		t.Fatalf("forced calls %+v", calls)
	}
	loop := append(gmPrompt, res.Candidates[0].Content,
		genai.NewContentFromFunctionResponse("get_time", map[string]any{"output": "12:00"}, genai.RoleUser))
	res, err = client.Models.GenerateContent(context.Background(), "gemini-2.5-flash", loop, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.FunctionCalls()) != 0 || !strings.HasPrefix(res.Text(), "mock ") {
		t.Errorf("after the tool result: calls %+v text %q", res.FunctionCalls(), res.Text())
	}
}

func TestGeminiSDKRefusal(t *testing.T) {
	client, _ := geminiClient(t, Options{}, "")
	res, err := client.Models.GenerateContent(context.Background(), "gemini-2.5-flash", gmPrompt, gmConfig("refusal"))
	if err != nil {
		t.Fatal(err)
	}
	cand := res.Candidates[0]
	blocked := false
	for _, r := range cand.SafetyRatings {
		blocked = blocked || r.Blocked
	}
	if cand.FinishReason != genai.FinishReasonSafety || cand.Content != nil || !blocked || res.UsageMetadata.CandidatesTokenCount != 0 {
		t.Errorf("refusal: finish %q content %+v ratings %+v usage %+v", cand.FinishReason, cand.Content, cand.SafetyRatings, res.UsageMetadata)
	}
	chunks, err := gmStream(t, client, gmConfig("refusal;tokens=3"), gmPrompt)
	if err != nil {
		t.Fatal(err)
	}
	s := gmSummarise(t, chunks)
	if s.finish != genai.FinishReasonSafety || s.deltas != 3 || s.usage.CandidatesTokenCount != 3 {
		t.Errorf("streamed refusal after text: %q finish %q deltas %d usage %d", s.text, s.finish, s.deltas, s.usage.CandidatesTokenCount)
	}
}

// gmAPIError extracts the SDK's typed error.
func gmAPIError(t *testing.T, err error) genai.APIError {
	t.Helper()
	var ae genai.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("err = %v (%T), want a genai.APIError", err, err)
	}
	return ae
}

// gmDetail finds the detail of the given google.rpc type.
func gmDetailOf(ae genai.APIError, typ string) map[string]any {
	for _, d := range ae.Details {
		if d["@type"] == "type.googleapis.com/google.rpc."+typ {
			return d
		}
	}
	return nil
}

func TestGeminiSDKErrors(t *testing.T) {
	tests := []struct {
		fault  string
		key    string
		code   int
		status string
		reason string // ErrorInfo reason
		retry  string // RetryInfo retryDelay
		msgHas string
	}{
		{fault: "", key: "AIzaSy-wrong", code: 400, status: "INVALID_ARGUMENT", reason: "API_KEY_INVALID", msgHas: "API key not valid"},
		{fault: "status=400", code: 400, status: "INVALID_ARGUMENT", msgHas: "input token count"},
		{fault: "status=401", code: 401, status: "UNAUTHENTICATED", reason: "CREDENTIALS_MISSING"},
		{fault: "status=402", code: 400, status: "FAILED_PRECONDITION", msgHas: "enable billing"},
		{fault: "status=403", code: 403, status: "PERMISSION_DENIED", reason: "SERVICE_DISABLED", msgHas: "Generative Language API has not been used in project "},
		{fault: "status=404", code: 404, status: "NOT_FOUND", msgHas: "models/gemini-2.5-flash is not found"},
		{fault: "status=413", code: 400, status: "INVALID_ARGUMENT", msgHas: "payload size"},
		{fault: "status=429;retry_after=36", code: 429, status: "RESOURCE_EXHAUSTED", retry: "36s", msgHas: "exceeded your current quota"},
		{fault: "status=429;retry_after_ms=3950", code: 429, status: "RESOURCE_EXHAUSTED", retry: "3.95s"},
		{fault: "status=500", code: 500, status: "INTERNAL"},
		{fault: "status=503", code: 503, status: "UNAVAILABLE", msgHas: "overloaded"},
		{fault: "status=529", code: 503, status: "UNAVAILABLE", msgHas: "overloaded"},
		{fault: "status=504", code: 504, status: "DEADLINE_EXCEEDED"},
		{fault: "status=418", code: 418, status: "INVALID_ARGUMENT"},
		{fault: "status=400;error_type=FAILED_PRECONDITION;error_code=BILLING_DISABLED;message=custom", code: 400, status: "FAILED_PRECONDITION", reason: "BILLING_DISABLED", msgHas: "custom"},
		{fault: "error_after=0", code: 500, status: "INTERNAL"}, // non-streaming: the HTTP error instead
	}
	for _, tt := range tests {
		t.Run(tt.fault+tt.key, func(t *testing.T) {
			client, _ := geminiClient(t, Options{}, tt.key)
			for _, stream := range []bool{false, true} {
				var err error
				if stream {
					if tt.fault == "error_after=0" {
						continue // covered by TestGeminiSDKStreamFaults
					}
					_, err = gmStream(t, client, gmConfig(tt.fault), gmPrompt)
				} else {
					_, err = client.Models.GenerateContent(context.Background(), "gemini-2.5-flash", gmPrompt, gmConfig(tt.fault))
				}
				ae := gmAPIError(t, err)
				if ae.Code != tt.code || ae.Status != tt.status || !strings.Contains(ae.Message, tt.msgHas) {
					t.Errorf("stream=%v: %d %s %q, want %d %s containing %q", stream, ae.Code, ae.Status, ae.Message, tt.code, tt.status, tt.msgHas)
				}
				if d := gmDetailOf(ae, "ErrorInfo"); (d == nil) != (tt.reason == "") || d != nil && d["reason"] != tt.reason {
					t.Errorf("stream=%v: ErrorInfo %v, want reason %q", stream, d, tt.reason)
				}
				if d := gmDetailOf(ae, "RetryInfo"); (d == nil) != (tt.retry == "") || d != nil && d["retryDelay"] != tt.retry {
					t.Errorf("stream=%v: RetryInfo %v, want %q", stream, d, tt.retry)
				}
				if tt.code == 429 && gmDetailOf(ae, "QuotaFailure") == nil {
					t.Errorf("429 without QuotaFailure: %v", ae.Details)
				}
			}
		})
	}
}

func TestGeminiSDKStreamFaults(t *testing.T) {
	client, _ := geminiClient(t, Options{}, "")
	// error_after: the error arrives as a block that is not "data:"; the SDK
	// yields the content before it, then an APIError.
	for _, tt := range []struct {
		fault  string
		code   int
		status string
	}{
		{"error_after=2", 500, "INTERNAL"},
		{"error_after=0;error_type=UNAVAILABLE;message=The model is overloaded.", 503, "UNAVAILABLE"},
		{"tokens=20;error_after=5;error_type=RESOURCE_EXHAUSTED", 429, "RESOURCE_EXHAUSTED"},
	} {
		chunks, err := gmStream(t, client, gmConfig(tt.fault), gmPrompt)
		ae := gmAPIError(t, err)
		want := 2
		if strings.HasPrefix(tt.fault, "error_after=0") {
			want = 0
		} else if strings.HasPrefix(tt.fault, "tokens=20") {
			want = 5
		}
		if ae.Code != tt.code || ae.Status != tt.status || len(chunks) != want {
			t.Errorf("%s: %d chunks, then %d %s (%q)", tt.fault, len(chunks), ae.Code, ae.Status, ae.Message)
		}
	}

	// no_terminal: the stream ends cleanly but without a finishReason,
	// which the SDK cannot tell from a complete answer; the gateway must.
	chunks, err := gmStream(t, client, gmConfig("no_terminal"), gmPrompt)
	if err != nil {
		t.Fatal(err)
	}
	if s := gmSummarise(t, chunks); s.finish != "" || s.deltas != defaultTokens || s.usage.CandidatesTokenCount != 0 {
		t.Errorf("no_terminal: finish %q, %d deltas, usage %+v", s.finish, s.deltas, s.usage)
	}

	// malformed_after: one chunk that is not JSON; the SDK reports it.
	_, err = gmStream(t, client, gmConfig("malformed_after=1"), gmPrompt)
	var syn *json.SyntaxError
	if err == nil || !strings.Contains(err.Error(), "unmarshalling") && !errors.As(err, &syn) {
		t.Errorf("malformed_after: err = %v", err)
	}

	// die_after: the connection is cut mid-stream.
	chunks, err = gmStream(t, client, gmConfig("die_after=3"), gmPrompt)
	if err == nil || len(chunks) != 3 {
		t.Errorf("die_after: %d chunks, err %v", len(chunks), err)
	}
}
