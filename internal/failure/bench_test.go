package failure

import (
	"errors"
	"testing"
	"time"
)

// Classification runs once per failed attempt; these are the answers a
// failover storm repeats. Each sub-benchmark is one row of the table.
func BenchmarkClassify(b *testing.B) {
	rows := []struct {
		name string
		in   Answer
	}{
		{"503 bare", Answer{Status: 503}},
		{"429 rate limit", Answer{Status: 429, Type: "tokens", Code: "rate_limit_exceeded", Message: "Rate limit reached for gpt-4.1 in organization org-abc123def456 on tokens per min (TPM): Limit 30000, Used 29000, Requested 1500.", RetryAfter: 2 * time.Second}},
		{"529 overloaded", Answer{Status: 529, Type: "overloaded_error", Message: "Overloaded"}},
		{"429 insufficient_quota", Answer{Status: 429, Type: "insufficient_quota", Code: "insufficient_quota", Message: "You exceeded your current quota, please check your plan and billing details."}},
		{"400 low credit", Answer{Status: 400, Type: "invalid_request_error", Message: "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}},
		{"400 caller", Answer{Status: 400, Type: "invalid_request_error", Param: "max_tokens", Message: "max_tokens: 300000 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-5 (request_id req_011CXyZabc123)"}},
	}
	for _, r := range rows {
		b.Run(r.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if e := Classify(r.in); e.Class == "" {
					b.Fatal("no class")
				}
			}
		})
	}
}

// Transport failures and timeouts are classified without a body.
func BenchmarkClassifyTransport(b *testing.B) {
	err := errors.New("read tcp 127.0.0.1:1->127.0.0.1:2: connection reset by peer")
	b.ReportAllocs()
	for b.Loop() {
		if e := Transport(err, true); !e.Class.FailsOver() || e.ToPublic().Status != 502 {
			b.Fatal("wrong verdict")
		}
	}
}

// The verdict's policy and the caller's view, as the engine asks for them
// after every failed attempt.
func BenchmarkPolicyAndPublic(b *testing.B) {
	e := Classify(Answer{Status: 429, Type: "rate_limit_error", RetryAfter: 3 * time.Second})
	b.ReportAllocs()
	for b.Loop() {
		if !e.Class.FailsOver() || e.Class.CountsAgainstHealth() || e.Class.Suppresses() || e.ToPublic().RetryAfter != 3*time.Second {
			b.Fatal("wrong policy")
		}
	}
}
