package anthropic

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

func errBody(typ, msg string) string {
	return `{"type":"error","error":{"type":"` + typ + `","message":"` + msg + `"},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`
}

func TestErrorStatuses(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		header     map[string]string
		body       string
		class      failure.Class
		retryAfter time.Duration
		typ        string
	}{
		{name: "400 low credit balance is the provider account", status: 400,
			body:  errBody("invalid_request_error", "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."),
			class: failure.ProviderCreditExhausted, typ: "invalid_request_error"},
		{name: "529 overloaded", status: 529, body: errBody("overloaded_error", "Overloaded"),
			class: failure.ProviderUnavailable, typ: "overloaded_error"},
		{name: "429 rate limit with retry-after", status: 429, header: map[string]string{"Retry-After": "13"},
			body:  errBody("rate_limit_error", "This request would exceed the rate limit for your organization of 50 requests per minute."),
			class: failure.Throttled, retryAfter: 13 * time.Second, typ: "rate_limit_error"},
		{name: "429 retry-after-ms wins", status: 429, header: map[string]string{"Retry-After": "13", "Retry-After-Ms": "400"},
			body: errBody("rate_limit_error", "slow down"), class: failure.Throttled, retryAfter: 400 * time.Millisecond, typ: "rate_limit_error"},
		{name: "402 billing", status: 402, body: errBody("billing_error", "Payment required"),
			class: failure.ProviderCreditExhausted, typ: "billing_error"},
		{name: "401 auth", status: 401, body: errBody("authentication_error", "invalid x-api-key"),
			class: failure.ProviderAuthentication, typ: "authentication_error"},
		{name: "403 permission", status: 403, body: errBody("permission_error", "Your API key does not have permission to use the specified resource."),
			class: failure.ProviderAuthentication, typ: "permission_error"},
		{name: "404 model", status: 404, body: errBody("not_found_error", "model: claude-9"),
			class: failure.ProviderBindingInvalid, typ: "not_found_error"},
		{name: "400 invalid request", status: 400, body: errBody("invalid_request_error", "messages: text content blocks must be non-empty"),
			class: failure.InvalidRequest, typ: "invalid_request_error"},
		{name: "400 prompt too long is the caller's", status: 400, body: errBody("invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"),
			class: failure.InvalidRequest, typ: "invalid_request_error"},
		{name: "413 from Cloudflare, HTML", status: 413, header: map[string]string{"Content-Type": "text/html"}, body: `<html><body>413 Request Entity Too Large</body></html>`,
			class: failure.InvalidRequest},
		{name: "413 request_too_large", status: 413, body: errBody("request_too_large", "Request exceeds the maximum allowed number of bytes."),
			class: failure.InvalidRequest, typ: "request_too_large"},
		{name: "422", status: 422, body: `{"detail":"unprocessable"}`, class: failure.InvalidRequest},
		{name: "500 api_error", status: 500, body: errBody("api_error", "Internal server error"),
			class: failure.ProviderUnavailable, typ: "api_error"},
		{name: "503 empty body", status: 503, class: failure.ProviderUnavailable},
		{name: "504 timeout_error", status: 504, body: errBody("timeout_error", "Request timed out"),
			class: failure.ProviderUnavailable, typ: "timeout_error"},
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
			if fe.Class != tt.class || fe.Status != tt.status || fe.RetryAfter != tt.retryAfter || fe.ProviderType != tt.typ {
				t.Errorf("class %s status %d retry %v type %q, want %s %d %v %q",
					fe.Class, fe.Status, fe.RetryAfter, fe.ProviderType, tt.class, tt.status, tt.retryAfter, tt.typ)
			}
			if strings.Contains(err.Error(), tgt.APIKey) {
				t.Error("the error leaks the API key")
			}
			if strings.Contains(fe.Message, "req_011") {
				t.Error("the caller-visible message carries the provider's request id")
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
	tgt := &provider.Target{BaseURL: "http://" + addr, Model: "m", APIKey: "sk-ant-test-secret-key-123", HTTP: &http.Client{}}
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
