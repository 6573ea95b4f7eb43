package bedrock

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/provider"
)

// errorType header values as Bedrock sends them.
func amzn(exception string) map[string]string {
	return map[string]string{"X-Amzn-ErrorType": exception + ":http://internal.amazon.com/coral/com.amazon.bedrock/"}
}

func TestErrorStatuses(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		header     map[string]string
		body       string
		class      failure.Class
		typ        string
		retryAfter time.Duration
		msg        string // what the caller may see, for invalid requests
	}{
		// The caller's request: no failover.
		{name: "400 ValidationException", status: 400, header: amzn("ValidationException"),
			body: `{"message":"Input is too long for requested model."}`, class: failure.InvalidRequest, typ: "ValidationException", msg: "Input is too long for requested model."},
		{name: "400 validation naming an ARN and account", status: 400, header: amzn("ValidationException"),
			body:  `{"message":"The provided model identifier arn:aws:bedrock:us-east-1:123456789012:inference-profile/x is invalid."}`,
			class: failure.InvalidRequest, typ: "ValidationException", msg: "The provided model identifier [redacted] is invalid."},
		{name: "400 ConflictException", status: 400, header: amzn("ConflictException"), body: `{"message":"x"}`, class: failure.InvalidRequest, typ: "ConflictException", msg: "x"},
		{name: "413 without a body", status: 413, class: failure.InvalidRequest},
		// Throughput.
		{name: "429 ThrottlingException", status: 429, header: amzn("ThrottlingException"),
			body: `{"message":"Too many requests, please wait before trying again."}`, class: failure.Throttled, typ: "ThrottlingException"},
		{name: "429 with a Retry-After a proxy added", status: 429, header: map[string]string{"X-Amzn-ErrorType": "ThrottlingException", "Retry-After": "7"},
			body: `{"message":"slow"}`, class: failure.Throttled, typ: "ThrottlingException", retryAfter: 7 * time.Second},
		{name: "429 ModelNotReadyException", status: 429, header: amzn("ModelNotReadyException"), body: `{"message":"Model is not ready"}`, class: failure.Throttled, typ: "ModelNotReadyException"},
		{name: "400 ServiceQuotaExceededException is throughput", status: 400, header: amzn("ServiceQuotaExceededException"),
			body: `{"message":"quota"}`, class: failure.Throttled, typ: "ServiceQuotaExceededException"},
		// The provider failing.
		{name: "500 InternalServerException", status: 500, header: amzn("InternalServerException"), body: `{"message":"x"}`, class: failure.ProviderUnavailable, typ: "InternalServerException"},
		{name: "503 ServiceUnavailableException", status: 503, header: amzn("ServiceUnavailableException"), body: `{"message":"Bedrock is unable to process your request."}`, class: failure.ProviderUnavailable, typ: "ServiceUnavailableException"},
		{name: "408 ModelTimeoutException", status: 408, header: amzn("ModelTimeoutException"), body: `{"message":"x"}`, class: failure.ProviderUnavailable, typ: "ModelTimeoutException"},
		{name: "424 ModelErrorException", status: 424, header: amzn("ModelErrorException"), body: `{"message":"x","originalStatusCode":500,"resourceName":"r"}`, class: failure.ProviderUnavailable, typ: "ModelErrorException"},
		{name: "502 from a proxy, HTML", status: 502, header: map[string]string{"Content-Type": "text/html"}, body: `<html>Bad Gateway</html>`, class: failure.ProviderUnavailable},
		{name: "504 empty", status: 504, class: failure.ProviderUnavailable},
		// Our credential or binding.
		{name: "403 AccessDeniedException", status: 403, header: amzn("AccessDeniedException"),
			body: `{"message":"You don't have access to the model with the specified model ID."}`, class: failure.ProviderAuthentication, typ: "AccessDeniedException"},
		{name: "403 UnrecognizedClientException", status: 403, header: amzn("UnrecognizedClientException"),
			body: `{"message":"The security token included in the request is invalid."}`, class: failure.ProviderAuthentication, typ: "UnrecognizedClientException"},
		{name: "403 InvalidSignatureException", status: 403, header: amzn("InvalidSignatureException"), body: `{"message":"x"}`, class: failure.ProviderAuthentication, typ: "InvalidSignatureException"},
		{name: "403 ExpiredTokenException", status: 403, header: amzn("ExpiredTokenException"), body: `{"message":"x"}`, class: failure.ProviderAuthentication, typ: "ExpiredTokenException"},
		{name: "403 missing token, plain", status: 403, body: `{"message":"Missing Authentication Token"}`, class: failure.ProviderAuthentication},
		{name: "404 ResourceNotFoundException", status: 404, header: amzn("ResourceNotFoundException"), body: `{"message":"x"}`, class: failure.ProviderBindingInvalid, typ: "ResourceNotFoundException"},
		// Where the exception is named.
		{name: "body __type when the header is missing", status: 503, body: `{"__type":"com.amazon.bedrock#ServiceUnavailableException","message":"x"}`, class: failure.ProviderUnavailable, typ: "ServiceUnavailableException"},
		{name: "body code when the header is missing", status: 429, body: `{"code":"ThrottlingException","Message":"x"}`, class: failure.Throttled, typ: "ThrottlingException"},
		{name: "the header wins over the body", status: 400, header: amzn("ValidationException"), body: `{"__type":"Other","message":"bad"}`, class: failure.InvalidRequest, typ: "ValidationException", msg: "bad"},
		{name: "the type decides over the status", status: 400, header: amzn("AccessDeniedException"), body: `{"message":"x"}`, class: failure.ProviderAuthentication, typ: "AccessDeniedException"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tgt, _ := upstream(t, reply{status: tt.status, header: tt.header, body: []byte(tt.body)})
			st, err := newAdapter().Stream(context.Background(), tgt, hello())
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
			if tt.msg != "" && fe.Message != tt.msg {
				t.Errorf("message %q, want %q", fe.Message, tt.msg)
			}
			if p := fe.ToPublic(); strings.Contains(p.Message, "123456789012") || strings.Contains(p.Message, "arn:aws") {
				t.Errorf("the caller would see provider detail: %q", p.Message)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Error("the error leaks the API key")
			}
		})
	}
}

func TestErrorType(t *testing.T) {
	for in, want := range map[string]string{
		"ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/": "ThrottlingException",
		"com.amazon.bedrock#ValidationException":                                   "ValidationException",
		"aws.protocoltests#ValidationException:http://x":                           "ValidationException",
		"  AccessDeniedException  ":                                                "AccessDeniedException",
		"":                                                                         "",
	} {
		if got := errorType(in); got != want {
			t.Errorf("errorType(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTransportError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens: connection refused
	tgt := &provider.Target{BaseURL: "http://" + addr, Model: "m", APIKey: testKey, HTTP: &http.Client{}}
	_, err = newAdapter().Stream(context.Background(), tgt, hello())
	fe := failure.As(err)
	if fe == nil || fe.Class != failure.ProviderUnavailable || !fe.NoResponse {
		t.Fatalf("err = %#v, want provider_unavailable with NoResponse", err)
	}
	var opErr *net.OpError
	if !errors.As(err, &opErr) {
		t.Errorf("the cause is not wrapped: %v", err)
	}
	if strings.Contains(err.Error(), testKey) {
		t.Error("the error leaks the API key")
	}
}
