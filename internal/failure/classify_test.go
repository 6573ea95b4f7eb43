package failure

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

// One row per line of the classification table in DESIGN.md, plus the
// body-sensitive cases where status alone would be wrong.
func TestClassify(t *testing.T) {
	tests := []struct {
		name  string
		in    Answer
		class Class
	}{
		// caller's request: never fails over
		{"openai 400 context length", Answer{Status: 400, Type: "invalid_request_error", Code: "context_length_exceeded"}, InvalidRequest},
		{"anthropic 400", Answer{Status: 400, Type: "invalid_request_error", Message: "max_tokens: Field required"}, InvalidRequest},
		{"anthropic 413", Answer{Status: 413, Type: "request_too_large"}, InvalidRequest},
		{"422", Answer{Status: 422}, InvalidRequest},
		{"409 other 4xx", Answer{Status: 409}, InvalidRequest},
		{"bedrock validation", Answer{Status: 400, Type: "ValidationException"}, InvalidRequest},
		{"gemini invalid argument", Answer{Status: 400, Type: "INVALID_ARGUMENT"}, InvalidRequest},
		// credit exhaustion hides behind other statuses
		{"402", Answer{Status: 402}, ProviderCreditExhausted},
		{"anthropic billing_error", Answer{Status: 400, Type: "billing_error"}, ProviderCreditExhausted},
		{"openai 429 insufficient_quota", Answer{Status: 429, Type: "insufficient_quota", Code: "insufficient_quota", RetryAfter: time.Second}, ProviderCreditExhausted},
		{"gemini failed precondition (billing)", Answer{Status: 400, Type: "FAILED_PRECONDITION", Message: "Gemini API free tier is not available in your country. Please enable billing."}, ProviderCreditExhausted},
		{"anthropic 400 low credit", Answer{Status: 400, Type: "invalid_request_error", Message: "Your credit balance is too low to access the Anthropic API."}, ProviderCreditExhausted},
		// throttling
		{"openai 429", Answer{Status: 429, Type: "tokens", Code: "rate_limit_exceeded"}, Throttled},
		{"anthropic 429", Answer{Status: 429, Type: "rate_limit_error"}, Throttled},
		{"bedrock throttling", Answer{Status: 429, Type: "ThrottlingException"}, Throttled},
		{"bedrock model not ready", Answer{Status: 429, Type: "ModelNotReadyException"}, Throttled},
		{"gemini resource exhausted", Answer{Status: 429, Type: "RESOURCE_EXHAUSTED", Message: "You exceeded your current quota, please check your plan and billing details."}, Throttled},
		{"anthropic in-stream rate_limit_error", Answer{Status: 200, Type: "rate_limit_error"}, Throttled},
		// provider unavailable
		{"529 overloaded", Answer{Status: 529, Type: "overloaded_error"}, ProviderUnavailable},
		{"500", Answer{Status: 500, Type: "server_error"}, ProviderUnavailable},
		{"502", Answer{Status: 502}, ProviderUnavailable},
		{"503", Answer{Status: 503}, ProviderUnavailable},
		{"504", Answer{Status: 504}, ProviderUnavailable},
		{"408 provider timeout", Answer{Status: 408, Type: "ModelTimeoutException"}, ProviderUnavailable},
		{"424 bedrock model error", Answer{Status: 424, Type: "ModelErrorException"}, ProviderUnavailable},
		{"in-stream overloaded_error", Answer{Status: 200, Type: "overloaded_error"}, ProviderUnavailable},
		{"in-stream unknown error", Answer{Status: 200, Type: "mystery"}, ProviderUnavailable},
		// provider credentials
		{"401", Answer{Status: 401, Type: "invalid_request_error", Code: "invalid_api_key"}, ProviderAuthentication},
		{"403", Answer{Status: 403, Type: "permission_error"}, ProviderAuthentication},
		{"anthropic 401", Answer{Status: 401, Type: "authentication_error"}, ProviderAuthentication},
		{"gemini bad key is a 400", Answer{Status: 400, Type: "INVALID_ARGUMENT", Code: "API_KEY_INVALID"}, ProviderAuthentication},
		{"bedrock access denied", Answer{Status: 403, Type: "AccessDeniedException"}, ProviderAuthentication},
		// provider binding
		{"404", Answer{Status: 404, Type: "invalid_request_error", Code: "model_not_found"}, ProviderBindingInvalid},
		{"anthropic 404", Answer{Status: 404, Type: "not_found_error"}, ProviderBindingInvalid},
		{"bedrock resource not found", Answer{Status: 404, Type: "ResourceNotFoundException"}, ProviderBindingInvalid},
		{"bedrock invalid model id is the deployment's", Answer{Status: 400, Type: "ValidationException", Message: "The provided model identifier is invalid."}, ProviderBindingInvalid},
		{"bedrock no on-demand throughput", Answer{Status: 400, Type: "ValidationException", Message: "Invocation of model ID x with on-demand throughput isn't supported."}, ProviderBindingInvalid},
		{"bedrock service quota 400 is throttling", Answer{Status: 400, Type: "ServiceQuotaExceededException"}, Throttled},
		{"bedrock unrecognized client", Answer{Status: 403, Type: "UnrecognizedClientException"}, ProviderAuthentication},
		{"bedrock invalid signature", Answer{Status: 403, Type: "InvalidSignatureException"}, ProviderAuthentication},
		{"bedrock expired token", Answer{Status: 403, Type: "ExpiredTokenException"}, ProviderAuthentication},
		{"bedrock internal server", Answer{Status: 500, Type: "InternalServerException"}, ProviderUnavailable},
		{"bedrock service unavailable", Answer{Status: 503, Type: "ServiceUnavailableException"}, ProviderUnavailable},
		{"bedrock in-stream throttling", Answer{Status: 429, Type: "throttlingException"}, Throttled},
		{"bedrock in-stream model stream error", Answer{Status: 424, Type: "modelStreamErrorException"}, ProviderUnavailable},
		{"bedrock in-stream validation", Answer{Status: 400, Type: "validationException"}, InvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Classify(tt.in)
			if got.Class != tt.class {
				t.Fatalf("Classify(%+v).Class = %s, want %s", tt.in, got.Class, tt.class)
			}
			if got.Status != tt.in.Status {
				t.Errorf("Status = %d, want %d", got.Status, tt.in.Status)
			}
			if got.Class != Throttled && got.RetryAfter != 0 {
				t.Errorf("RetryAfter kept on a %s failure", got.Class)
			}
		})
	}
}

func TestClassPolicy(t *testing.T) {
	tests := []struct {
		class                           Class
		failsOver, countsHealth, suppre bool
	}{
		{Throttled, true, false, false},
		{ProviderUnavailable, true, true, false},
		{ProviderAuthentication, true, true, true},
		{ProviderCreditExhausted, true, true, true},
		{ProviderBindingInvalid, true, true, true},
		{InvalidRequest, false, false, false},
		{Refused, false, false, false},
		{CallerGate, false, false, false},
		{ClientCancelled, false, false, false},
		{HedgedLost, false, false, false},
	}
	for _, tt := range tests {
		if got := tt.class.FailsOver(); got != tt.failsOver {
			t.Errorf("%s.FailsOver() = %v", tt.class, got)
		}
		if got := tt.class.CountsAgainstHealth(); got != tt.countsHealth {
			t.Errorf("%s.CountsAgainstHealth() = %v", tt.class, got)
		}
		if got := tt.class.Suppresses(); got != tt.suppre {
			t.Errorf("%s.Suppresses() = %v", tt.class, got)
		}
	}
}

// What the caller sees on the last rung: the table's last column.
func TestToPublic(t *testing.T) {
	secret := "org-abcdef123456 req_011CabcdefXYZ balance $12.34 key sk-ant-abcdefghijkl"
	tests := []struct {
		name       string
		err        *Error
		status     int
		code       string
		retryAfter time.Duration
	}{
		{"throttled keeps retry-after", Classify(Answer{Status: 429, RetryAfter: 7 * time.Second, Message: secret}), 429, "rate_limit_exceeded", 7 * time.Second},
		{"throttled without retry-after still says 1s", Classify(Answer{Status: 429}), 429, "rate_limit_exceeded", time.Second},
		{"unavailable", Classify(Answer{Status: 529, Type: "overloaded_error", Message: secret}), 502, "upstream_error", 0},
		{"timeout", TimedOut(TimeoutFirstByte, true), 504, "upstream_timeout", 0},
		{"transport", Transport(errors.New("connection refused"), true), 502, "upstream_error", 0},
		{"truncated", Truncated("no [DONE]"), 502, "upstream_error", 0},
		{"auth masked", Classify(Answer{Status: 401, Message: "Incorrect API key provided: sk-abcdefghijklmnop " + secret}), 502, "upstream_error", 0},
		{"credit masked", Classify(Answer{Status: 402, Message: secret}), 502, "upstream_error", 0},
		{"binding masked", Classify(Answer{Status: 404, Message: secret}), 502, "upstream_error", 0},
		{"invalid request passes the message", Classify(Answer{Status: 400, Message: "messages: too long " + secret, Param: "messages"}), 400, "invalid_request", 0},
		{"cancelled", Cancelled(nil), StatusClientClosedRequest, "client_closed_request", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.err.ToPublic()
			if p.Status != tt.status || p.Code != tt.code || p.RetryAfter != tt.retryAfter {
				t.Fatalf("ToPublic() = %d %s retry %v, want %d %s retry %v", p.Status, p.Code, p.RetryAfter, tt.status, tt.code, tt.retryAfter)
			}
			for _, leak := range []string{"org-abcdef", "req_011C", "12.34", "sk-ant", "sk-abcdefghijklmnop", "Incorrect API key"} {
				if strings.Contains(p.Message, leak) {
					t.Errorf("public message %q leaks %q", p.Message, leak)
				}
			}
		})
	}
	if p := Classify(Answer{Status: 400, Message: "messages: too long", Param: "messages"}).ToPublic(); p.Message != "messages: too long" || p.Param != "messages" {
		t.Errorf("invalid request message = %q param %q, want the provider's words about the request", p.Message, p.Param)
	}
}

func FuzzScrub(f *testing.F) {
	for _, s := range []string{
		"req_011CabcdefXYZ and org-abcdef123456",
		"arn:aws:bedrock:us-east-1:123456789012:foundation-model/x",
		"Your CREDIT balance is $12.34; Organisation acme-corp",
		"key-ABCDEFGH12 sk-abcdefghijkl 1234567890123",
		"request 8f14e45f-ceea-467f-a2b7-112233445566 trace 0123456789abcdef0123456789abcdef",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Scrub(s)
		if Scrub(out) != out {
			t.Fatalf("Scrub not idempotent on %q", s)
		}
		// The cheap tests only skip expressions that cannot match: the
		// result is what running every expression gives.
		want := s
		for _, p := range scrubPatterns {
			want = p.re.ReplaceAllString(want, "[redacted]")
		}
		if out != want {
			t.Fatalf("Scrub(%q) = %q; every expression gives %q", s, out, want)
		}
	})
}

// Identifiers go whole: a UUID leaves none of its five groups, a long hex
// trace id none of its digits.
func TestScrubTakesIdentifiersWhole(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"request 8f14e45f-ceea-467f-a2b7-112233445566 failed", "request [redacted] failed"},
		{"id 8F14E45F-CEEA-467F-A2B7-1D4C8E4D3E5A.", "id [redacted]."},
		{"trace 0123456789abcdef0123456789abcdef here", "trace [redacted] here"},
		{"messages.3.content: too long", "messages.3.content: too long"},
		{"max_tokens: 4096 > 1024", "max_tokens: 4096 > 1024"},
	} {
		if got := Scrub(tt.in); got != tt.want {
			t.Errorf("Scrub(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestErrorTextIsContentFree: the operator-facing text of a classified
// answer (what the engine logs) never carries the provider's message, which
// may quote the caller's prompt; only the scrubbed caller-facing message of
// an invalid request does.
func TestErrorTextIsContentFree(t *testing.T) {
	const canary = "CANARY-7f3a prompt words"
	for _, status := range []int{400, 401, 402, 403, 404, 408, 429, 500, 503, 529} {
		e := Classify(Answer{Status: status, Type: "invalid_request_error", Code: "bad", Message: "schema error near '" + canary + "'"})
		if strings.Contains(e.Error(), "CANARY") || strings.Contains(e.Detail, "CANARY") {
			t.Errorf("status %d: the logged text carries the provider's message: %q", status, e.Error())
		}
		if e.Class != InvalidRequest && e.Message != "" {
			t.Errorf("status %d (%s): message %q kept for a class that never shows it", status, e.Class, e.Message)
		}
	}
}

// timeoutErr is a network timeout, as a dialer's "i/o timeout".
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "dial tcp 10.0.0.1:443: i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestTransportConnectTimeout(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: timeoutErr{}}
	tests := []struct {
		name        string
		err         error
		noResponse  bool
		wantTimeout Timeout
		wantRetry   bool // the one same-rung retry of a transport blip
		wantStatus  int
	}{
		{"dial timeout: the connect bound, no retry on the same dead host", dial, true, TimeoutConnect, false, 504},
		{"refused: a blip, retried once", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, true, "", true, 502},
		{"a timeout after response bytes is no connect timeout", dial, false, "", false, 502},
		{"our own deadline is not the connect bound", context.DeadlineExceeded, true, "", true, 502},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := Transport(tt.err, tt.noResponse)
			if e.Class != ProviderUnavailable || e.Timeout != tt.wantTimeout || e.NoResponse != tt.noResponse || !errors.Is(e, tt.err) {
				t.Fatalf("Transport = %+v", e)
			}
			if retry := e.NoResponse && e.Timeout == ""; retry != tt.wantRetry {
				t.Errorf("same-rung retry %v, want %v", retry, tt.wantRetry)
			}
			if s := e.ToPublic().Status; s != tt.wantStatus {
				t.Errorf("caller status %d, want %d", s, tt.wantStatus)
			}
		})
	}
}
