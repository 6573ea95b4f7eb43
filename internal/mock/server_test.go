package mock

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// The mocks reject what the real providers reject, with their real bodies.
func TestValidation(t *testing.T) {
	tests := []struct {
		kind, name, body string
		hdr              []string
		status           int
		typ, code, msg   string
	}{
		{"openai", "invalid JSON", `{"model":`, nil, 400, "invalid_request_error", "", "We could not parse the JSON body"},
		{"openai", "not an object", `[1]`, nil, 400, "invalid_request_error", "", "We could not parse the JSON body"},
		{"openai", "missing model", `{"messages":[{"role":"user","content":"hi"}]}`, nil, 400, "invalid_request_error", "", "you must provide a model parameter"},
		{"openai", "missing messages", `{"model":"gpt-4o"}`, nil, 400, "invalid_request_error", "missing_required_parameter", "Missing required parameter: 'messages'."},
		{"openai", "empty messages", `{"model":"gpt-4o","messages":[]}`, nil, 400, "invalid_request_error", "empty_array", "empty array"},
		{"openai", "bad role", `{"model":"gpt-4o","messages":[{"role":"robot","content":"hi"}]}`, nil, 400, "invalid_request_error", "invalid_value", "'robot'"},
		{"openai", "model type", `{"model":4,"messages":[{"role":"user","content":"hi"}]}`, nil, 400, "invalid_request_error", "invalid_type", "Invalid type for 'model'"},
		{"openai", "stream_options without stream", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"stream_options":{"include_usage":true}}`, nil, 400, "invalid_request_error", "", "only allowed when 'stream' is enabled"},
		{"openai", "max tokens 0", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":0}`, nil, 400, "invalid_request_error", "integer_below_min_value", "Expected a value >= 1"},
		{"openai", "tool_choice without tools", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"tool_choice":"auto"}`, nil, 400, "invalid_request_error", "", "only allowed when 'tools' are specified"},
		{"openai", "missing key", reqBody("openai", false, ""), []string{"Authorization", ""}, 401, "invalid_request_error", "", "You didn't provide an API key"},
		{"openai", "wrong key", reqBody("openai", false, ""), []string{"Authorization", "Bearer sk-wrong-123456"}, 401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided: sk-********3456"},
		{"anthropic", "invalid JSON", `{"model":`, nil, 400, "invalid_request_error", "", "not valid JSON"},
		{"anthropic", "missing model", `{"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, nil, 400, "invalid_request_error", "", "model: Field required"},
		{"anthropic", "missing max_tokens", `{"model":"claude","messages":[{"role":"user","content":"hi"}]}`, nil, 400, "invalid_request_error", "", "max_tokens: Field required"},
		{"anthropic", "missing messages", `{"model":"claude","max_tokens":5}`, nil, 400, "invalid_request_error", "", "messages: Field required"},
		{"anthropic", "empty messages", `{"model":"claude","max_tokens":5,"messages":[]}`, nil, 400, "invalid_request_error", "", "at least 1 item"},
		{"anthropic", "system role", `{"model":"claude","max_tokens":5,"messages":[{"role":"system","content":"hi"}]}`, nil, 400, "invalid_request_error", "", "messages.0.role: Input should be 'user' or 'assistant'"},
		{"anthropic", "max_tokens type", `{"model":"claude","max_tokens":"5","messages":[{"role":"user","content":"hi"}]}`, nil, 400, "invalid_request_error", "", "max_tokens: Input should be a valid"},
		{"anthropic", "bad tool_choice", `{"model":"claude","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"tool_choice":{"type":"sometimes"}}`, nil, 400, "invalid_request_error", "", "'sometimes'"},
		{"anthropic", "missing version", reqBody("anthropic", false, ""), []string{"anthropic-version", ""}, 400, "invalid_request_error", "", "anthropic-version: header is required"},
		{"anthropic", "missing key", reqBody("anthropic", false, ""), []string{"x-api-key", ""}, 401, "authentication_error", "", "x-api-key header is required"},
		{"anthropic", "wrong key", reqBody("anthropic", false, ""), []string{"x-api-key", "nope"}, 401, "authentication_error", "", "invalid x-api-key"},
		{"anthropic", "a wrong bearer key", reqBody("anthropic", false, ""), []string{"x-api-key", "", "Authorization", "Bearer sk-ant-bad"}, 401, "authentication_error", "", "invalid x-api-key"},
		{"anthropic", "unknown version", reqBody("anthropic", false, ""), []string{"anthropic-version", "2025-01-01"}, 400, "invalid_request_error", "", `anthropic-version: "2025-01-01" is not a valid version`},
		{"anthropic", "sampling under 2026-10-21", `{"model":"m","max_tokens":5,"temperature":1,"messages":[{"role":"user","content":"hi"}]}`, []string{"anthropic-version", "2026-10-21"}, 400, "invalid_request_error", "", "temperature: Extra inputs are not permitted with anthropic-version 2026-10-21"},
	}
	for _, tc := range tests {
		t.Run(tc.kind+"/"+tc.name, func(t *testing.T) {
			key := map[string]string{"openai": "sk-good-key-1234", "anthropic": "sk-ant-good"}[tc.kind]
			m, srv := newMock(t, tc.kind, Options{APIKey: key, Fault: "status=529"})
			auth := []string{"Authorization", "Bearer " + key}
			if tc.kind == "anthropic" {
				auth = []string{"x-api-key", key}
			}
			r := exchange(t, srv, tc.kind, tc.body, append(auth, tc.hdr...)...)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			typ, code, msg := errorBody(t, tc.kind, r)
			if typ != tc.typ || code != tc.code || !strings.Contains(msg, tc.msg) {
				t.Errorf("type %q code %q msg %q; want %q %q containing %q", typ, code, msg, tc.typ, tc.code, tc.msg)
			}
			if m.Count() != 1 {
				t.Errorf("rejected request not recorded: count %d", m.Count())
			}
		})
	}
}

func TestTooLarge(t *testing.T) {
	for _, kind := range kinds {
		m, srv := newMock(t, kind, Options{})
		m.maxBody = 1 << 10
		body := reqBody(kind, false, `"pad":"`+strings.Repeat("x", 1<<10)+`"`)
		r := exchange(t, srv, kind, body)
		typ, _, _ := errorBody(t, kind, r)
		if r.status != 413 || (kind == "anthropic") != (typ == "request_too_large") {
			t.Errorf("%s: %d %q", kind, r.status, typ)
		}
	}
}

func TestRoutes(t *testing.T) {
	tests := []struct {
		kind, method, path string
		status             int
	}{
		{"openai", "GET", "/v1/chat/completions", 405},
		{"openai", "POST", "/v1/messages", 404},
		{"openai", "GET", "/v1/nope", 404},
		{"openai", "POST", "/v1/models", 405},
		{"openai", "GET", "/v1/models", 200},
		{"openai", "GET", "/v1/models/gpt-4o", 200},
		{"anthropic", "GET", "/v1/messages", 405},
		{"anthropic", "POST", "/v1/chat/completions", 404},
		{"anthropic", "GET", "/v1/models", 404},
		{"openai", "GET", "/_mock/fault", 405},
		{"anthropic", "POST", "/_mock/stats", 405},
		{"openai", "GET", "/_mock/reset", 405},
	}
	for _, tc := range tests {
		m, srv := newMock(t, tc.kind, Options{})
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(`{}`))
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !json.Valid(b) {
			t.Errorf("%s %s %s: %d %s, want %d", tc.kind, tc.method, tc.path, resp.StatusCode, b, tc.status)
		}
		if m.Count() != 0 {
			t.Errorf("%s %s %s recorded as a generation request", tc.kind, tc.method, tc.path)
		}
	}
}

func TestControlEndpoints(t *testing.T) {
	for _, kind := range kinds {
		m, srv := newMock(t, kind, Options{})
		ctl := func(method, path, body string) (int, string) {
			req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, strings.TrimSpace(string(b))
		}
		if code, body := ctl("PUT", "/_mock/fault", "status=529;times=1"); code != 200 || body != `{"fault":"status=529;times=1"}` {
			t.Errorf("%s PUT fault: %d %s", kind, code, body)
		}
		if code, body := ctl("PUT", "/_mock/fault", "nonsense"); code != 400 || !strings.Contains(body, `unknown item`) {
			t.Errorf("%s PUT bad fault: %d %s", kind, code, body)
		}
		if r := exchange(t, srv, kind, reqBody(kind, false, "")); r.status != 529 {
			t.Errorf("%s: fault set over HTTP gave %d", kind, r.status)
		}
		exchange(t, srv, kind, reqBody(kind, false, ""))
		if code, body := ctl("GET", "/_mock/stats", ""); code != 200 || body != `{"requests":2}` {
			t.Errorf("%s stats: %d %s", kind, code, body)
		}
		if code, _ := ctl("POST", "/_mock/reset", ""); code != 200 || m.Count() != 0 || len(m.Requests()) != 0 {
			t.Errorf("%s reset: %d, count %d", kind, code, m.Count())
		}
		ctl("PUT", "/_mock/fault", "status=500")
		if code, body := ctl("PUT", "/_mock/fault", ""); code != 200 || body != `{"fault":""}` {
			t.Errorf("%s clear: %d %s", kind, code, body)
		}
		if r := exchange(t, srv, kind, reqBody(kind, false, "")); r.status != 200 {
			t.Errorf("%s: cleared fault still gives %d", kind, r.status)
		}
	}
}

func TestReceived(t *testing.T) {
	for _, kind := range kinds {
		m, srv := newMock(t, kind, Options{})
		body := reqBody(kind, true, "")
		exchange(t, srv, kind, body, "Idempotency-Key", "idem-1", "X-Custom", "v")
		exchange(t, srv, kind, reqBody(kind, false, ""))
		got := m.Requests()
		if len(got) != 2 {
			t.Fatalf("%s: %d requests", kind, len(got))
		}
		r := got[0]
		model := map[string]string{"openai": "gpt-4o", "anthropic": "claude-sonnet-4-5"}[kind]
		if r.Path != genPath(kind) || !r.Stream || r.Model != model || r.IdempotencyKey != "idem-1" ||
			r.Header.Get("X-Custom") != "v" || string(r.Body) != body || r.At.IsZero() {
			t.Errorf("%s: %+v", kind, r)
		}
		if got[1].Stream || got[1].IdempotencyKey != "" || got[1].At.Before(r.At) {
			t.Errorf("%s: second %+v", kind, got[1])
		}
		// Requests returns a copy.
		got[0].Path = "changed"
		if m.Requests()[0].Path == "changed" {
			t.Errorf("%s: Requests shares its slice", kind)
		}
	}
}

// Options.Model replaces the request's model in answers; Name shows in text.
func TestModelAndNameOptions(t *testing.T) {
	for _, kind := range kinds {
		_, srv := newMock(t, kind, Options{Model: "served-model", Name: "backup"})
		r := exchange(t, srv, kind, reqBody(kind, false, ""))
		var b struct {
			Model string `json:"model"`
		}
		json.Unmarshal(r.body, &b)
		if _, text := nonStreamUsage(t, kind, r.body); b.Model != "served-model" || !strings.HasPrefix(text, "mock backup ") {
			t.Errorf("%s: model %q text %q", kind, b.Model, text)
		}
	}
}

func TestResponseHeaders(t *testing.T) {
	want := map[string][]string{
		"openai": {"x-request-id", "openai-processing-ms", "openai-version", "x-ratelimit-limit-requests", "x-ratelimit-limit-tokens",
			"x-ratelimit-remaining-requests", "x-ratelimit-remaining-tokens", "x-ratelimit-reset-requests", "x-ratelimit-reset-tokens"},
		"anthropic": {"request-id", "anthropic-organization-id", "anthropic-ratelimit-requests-limit", "anthropic-ratelimit-requests-remaining",
			"anthropic-ratelimit-requests-reset", "anthropic-ratelimit-tokens-limit", "anthropic-ratelimit-input-tokens-limit",
			"anthropic-ratelimit-output-tokens-reset"},
	}
	cts := map[string][2]string{
		"openai":    {"application/json", "text/event-stream; charset=utf-8"},
		"anthropic": {"application/json", "text/event-stream; charset=utf-8"},
	}
	for _, kind := range kinds {
		_, srv := newMock(t, kind, Options{})
		for i, stream := range []bool{false, true} {
			resp, err := send(t, context.Background(), srv, kind, reqBody(kind, stream, ""))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			for _, h := range want[kind] {
				if resp.Header.Get(h) == "" {
					t.Errorf("%s stream=%v: no %s header", kind, stream, h)
				}
			}
			if ct := resp.Header.Get("Content-Type"); ct != cts[kind][i] {
				t.Errorf("%s stream=%v: content type %q", kind, stream, ct)
			}
		}
	}
}

// Without include_usage an OpenAI stream carries no usage at all: no usage
// chunk and no "usage":null.
func TestOpenAIStreamWithoutUsage(t *testing.T) {
	_, srv := newMock(t, "openai", Options{})
	r := exchange(t, srv, "openai", `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if strings.Contains(string(r.body), `"usage"`) || strings.Contains(string(r.body), `"error"`) {
		t.Errorf("stream without include_usage: %s", r.body)
	}
	evs, _ := events(r.body)
	if first := evs[0].data; !strings.Contains(first, `"delta":{"role":"assistant","content":"","refusal":null}`) {
		t.Errorf("first chunk %s", first)
	}
	if evs[len(evs)-1].data != "[DONE]" || !strings.Contains(evs[len(evs)-2].data, `"finish_reason":"stop"`) {
		t.Errorf("stream end %v", evs[len(evs)-2:])
	}
}
