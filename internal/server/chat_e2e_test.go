package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// chatResult is what an openai-go caller saw.
type chatResult struct {
	text      string
	toolCalls []openai.ChatCompletionMessageToolCallUnion
	finish    string
	usage     openai.CompletionUsage
	resp      *http.Response
	err       error
	chunks    int
}

func chat(t *testing.T, h *harness, stream bool, p openai.ChatCompletionNewParams) chatResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var r chatResult
	c := h.client(option.WithResponseInto(&r.resp))
	if !stream {
		cc, err := c.Chat.Completions.New(ctx, p)
		r.err = err
		if err == nil && len(cc.Choices) > 0 {
			r.text = cc.Choices[0].Message.Content
			r.toolCalls = cc.Choices[0].Message.ToolCalls
			r.finish = cc.Choices[0].FinishReason
			r.usage = cc.Usage
		}
		return r
	}
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	s := c.Chat.Completions.NewStreaming(ctx, p)
	acc := openai.ChatCompletionAccumulator{}
	for s.Next() {
		acc.AddChunk(s.Current())
		r.chunks++
	}
	r.err = s.Err()
	if len(acc.Choices) > 0 {
		r.text = acc.Choices[0].Message.Content
		r.toolCalls = acc.Choices[0].Message.ToolCalls
		r.finish = acc.Choices[0].FinishReason
	}
	r.usage = acc.Usage
	return r
}

func hello() openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:               publicModel,
		Messages:            []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage("Say hello.")},
		MaxCompletionTokens: openai.Int(64),
	}
}

func modes(t *testing.T, f func(t *testing.T, stream bool)) {
	for _, stream := range []bool{false, true} {
		name := "plain"
		if stream {
			name = "stream"
		}
		t.Run(name, func(t *testing.T) { f(t, stream) })
	}
}

func TestChatSuccess(t *testing.T) {
	for _, kind := range []string{"openai", "anthropic"} {
		t.Run(kind, func(t *testing.T) {
			modes(t, func(t *testing.T, stream bool) {
				h := newHarness(t, rungSpec{"primary", kind}, rungSpec{"secondary", "openai"})
				r := chat(t, h, stream, hello())
				if r.err != nil {
					t.Fatal(r.err)
				}
				if !strings.Contains(r.text, "primary") || r.finish != "stop" {
					t.Errorf("text %q finish %q: want the primary's answer, finish stop", r.text, r.finish)
				}
				if r.usage.CompletionTokens == 0 || r.usage.PromptTokens == 0 {
					t.Errorf("usage = %+v, want counts", r.usage)
				}
				for k, want := range map[string]string{
					"X-Spillway-Deployment": "primary", "X-Spillway-Attempts": "1",
					"X-Spillway-Trail": "primary=ok", "X-Spillway-Model": exactModel,
				} {
					if got := hdr(r.resp, k); got != want {
						t.Errorf("%s = %q, want %q", k, got, want)
					}
				}
				if hdr(r.resp, "X-Request-Id") == "" {
					t.Error("no X-Request-Id")
				}
				if c := h.counts(); c["primary"] != 1 || c["secondary"] != 0 {
					t.Errorf("upstream requests = %v", c)
				}
			})
		})
	}
}

// Every failover-eligible class on the primary: the secondary serves, and
// the trail says what happened.
func TestChatFailoverClasses(t *testing.T) {
	tests := []struct {
		kind, fault, class string
		streamOnly         bool
	}{
		{"openai", "status=500", "provider_unavailable", false},
		{"openai", "status=503", "provider_unavailable", false},
		{"anthropic", "status=529", "provider_unavailable", false},
		{"openai", "status=429;retry_after=3", "throttled", false},
		{"anthropic", "status=429", "throttled", false},
		{"openai", "status=429;error_code=insufficient_quota", "provider_credit_exhausted", false},
		{"anthropic", "status=402", "provider_credit_exhausted", false},
		{"anthropic", "status=400;error_type=invalid_request_error;message=Your credit balance is too low to access the Anthropic API.", "provider_credit_exhausted", false},
		{"openai", "status=401", "provider_authentication", false},
		{"anthropic", "status=403", "provider_authentication", false},
		{"openai", "status=404", "provider_binding_invalid", false},
		{"anthropic", "status=404", "provider_binding_invalid", false},
		{"openai", "stall", "provider_unavailable", false},
		{"anthropic", "stall", "provider_unavailable", false},
		{"openai", "malformed_after=0", "provider_unavailable", true},
		{"anthropic", "error_after=0", "provider_unavailable", true},
		{"anthropic", "die_after=0", "provider_unavailable", true},
		// A stream that ends without its terminal event before any content
		// is a failure, and before commit it fails over.
		{"openai", "tokens=0;no_terminal", "provider_unavailable", true},
		{"anthropic", "tokens=0;no_terminal", "provider_unavailable", true},
	}
	for _, tt := range tests {
		t.Run(tt.kind+" "+tt.fault, func(t *testing.T) {
			modes(t, func(t *testing.T, stream bool) {
				if tt.streamOnly && !stream {
					t.Skip("stream fault")
				}
				other := map[string]string{"openai": "anthropic", "anthropic": "openai"}[tt.kind]
				h := newHarness(t, rungSpec{"primary", tt.kind}, rungSpec{"secondary", other})
				h.fault("primary", tt.fault)
				r := chat(t, h, stream, hello())
				if r.err != nil {
					t.Fatalf("caller saw %v", r.err)
				}
				if !strings.Contains(r.text, "secondary") {
					t.Errorf("text = %q, want the secondary's answer", r.text)
				}
				wantTrail := "primary=" + tt.class + ", secondary=ok"
				if got := hdr(r.resp, "X-Spillway-Trail"); got != wantTrail {
					t.Errorf("trail = %q, want %q", got, wantTrail)
				}
				if hdr(r.resp, "X-Spillway-Deployment") != "secondary" || hdr(r.resp, "X-Spillway-Attempts") != "2" {
					t.Errorf("deployment %q attempts %q", hdr(r.resp, "X-Spillway-Deployment"), hdr(r.resp, "X-Spillway-Attempts"))
				}
			})
		})
	}
}

func TestChatCallerErrorGoesBackOnce(t *testing.T) {
	modes(t, func(t *testing.T, stream bool) {
		h := newHarness(t, rungSpec{"primary", "openai"}, rungSpec{"secondary", "anthropic"})
		h.fault("primary", "status=400;message=messages[0].content is too long for req_abc123xyz987")
		r := chat(t, h, stream, hello())
		var apiErr *openai.Error
		if !errors.As(r.err, &apiErr) || apiErr.StatusCode != 400 {
			t.Fatalf("err = %v, want a 400", r.err)
		}
		if !strings.Contains(apiErr.Message, "too long") || strings.Contains(apiErr.Message, "req_abc123") {
			t.Errorf("message %q: want the provider's words about the request, without its request id", apiErr.Message)
		}
		if c := h.counts(); c["primary"] != 1 || c["secondary"] != 0 {
			t.Errorf("upstream requests = %v, want exactly one to the primary", c)
		}
		if got := hdr(r.resp, "X-Spillway-Trail"); got != "primary=invalid_request" {
			t.Errorf("trail = %q", got)
		}
	})
}

func TestChatProviderDetailNeverReachesCaller(t *testing.T) {
	for _, fault := range []string{"status=401", "status=403", "status=404", "status=402", "status=500"} {
		t.Run(fault, func(t *testing.T) {
			modes(t, func(t *testing.T, stream bool) {
				h := newHarness(t, rungSpec{"primary", "anthropic"}, rungSpec{"secondary", "anthropic"})
				h.fault("primary", fault+";message=invalid x-api-key sk-ant-api03-SECRET for organization org-123456 balance $4.20")
				h.fault("secondary", fault+";message=invalid x-api-key sk-ant-api03-SECRET for organization org-123456 balance $4.20")
				r := chat(t, h, stream, hello())
				var apiErr *openai.Error
				if !errors.As(r.err, &apiErr) || apiErr.StatusCode != 502 || apiErr.Code != "upstream_error" {
					t.Fatalf("err = %v, want 502 upstream_error", r.err)
				}
				raw := apiErr.RawJSON()
				for _, leak := range []string{"sk-ant", "SECRET", "org-123456", "4.20", "x-api-key"} {
					if strings.Contains(raw, leak) {
						t.Errorf("caller saw %q in %s", leak, raw)
					}
				}
			})
		})
	}
}

func TestChatThrottledEverywhere(t *testing.T) {
	modes(t, func(t *testing.T, stream bool) {
		h := newHarness(t, rungSpec{"primary", "openai"}, rungSpec{"secondary", "anthropic"})
		h.fault("primary", "status=429;retry_after=2")
		h.fault("secondary", "status=429;retry_after=5")
		r := chat(t, h, stream, hello())
		var apiErr *openai.Error
		if !errors.As(r.err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Code != "rate_limit_exceeded" {
			t.Fatalf("err = %v, want 429 rate_limit_exceeded", r.err)
		}
		if got := apiErr.Response.Header.Get("Retry-After"); got != "5" {
			t.Errorf("Retry-After = %q, want the last rung's 5", got)
		}
		if got := apiErr.Response.Header.Get("X-Spillway-Trail"); got != "primary=throttled, secondary=throttled" {
			t.Errorf("trail = %q", got)
		}
	})
}

func TestChatFirstByteStallFailsOverWithinBound(t *testing.T) {
	h := newHarness(t, rungSpec{"primary", "openai"}, rungSpec{"secondary", "anthropic"})
	h.fault("primary", "stall")
	begin := time.Now()
	r := chat(t, h, true, hello())
	took := time.Since(begin)
	if r.err != nil || hdr(r.resp, "X-Spillway-Deployment") != "secondary" {
		t.Fatalf("err %v, deployment %q", r.err, hdr(r.resp, "X-Spillway-Deployment"))
	}
	// The bound is 400ms; anything near the overall deadline means the
	// first-byte bound did not fire.
	if took > 10*testFirstByte {
		t.Errorf("failover took %v with a first-byte bound of %v", took, testFirstByte)
	}
}

// rawStream posts a streaming request and returns the body's data lines.
func rawStream(t *testing.T, h *harness, body string) (*http.Response, []string) {
	t.Helper()
	resp, err := h.post("/v1/chat/completions", body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "data: ") {
			lines = append(lines, strings.TrimPrefix(l, "data: "))
		}
	}
	return resp, lines
}

func TestChatMidStreamDeath(t *testing.T) {
	for _, fault := range []string{"die_after=3", "error_after=3", "no_terminal", "malformed_after=3", "stall_after=3"} {
		for _, kind := range []string{"openai", "anthropic"} {
			t.Run(kind+" "+fault, func(t *testing.T) {
				h := newHarness(t, rungSpec{"primary", kind}, rungSpec{"secondary", "openai"})
				h.fault("primary", fault)
				begin := time.Now()
				r := chat(t, h, true, hello())
				// A stalled stream ends within the idle bound, not the overall
				// deadline.
				if took := time.Since(begin); took > 10*testIdle {
					t.Errorf("the broken stream took %v to end with an idle bound of %v", took, testIdle)
				}
				if r.err == nil {
					t.Fatalf("the SDK saw a normal end of a broken stream (text %q)", r.text)
				}
				if r.text == "" {
					t.Error("no content was delivered before the break")
				}
				if c := h.counts(); c["secondary"] != 0 {
					t.Errorf("failed over after commit: %v", c)
				}
				h.mocks["primary"].Reset()
				_, lines := rawStream(t, h, `{"model":"`+publicModel+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
				if len(lines) == 0 {
					t.Fatal("no events")
				}
				last := lines[len(lines)-1]
				for _, l := range lines {
					if l == "[DONE]" {
						t.Fatal("a broken stream ended with [DONE]")
					}
				}
				var ev struct {
					Error struct {
						Type            string `json:"type"`
						Code            string `json:"code"`
						Retryable       bool   `json:"retryable"`
						DeliveredTokens *int   `json:"delivered_tokens"`
					} `json:"error"`
				}
				if err := json.Unmarshal([]byte(last), &ev); err != nil || ev.Error.Type != "stream_interrupted" || !ev.Error.Retryable || ev.Error.DeliveredTokens == nil {
					t.Fatalf("last event %s: want a typed stream_interrupted error", last)
				}
				if fault != "no_terminal" && *ev.Error.DeliveredTokens != 3 {
					t.Errorf("delivered_tokens = %d, want 3", *ev.Error.DeliveredTokens)
				}
			})
		}
	}
}

func TestChatToolCallsSurviveFailover(t *testing.T) {
	for _, kinds := range [][2]string{{"anthropic", "openai"}, {"openai", "anthropic"}} {
		t.Run(kinds[0]+" to "+kinds[1], func(t *testing.T) {
			modes(t, func(t *testing.T, stream bool) {
				h := newHarness(t, rungSpec{"primary", kinds[0]}, rungSpec{"secondary", kinds[1]})
				h.fault("primary", "status=503")
				p := hello()
				p.Tools = []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
					Name:       "get_weather",
					Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
				})}
				r := chat(t, h, stream, p)
				if r.err != nil {
					t.Fatal(r.err)
				}
				if len(r.toolCalls) != 1 || r.finish != "tool_calls" {
					t.Fatalf("tool calls %+v finish %q", r.toolCalls, r.finish)
				}
				tc := r.toolCalls[0]
				var args map[string]any
				if tc.Function.Name != "get_weather" || json.Unmarshal([]byte(tc.Function.Arguments), &args) != nil || tc.ID == "" {
					t.Errorf("tool call = %+v: want get_weather with JSON arguments and an id", tc)
				}
				if hdr(r.resp, "X-Spillway-Deployment") != "secondary" {
					t.Errorf("served by %q", hdr(r.resp, "X-Spillway-Deployment"))
				}
			})
		})
	}
}

// Bad input never reaches a provider.
func TestChatBadInput(t *testing.T) {
	big := `{"model":"` + publicModel + `","messages":[{"role":"user","content":"` + strings.Repeat("x", 70<<10) + `"}]}`
	tests := []struct {
		name, body string
		status     int
		param      string
	}{
		{"malformed JSON", `{"model":`, 400, ""},
		{"not an object", `[1,2]`, 400, ""},
		{"missing messages", `{"model":"` + publicModel + `"}`, 400, "messages"},
		{"empty messages", `{"model":"` + publicModel + `","messages":[]}`, 400, "messages"},
		{"missing model", `{"messages":[{"role":"user","content":"hi"}]}`, 400, "model"},
		{"unknown model", `{"model":"gpt-99","messages":[{"role":"user","content":"hi"}]}`, 404, "model"},
		{"n=2", `{"model":"` + publicModel + `","n":2,"messages":[{"role":"user","content":"hi"}]}`, 400, "n"},
		{"temperature out of range", `{"model":"` + publicModel + `","temperature":5,"messages":[{"role":"user","content":"hi"}]}`, 400, "temperature"},
		{"bad role", `{"model":"` + publicModel + `","messages":[{"role":"wizard","content":"hi"}]}`, 400, "messages[0].role"},
		{"unknown field", `{"model":"` + publicModel + `","frobnicate":1,"messages":[{"role":"user","content":"hi"}]}`, 400, "frobnicate"},
		{"body over the limit", big, 413, ""},
	}
	h := newHarness(t, rungSpec{"primary", "openai"}, rungSpec{"secondary", "anthropic"})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := h.post("/v1/chat/completions", tt.body)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			var e struct {
				Error struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Param   *string `json:"param"`
					Code    string  `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(b, &e); err != nil || e.Error.Message == "" || e.Error.Type == "" {
				t.Fatalf("body %s: want OpenAI's error shape", b)
			}
			if resp.StatusCode != tt.status {
				t.Errorf("status = %d, want %d (%s)", resp.StatusCode, tt.status, b)
			}
			if tt.param != "" && (e.Error.Param == nil || *e.Error.Param != tt.param) {
				t.Errorf("param = %v, want %q (%s)", e.Error.Param, tt.param, b)
			}
		})
	}
	if c := h.counts(); c["primary"]+c["secondary"] != 0 {
		t.Errorf("bad input reached a provider: %v", c)
	}
}

func TestChatCallerDisconnectStopsUpstream(t *testing.T) {
	h := newHarness(t, rungSpec{"primary", "openai"}, rungSpec{"secondary", "anthropic"})
	h.fault("primary", "stall_after=2")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := h.client()
	s := c.Chat.Completions.NewStreaming(ctx, hello())
	got := 0
	for s.Next() {
		if got++; got == 2 {
			cancel()
		}
	}
	if s.Err() == nil {
		t.Fatal("want an error after cancelling")
	}
	// The gateway must neither fail over nor keep the upstream call open.
	deadline := time.Now().Add(5 * time.Second)
	for h.mocks["primary"].Active() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := h.mocks["primary"].Active(); n != 0 {
		t.Errorf("%d upstream requests still open after the caller left", n)
	}
	if c := h.counts(); c["secondary"] != 0 {
		t.Errorf("a caller disconnect walked the chain: %v", c)
	}
}

func TestModelsList(t *testing.T) {
	h := newHarness(t, rungSpec{"primary", "openai"})
	c := h.client()
	page, err := c.Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	if fmt.Sprint(ids) != "["+publicModel+"]" {
		t.Errorf("models = %v", ids)
	}
}

// cancelAfterChunks starts a stream and walks away after n chunks.
func cancelAfterChunks(t *testing.T, h *harness, n int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := h.client()
	s := c.Chat.Completions.NewStreaming(ctx, hello())
	got := 0
	for s.Next() {
		if got++; got == n {
			cancel()
		}
	}
	if s.Err() == nil {
		t.Fatal("want an error after cancelling")
	}
}

// The interrupt's retryable hint is honest: a provider that rejects the
// request itself mid-stream would reject it again, so the hint is false
// there and true for a provider failure.
func TestChatInterruptRetryableHint(t *testing.T) {
	for _, tt := range []struct {
		fault string
		want  bool
	}{
		{"error_after=3;error_type=overloaded_error", true},
		{"error_after=3;error_type=invalid_request_error", false},
	} {
		t.Run(tt.fault, func(t *testing.T) {
			h := newHarness(t, rungSpec{"primary", "anthropic"}, rungSpec{"secondary", "openai"})
			h.fault("primary", tt.fault)
			_, lines := rawStream(t, h, `{"model":"`+publicModel+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
			if len(lines) == 0 {
				t.Fatal("no events")
			}
			var ev struct {
				Error struct {
					Type      string `json:"type"`
					Message   string `json:"message"`
					Retryable *bool  `json:"retryable"`
				} `json:"error"`
			}
			last := lines[len(lines)-1]
			if err := json.Unmarshal([]byte(last), &ev); err != nil || ev.Error.Type != "stream_interrupted" || ev.Error.Retryable == nil {
				t.Fatalf("last event %s: want a typed stream_interrupted error", last)
			}
			if *ev.Error.Retryable != tt.want || strings.Contains(ev.Error.Message, "retry the request") != tt.want {
				t.Errorf("retryable %v, message %q; want retryable %v", *ev.Error.Retryable, ev.Error.Message, tt.want)
			}
		})
	}
}
