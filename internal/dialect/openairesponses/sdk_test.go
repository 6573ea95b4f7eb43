package openairesponses

// These tests read the gateway's output with OpenAI's official Go SDK, so a
// passing test means real Responses clients understand it, and they decode
// the requests that SDK sends.

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/spillway-gw/spillway/internal/canonical"
)

// fakeOpenAI answers every request with one canned reply and decodes what
// the SDK sent with the dialect.
type fakeOpenAI struct {
	t           *testing.T
	status      int
	contentType string
	body        []byte

	mu  sync.Mutex
	req *canonical.Request
}

func (f *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/responses" {
		f.t.Errorf("SDK called %s", r.URL.Path)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		f.t.Error(err)
	}
	req, p := New().Decode(body, r.Header)
	if p != nil {
		f.t.Errorf("Decode rejected the SDK's request: %v (param %q)\n%s", p, p.Param, body)
	}
	f.mu.Lock()
	f.req = req
	f.mu.Unlock()
	w.Header().Set("Content-Type", f.contentType)
	w.WriteHeader(f.status)
	w.Write(f.body)
}

func (f *fakeOpenAI) lastRequest() *canonical.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.req
}

func newClient(t *testing.T, f *fakeOpenAI) openai.Client {
	f.t = t
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
}

func readGolden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func hello() responses.ResponseNewParams {
	return responses.ResponseNewParams{Model: "gpt-4.1", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}
}

// streamed is what a client reassembles from a Responses stream.
type streamed struct {
	types    []string
	text     map[string]*strings.Builder // deltas per item_id
	refusal  map[string]*strings.Builder
	args     map[string]*strings.Builder
	terminal *responses.Response
	errEvent *responses.ResponseErrorEvent
	errRaw   string
}

func readStream(t *testing.T, stream interface {
	Next() bool
	Current() responses.ResponseStreamEventUnion
	Err() error
}) *streamed {
	t.Helper()
	s := &streamed{text: map[string]*strings.Builder{}, refusal: map[string]*strings.Builder{}, args: map[string]*strings.Builder{}}
	add := func(m map[string]*strings.Builder, id, delta string) {
		if m[id] == nil {
			m[id] = &strings.Builder{}
		}
		m[id].WriteString(delta)
	}
	wantSeq := int64(0)
	for stream.Next() {
		ev := stream.Current()
		if s.terminal != nil {
			t.Errorf("event %s after the terminal event", ev.Type)
		}
		if ev.SequenceNumber != wantSeq || !ev.JSON.SequenceNumber.Valid() {
			t.Errorf("event %d (%s) has sequence_number %d", wantSeq, ev.Type, ev.SequenceNumber)
		}
		wantSeq++
		s.types = append(s.types, ev.Type)
		switch ev.Type {
		case "response.created", "response.in_progress":
			r := ev.Response
			if r.ID != testMeta.ID || r.Status != "in_progress" || r.JSON.Usage.Valid() {
				t.Errorf("%s: id %q status %q usage %+v", ev.Type, r.ID, r.Status, r.Usage)
			}
		case "response.output_text.delta":
			d := ev.AsResponseOutputTextDelta()
			add(s.text, d.ItemID, d.Delta)
		case "response.output_text.done":
			d := ev.AsResponseOutputTextDone()
			if got := s.text[d.ItemID].String(); d.Text != got {
				t.Errorf("output_text.done %q, deltas %q", d.Text, got)
			}
		case "response.refusal.delta":
			d := ev.AsResponseRefusalDelta()
			add(s.refusal, d.ItemID, d.Delta)
		case "response.refusal.done":
			d := ev.AsResponseRefusalDone()
			if got := s.refusal[d.ItemID].String(); d.Refusal != got {
				t.Errorf("refusal.done %q, deltas %q", d.Refusal, got)
			}
		case "response.function_call_arguments.delta":
			d := ev.AsResponseFunctionCallArgumentsDelta()
			add(s.args, d.ItemID, d.Delta)
		case "response.function_call_arguments.done":
			d := ev.AsResponseFunctionCallArgumentsDone()
			got := ""
			if s.args[d.ItemID] != nil {
				got = s.args[d.ItemID].String()
			}
			if d.Arguments != got && !(got == "" && d.Arguments == "{}") {
				t.Errorf("function_call_arguments.done %q, deltas %q", d.Arguments, got)
			}
		case "response.output_item.added":
			if it := ev.AsResponseOutputItemAdded().Item; it.Status != "in_progress" {
				t.Errorf("added item status %q", it.Status)
			}
		case "error":
			e := ev.AsError()
			s.errEvent, s.errRaw = &e, ev.RawJSON()
		case "response.completed":
			r := ev.AsResponseCompleted().Response
			s.terminal = &r
		case "response.incomplete":
			r := ev.AsResponseIncomplete().Response
			s.terminal = &r
		case "response.failed":
			r := ev.AsResponseFailed().Response
			s.terminal = &r
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream error: %v", err)
	}
	return s
}

func TestSDKReadsStream(t *testing.T) {
	for _, tc := range streamCases {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeOpenAI{status: 200, contentType: "text/event-stream", body: readGolden(t, "stream/"+tc.name+".sse")}
			client := newClient(t, f)
			stream := client.Responses.NewStreaming(context.Background(), hello())
			defer stream.Close()
			s := readStream(t, stream)
			if req := f.lastRequest(); req == nil || !req.Stream || !req.IncludeUsage {
				t.Errorf("decoded SDK request = %+v", req)
			}
			if s.terminal == nil {
				t.Fatalf("no terminal event in %v", s.types)
			}
			r := s.terminal
			if r.ID != testMeta.ID || r.Model != testMeta.Model || int64(r.CreatedAt) != testMeta.Created || string(r.Status) != tc.status {
				t.Errorf("terminal response: id %q model %q created %v status %q, want status %q", r.ID, r.Model, r.CreatedAt, r.Status, tc.status)
			}
			if r.IncompleteDetails.Reason != tc.reason {
				t.Errorf("incomplete reason %q, want %q", r.IncompleteDetails.Reason, tc.reason)
			}
			checkOutput(t, r, tc.text, tc.refusal, tc.toolCalls)
			var deltas strings.Builder
			for _, it := range r.Output {
				if b := s.text[it.ID]; b != nil {
					deltas.WriteString(b.String())
				}
			}
			if deltas.String() != tc.text {
				t.Errorf("text deltas %q, want %q", deltas.String(), tc.text)
			}

			if tc.interrupt != nil {
				// The point of the typed interruption: an error event, then
				// response.failed, never response.completed.
				if n := len(s.types); n < 2 || s.types[n-2] != "error" || s.types[n-1] != "response.failed" {
					t.Fatalf("interrupted stream ends %v", s.types)
				}
				for _, typ := range s.types {
					if typ == "response.completed" {
						t.Fatal("an interrupted stream carried response.completed")
					}
				}
				e := s.errEvent
				if e.Code != "stream_interrupted" || e.Message != tc.interrupt.Message || e.JSON.Param.Raw() != "null" {
					t.Errorf("error event %+v", e)
				}
				var extra struct {
					Retryable       bool `json:"retryable"`
					DeliveredTokens int  `json:"delivered_tokens"`
				}
				if err := json.Unmarshal([]byte(s.errRaw), &extra); err != nil || !extra.Retryable || extra.DeliveredTokens != tc.delivered {
					t.Errorf("error event %s lacks the retry hint or delivered count", s.errRaw)
				}
				if r.Error.Code != "server_error" || r.Error.Message != tc.interrupt.Message || r.JSON.Usage.Valid() {
					t.Errorf("failed response error %+v usage %+v", r.Error, r.Usage)
				}
				return
			}
			if s.errEvent != nil {
				t.Errorf("unexpected error event %s", s.errRaw)
			}
			u := r.Usage
			if u.InputTokens != int64(tc.usage.InputTokens) || u.OutputTokens != int64(tc.usage.OutputTokens) ||
				u.TotalTokens != int64(tc.usage.InputTokens+tc.usage.OutputTokens) ||
				u.InputTokensDetails.CachedTokens != int64(tc.usage.CachedInputTokens) ||
				u.OutputTokensDetails.ReasoningTokens != int64(tc.usage.ReasoningTokens) {
				t.Errorf("usage %+v, want %+v", u, tc.usage)
			}
			if (tc.status == "completed") != (r.CompletedAt == testNow) {
				t.Errorf("completed_at %v for status %s", r.CompletedAt, r.Status)
			}
		})
	}
}

// checkOutput compares a response's output items with what the answer was.
func checkOutput(t *testing.T, r *responses.Response, text, refusal string, calls []canonical.ToolCall) {
	t.Helper()
	if got := r.OutputText(); got != text {
		t.Errorf("OutputText() = %q, want %q", got, text)
	}
	var gotRefusal strings.Builder
	var gotCalls []canonical.ToolCall
	ids := map[string]bool{}
	for i, it := range r.Output {
		if ids[it.ID] || it.ID == "" {
			t.Errorf("output %d: item id %q empty or repeated", i, it.ID)
		}
		ids[it.ID] = true
		switch it.Type {
		case "message":
			m := it.AsMessage()
			if m.Role != "assistant" || !strings.HasPrefix(m.ID, "msg_") {
				t.Errorf("message item %+v", m)
			}
			for _, c := range m.Content {
				if c.Type == "refusal" {
					gotRefusal.WriteString(c.Refusal)
				}
			}
		case "function_call":
			fc := it.AsFunctionCall()
			if !strings.HasPrefix(fc.ID, "fc_") {
				t.Errorf("function_call id %q", fc.ID)
			}
			gotCalls = append(gotCalls, canonical.ToolCall{ID: fc.CallID, Name: fc.Name, Arguments: fc.Arguments})
		default:
			t.Errorf("output %d has type %q", i, it.Type)
		}
	}
	if gotRefusal.String() != refusal {
		t.Errorf("refusal %q, want %q", gotRefusal.String(), refusal)
	}
	if len(gotCalls) != len(calls) {
		t.Fatalf("function calls %+v, want %+v", gotCalls, calls)
	}
	for i, want := range calls {
		if want.Arguments == "" {
			want.Arguments = "{}"
		}
		if gotCalls[i] != want {
			t.Errorf("function call %d = %+v, want %+v", i, gotCalls[i], want)
		}
	}
}

func TestSDKReadsResponse(t *testing.T) {
	for _, tc := range responseCases {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeOpenAI{status: 200, contentType: "application/json", body: readGolden(t, "response/"+tc.name+".json")}
			client := newClient(t, f)
			got, err := client.Responses.New(context.Background(), hello())
			if err != nil {
				t.Fatal(err)
			}
			status, reason := outcome(tc.resp.Stop)
			if got.ID != testMeta.ID || got.Model != testMeta.Model || int64(got.CreatedAt) != testMeta.Created ||
				string(got.Status) != status || got.IncompleteDetails.Reason != reason || got.Object != "response" {
				t.Fatalf("got id %q model %q status %q reason %q", got.ID, got.Model, got.Status, got.IncompleteDetails.Reason)
			}
			checkOutput(t, got, tc.resp.Text, tc.resp.Refusal, tc.resp.ToolCalls)
			u, want := got.Usage, tc.resp.Usage
			if u.InputTokens != int64(want.InputTokens) || u.OutputTokens != int64(want.OutputTokens) ||
				u.InputTokensDetails.CachedTokens != int64(want.CachedInputTokens) ||
				u.InputTokensDetails.CacheWriteTokens != int64(want.CacheWriteTokens) ||
				u.OutputTokensDetails.ReasoningTokens != int64(want.ReasoningTokens) ||
				u.TotalTokens != int64(want.InputTokens+want.OutputTokens) {
				t.Errorf("usage %+v, want %+v", u, want)
			}
			if got.JSON.ExtraFields["store"].Raw() != "false" || got.Background || got.PreviousResponseID != "" {
				t.Errorf("a stateless response claims store %s background %v previous %q", got.JSON.ExtraFields["store"].Raw(), got.Background, got.PreviousResponseID)
			}
			if tc.req.Temperature != nil && got.Temperature != *tc.req.Temperature {
				t.Errorf("temperature echo %v", got.Temperature)
			}
		})
	}
}

func TestSDKReadsErrors(t *testing.T) {
	for _, tc := range errorCases {
		t.Run(strconv.Itoa(tc.e.Status), func(t *testing.T) {
			f := &fakeOpenAI{status: tc.e.Status, contentType: "application/json", body: readGolden(t, "error/"+strconv.Itoa(tc.e.Status)+".json")}
			client := newClient(t, f)
			_, err := client.Responses.New(context.Background(), hello())
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("error %v (%T), want *openai.Error", err, err)
			}
			if apiErr.StatusCode != tc.e.Status || apiErr.Code != tc.e.Code || apiErr.Type != tc.wantType ||
				apiErr.Param != tc.e.Param || apiErr.Message != tc.e.Message {
				t.Errorf("SDK saw status %d code %q type %q param %q message %q; want %+v type %q",
					apiErr.StatusCode, apiErr.Code, apiErr.Type, apiErr.Param, apiErr.Message, tc.e, tc.wantType)
			}
		})
	}
}

func callOutput(callID, output string) responses.ResponseInputItemUnionParam {
	it := responses.ResponseInputItemParamOfFunctionCallOutput(output)
	it.OfFunctionCallOutput.CallID = openai.String(callID)
	return it
}

// TestSDKToolLoop runs a whole stateless tool round trip as a Responses
// client does: a rich first request, the streamed parallel calls taken from
// response.completed, then the follow-up that sends the whole conversation
// back (the earlier input, the output items via ToParam, the results),
// which Decode must map back to one assistant turn with the tool names.
func TestSDKToolLoop(t *testing.T) {
	f := &fakeOpenAI{status: 200, contentType: "text/event-stream", body: readGolden(t, "stream/parallel_tools.sse")}
	client := newClient(t, f)
	tools := []responses.ToolUnionParam{
		{OfFunction: &responses.FunctionToolParam{
			Name:        "get_weather",
			Description: openai.String("Current weather."),
			Parameters:  map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
			Strict:      openai.Bool(true),
		}},
		{OfFunction: &responses.FunctionToolParam{Name: "get_time", Strict: openai.Bool(false)}},
		{OfFunction: &responses.FunctionToolParam{Name: "ping"}},
	}
	input := responses.ResponseInputParam{
		responses.ResponseInputItemParamOfMessage("Use metric units.", responses.EasyInputMessageRoleDeveloper),
		{OfMessage: &responses.EasyInputMessageParam{Role: responses.EasyInputMessageRoleUser, Content: responses.EasyInputMessageContentUnionParam{
			OfInputItemContentList: responses.ResponseInputMessageContentListParam{
				{OfInputText: &responses.ResponseInputTextParam{Text: "Weather here and time in Rome?"}},
				{OfInputImage: &responses.ResponseInputImageParam{ImageURL: openai.String("https://example.com/where.png"), Detail: responses.ResponseInputImageDetailLow}},
				{OfInputImage: &responses.ResponseInputImageParam{ImageURL: openai.String("data:image/jpeg;base64,/9j/4AAQ"), Detail: responses.ResponseInputImageDetailAuto}},
			},
		}}},
	}
	first := responses.ResponseNewParams{
		Model:             "gpt-4.1",
		Instructions:      openai.String("Be brief."),
		Input:             responses.ResponseNewParamsInputUnion{OfInputItemList: input},
		Tools:             tools,
		ToolChoice:        responses.ResponseNewParamsToolChoiceUnion{OfToolChoiceMode: openai.Opt(responses.ToolChoiceOptionsRequired)},
		ParallelToolCalls: openai.Bool(true),
		MaxOutputTokens:   openai.Int(300),
		Temperature:       openai.Float(0.2),
		TopP:              openai.Float(0.9),
		Store:             openai.Bool(false),
		User:              openai.String("u-1"),
		SafetyIdentifier:  openai.String("hash-1"),
		PromptCacheKey:    openai.String("k"),
		Metadata:          shared.Metadata{"team": "a"},
		Reasoning:         shared.ReasoningParam{Effort: shared.ReasoningEffortLow},
		Truncation:        responses.ResponseNewParamsTruncationDisabled,
		ServiceTier:       responses.ResponseNewParamsServiceTierAuto,
		Include:           []responses.ResponseIncludable{},
		StreamOptions:     responses.ResponseNewParamsStreamOptions{IncludeObfuscation: openai.Bool(false)},
	}
	stream := client.Responses.NewStreaming(context.Background(), first)
	s := readStream(t, stream)
	stream.Close()
	if s.terminal == nil {
		t.Fatal("no terminal response")
	}

	req := f.lastRequest()
	if req == nil {
		t.Fatal("no request decoded")
	}
	if req.System != "Be brief.\n\nUse metric units." || len(req.Messages) != 1 || len(req.Messages[0].Content) != 3 ||
		req.Messages[0].Content[1].ImageURL != "https://example.com/where.png" || req.Messages[0].Content[2].MediaType != "image/jpeg" {
		t.Errorf("first request: %+v", req)
	}
	if len(req.Tools) != 3 || req.Tools[0].Name != "get_weather" || !req.Tools[0].Strict || req.Tools[0].Description != "Current weather." ||
		req.Tools[1].Strict || req.ToolChoice == nil || req.ToolChoice.Mode != canonical.ToolChoiceRequired ||
		req.ParallelToolCalls == nil || !*req.ParallelToolCalls || req.MaxTokens != 300 || *req.Temperature != 0.2 || *req.TopP != 0.9 || !req.Stream {
		t.Errorf("first request: %+v", req)
	}

	// The follow-up: everything again, plus the output items and results,
	// asking for structured output and naming one tool.
	f.contentType, f.body = "application/json", readGolden(t, "response/text.json")
	next := append(responses.ResponseInputParam{}, input...)
	var calls []responses.ResponseFunctionToolCall
	for _, it := range s.terminal.Output {
		switch it.Type {
		case "message":
			p := it.AsMessage().ToParam()
			next = append(next, responses.ResponseInputItemUnionParam{OfOutputMessage: &p})
		case "function_call":
			fc := it.AsFunctionCall()
			calls = append(calls, fc)
			p := fc.ToParam()
			next = append(next, responses.ResponseInputItemUnionParam{OfFunctionCall: &p})
		}
	}
	if len(calls) != 3 {
		t.Fatalf("calls %+v", calls)
	}
	next = append(next,
		callOutput(calls[1].CallID, "14:05"),
		responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
			CallID: openai.String(calls[0].CallID),
			Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfResponseFunctionCallOutputItemArray: responses.ResponseFunctionCallOutputItemListParam{
				{OfInputText: &responses.ResponseInputTextContentParam{Text: "sunny"}},
			}},
		}},
		callOutput(calls[2].CallID, "pong"),
		responses.ResponseInputItemParamOfMessage("Thanks. Summarise.", responses.EasyInputMessageRoleUser),
	)
	second := responses.ResponseNewParams{
		Model:      "gpt-4.1",
		Input:      responses.ResponseNewParamsInputUnion{OfInputItemList: next},
		Tools:      tools,
		ToolChoice: responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: "get_time"}},
		Text: responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{
			Name: "answer", Schema: map[string]any{"type": "object"}, Strict: openai.Bool(true),
		}}, Verbosity: responses.ResponseTextConfigVerbosityLow},
	}
	if _, err := client.Responses.New(context.Background(), second); err != nil {
		t.Fatal(err)
	}
	req = f.lastRequest()
	if req == nil || len(req.Messages) != 6 {
		t.Fatalf("second request: %+v", req)
	}
	asst, r1, r2, r3, user := req.Messages[1], req.Messages[2], req.Messages[3], req.Messages[4], req.Messages[5]
	if asst.Role != canonical.RoleAssistant || asst.Text() != "Checking both." || len(asst.ToolCalls) != 3 ||
		asst.ToolCalls[0] != (canonical.ToolCall{ID: "call_a", Name: "get_weather", Arguments: `{"city":"Paris"}`}) ||
		asst.ToolCalls[2] != (canonical.ToolCall{ID: "call_c", Name: "ping", Arguments: `{}`}) {
		t.Errorf("assistant turn: %+v", asst)
	}
	if r1.Role != canonical.RoleTool || r1.ToolCallID != "call_b" || r1.ToolName != "get_time" || r1.Text() != "14:05" ||
		r2.ToolCallID != "call_a" || r2.ToolName != "get_weather" || r2.Text() != "sunny" ||
		r3.ToolCallID != "call_c" || r3.ToolName != "ping" || user.Role != canonical.RoleUser || user.Text() != "Thanks. Summarise." {
		t.Errorf("tool results: %+v %+v %+v %+v", r1, r2, r3, user)
	}
	if req.ToolChoice == nil || *req.ToolChoice != (canonical.ToolChoice{Mode: canonical.ToolChoiceTool, Name: "get_time"}) ||
		req.ResponseFormat == nil || req.ResponseFormat.Type != canonical.FormatJSONSchema || req.ResponseFormat.Name != "answer" ||
		string(req.ResponseFormat.Schema) != `{"type":"object"}` || !req.ResponseFormat.Strict || req.Stream {
		t.Errorf("second request: %+v", req)
	}
}
