package failure

import (
	"regexp"
	"strings"
	"time"
)

// Answer is a provider's error answer, already pulled apart by its adapter.
type Answer struct {
	// Status is the HTTP status, or for an error event inside a 200 stream
	// the status that event stands for (adapters map e.g. Anthropic
	// "overloaded_error" to 529).
	Status int
	// Type is the provider's error type: OpenAI error.type, Anthropic
	// error.type, Bedrock's exception name, Gemini's canonical status.
	Type string
	// Code is OpenAI's error.code or Gemini's ErrorInfo reason.
	Code string
	// Message is the provider's message, unscrubbed.
	Message string
	// Param is the field the provider names, if any.
	Param string
	// RetryAfter is the provider's requested delay, 0 when none.
	RetryAfter time.Duration
}

// Classify turns a provider's error answer into an Error, by status and,
// where status alone is ambiguous, by the body.
func Classify(a Answer) *Error {
	e := &Error{
		Status:       a.Status,
		ProviderType: a.Type,
		ProviderCode: a.Code,
		Param:        a.Param,
		RetryAfter:   a.RetryAfter,
		// Not the provider's message: operators' logs are content-free,
		// and a provider's 400 often quotes the prompt or a tool schema.
		Detail: strings.TrimSpace(a.Type + " " + a.Code),
	}
	e.Class = classOf(a)
	// Only a caller's own error shows the provider's words (scrubbed);
	// scrubbing runs six regular expressions, so only for that class.
	if e.Class == InvalidRequest {
		e.Message = Scrub(a.Message)
	}
	if e.Class != Throttled {
		e.RetryAfter = 0
	}
	return e
}

func classOf(a Answer) Class {
	typ, code := strings.ToLower(a.Type), strings.ToLower(a.Code)
	msg := strings.ToLower(a.Message)
	switch {
	// Credit exhaustion hides behind 429 (OpenAI insufficient_quota) and 400
	// (Anthropic's low credit balance): it is the provider account, not the
	// caller's request nor a throughput limit.
	case a.Status == 402, typ == "billing_error",
		typ == "insufficient_quota", code == "insufficient_quota",
		strings.Contains(msg, "credit balance is too low"),
		// Gemini: "free tier is not available in your country; enable
		// billing" — the account's standing, not the request.
		typ == "failed_precondition",
		strings.Contains(msg, "insufficient credits"):
		return ProviderCreditExhausted
	// Gemini says a bad key with 400 INVALID_ARGUMENT + API_KEY_INVALID.
	case code == "api_key_invalid", typ == "authentication_error", typ == "permission_error",
		typ == "unrecognizedclientexception", typ == "invalidsignatureexception",
		typ == "expiredtokenexception", typ == "accessdeniedexception":
		return ProviderAuthentication
	case a.Status == 429, typ == "rate_limit_error", typ == "throttlingexception",
		typ == "modelnotreadyexception", typ == "servicequotaexceededexception":
		return Throttled
	case a.Status == 401, a.Status == 403:
		return ProviderAuthentication
	case a.Status == 404, typ == "not_found_error", typ == "resourcenotfoundexception",
		// Bedrock answers a model id our deployment names wrongly (or one
		// without on-demand throughput) with a 400 ValidationException: the
		// deployment's binding, not the caller's request.
		typ == "validationexception" && (strings.Contains(msg, "model identifier is invalid") ||
			strings.Contains(msg, "on-demand throughput isn")):
		return ProviderBindingInvalid
	case typ == "overloaded_error", typ == "api_error", typ == "timeout_error",
		typ == "internalserverexception", typ == "serviceunavailableexception",
		typ == "modelstreamerrorexception", typ == "modeltimeoutexception", typ == "modelerrorexception":
		return ProviderUnavailable
	// 408 is the provider giving up waiting on its model, and 424 is Bedrock's
	// model failure: both belong to the provider, not the request.
	case a.Status >= 500, a.Status == 408, a.Status == 424:
		return ProviderUnavailable
	case a.Status >= 400:
		return InvalidRequest
	}
	// A non-error status that still carried an error (e.g. an in-stream
	// error event with no type we know) is the provider's fault.
	return ProviderUnavailable
}

// Patterns of provider detail that must not reach a caller even inside an
// invalid-request message: request ids, organisation and account ids, ARNs,
// keys, balances. Each has a cheap test of whether it could match at all
// (msg as given, and lowered), so that a message runs only the regular
// expressions it might need.
var scrubPatterns = []struct {
	re    *regexp.Regexp
	maybe func(msg, lower string) bool
}{
	// UUIDs and long hex runs (request and trace ids) first, whole: the
	// 12-digit rule below would otherwise take a UUID's last group only.
	{regexp.MustCompile(`\b[0-9A-Fa-f]{8}(-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}\b`), func(m, _ string) bool { return strings.Count(m, "-") >= 4 }},
	{regexp.MustCompile(`\b[0-9A-Fa-f]{24,}\b`), func(m, _ string) bool { return len(m) >= 24 }},
	{regexp.MustCompile(`\b(req|msg|chatcmpl|resp|org|proj|toolu|call)[_-][A-Za-z0-9_-]{6,}`), func(m, _ string) bool { return strings.ContainsAny(m, "_-") }},
	{regexp.MustCompile(`\barn:aws[a-z-]*:[^\s"']+`), func(m, _ string) bool { return strings.Contains(m, "arn:aws") }},
	{regexp.MustCompile(`\b(sk|pk|key)-[A-Za-z0-9_-]{8,}`), func(m, _ string) bool { return strings.Contains(m, "-") }},
	{regexp.MustCompile(`\b\d{12}\b`), func(m, _ string) bool { return digitRun(m) >= 12 }},
	{regexp.MustCompile(`(?i)(balance|credit)[^.;,]*\$?\d[\d.,]*`), func(_, l string) bool {
		return strings.Contains(l, "balance") || strings.Contains(l, "credit")
	}},
	{regexp.MustCompile(`(?i)organi[sz]ation\s+\S+`), func(_, l string) bool { return strings.Contains(l, "organi") }},
}

// digitRun is the length of the longest run of ASCII digits in s.
func digitRun(s string) int {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}

// Scrub removes provider identifiers and account detail from a message.
func Scrub(msg string) string {
	lower := strings.ToLower(msg)
	for _, p := range scrubPatterns {
		if !p.maybe(msg, lower) {
			continue
		}
		if out := p.re.ReplaceAllString(msg, "[redacted]"); out != msg {
			msg, lower = out, strings.ToLower(out)
		}
	}
	return msg
}
