package openai

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/provider"
)

func TestErrorStatuses(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		header     map[string]string
		body       string
		class      failure.Class
		retryAfter time.Duration
		typ, code  string
		param      string
	}{
		{name: "429 insufficient_quota is credit, not throttling", status: 429,
			body:  `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
			class: failure.ProviderCreditExhausted, typ: "insufficient_quota", code: "insufficient_quota"},
		{name: "429 rate limit with Retry-After seconds", status: 429, header: map[string]string{"Retry-After": "2"},
			body:  `{"error":{"message":"Rate limit reached for gpt-4o in organization org-abc123def on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000. Please try again in 1.2s.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
			class: failure.Throttled, retryAfter: 2 * time.Second, typ: "tokens", code: "rate_limit_exceeded"},
		{name: "429 retry-after-ms wins over Retry-After", status: 429, header: map[string]string{"Retry-After": "9", "retry-after-ms": "1500"},
			body:  `{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
			class: failure.Throttled, retryAfter: 1500 * time.Millisecond, typ: "requests", code: "rate_limit_exceeded"},
		{name: "402 OpenRouter credits", status: 402,
			body:  `{"error":{"code":402,"message":"Insufficient credits. Add more using https://openrouter.ai/credits"}}`,
			class: failure.ProviderCreditExhausted},
		{name: "401 invalid key", status: 401,
			body:  `{"error":{"message":"Incorrect API key provided: sk-test-****-123.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			class: failure.ProviderAuthentication, typ: "invalid_request_error", code: "invalid_api_key"},
		{name: "403 region", status: 403,
			body:  `{"error":{"message":"Country, region, or territory not supported","type":"request_forbidden","param":null,"code":"unsupported_country_region_territory"}}`,
			class: failure.ProviderAuthentication, typ: "request_forbidden", code: "unsupported_country_region_territory"},
		{name: "404 model", status: 404,
			body:  `{"error":{"message":"The model 'gpt-9' does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`,
			class: failure.ProviderBindingInvalid, typ: "invalid_request_error", code: "model_not_found"},
		{name: "400 context length names its param", status: 400,
			body:  `{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			class: failure.InvalidRequest, typ: "invalid_request_error", code: "context_length_exceeded", param: "messages"},
		{name: "413 plain text", status: 413, header: map[string]string{"Content-Type": "text/plain"}, body: `request entity too large`,
			class: failure.InvalidRequest},
		{name: "422 vLLM flat error shape", status: 422,
			body:  `{"object":"error","message":"max_tokens must be at least 1","type":"BadRequestError","param":null,"code":400}`,
			class: failure.InvalidRequest, typ: "BadRequestError"},
		{name: "500 server_error", status: 500,
			body:  `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`,
			class: failure.ProviderUnavailable, typ: "server_error"},
		{name: "502 html from a proxy", status: 502, header: map[string]string{"Content-Type": "text/html"}, body: `<html><body>Bad Gateway</body></html>`,
			class: failure.ProviderUnavailable},
		{name: "503 overloaded, empty body", status: 503, class: failure.ProviderUnavailable},
		{name: "504", status: 504, body: `{"error":"upstream timed out"}`, class: failure.ProviderUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tgt, _ := upstream(t, reply{status: tt.status, header: tt.header, body: tt.body})
			req := &canonical.Request{Messages: []canonical.Message{user("x")}}
			st, err := New().Stream(context.Background(), tgt, req)
			if st != nil {
				t.Fatal("a stream was returned for an error status")
			}
			fe := failure.As(err)
			if fe == nil {
				t.Fatalf("err = %v, want a *failure.Error", err)
			}
			if fe.Class != tt.class || fe.Status != tt.status || fe.RetryAfter != tt.retryAfter {
				t.Errorf("class %s status %d retry %v, want %s %d %v", fe.Class, fe.Status, fe.RetryAfter, tt.class, tt.status, tt.retryAfter)
			}
			if fe.ProviderType != tt.typ || fe.ProviderCode != tt.code || fe.Param != tt.param {
				t.Errorf("type %q code %q param %q, want %q %q %q", fe.ProviderType, fe.ProviderCode, fe.Param, tt.typ, tt.code, tt.param)
			}
			if fe.NoResponse {
				t.Error("NoResponse set on an answered request")
			}
			if strings.Contains(err.Error(), tgt.APIKey) {
				t.Error("the error leaks the API key")
			}
		})
	}
}

func TestTransportError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens: connection refused
	tgt := &provider.Target{BaseURL: "http://" + addr, Model: "m", APIKey: "sk-test-secret-key-123", HTTP: &http.Client{}}
	req := &canonical.Request{Messages: []canonical.Message{user("x")}}
	_, err = New().Stream(context.Background(), tgt, req)
	fe := failure.As(err)
	if fe == nil || fe.Class != failure.ProviderUnavailable || !fe.NoResponse {
		t.Fatalf("err = %#v, want provider_unavailable with NoResponse", err)
	}
	var opErr *net.OpError
	if !errors.As(err, &opErr) {
		t.Errorf("the cause is not wrapped: %v", err)
	}
	if strings.Contains(err.Error(), tgt.APIKey) {
		t.Error("the error leaks the API key")
	}
}
