package bedrock

import (
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/json/jsonread"
	"github.com/spillway-gw/spillway/internal/provider"
)

// usage is Converse's TokenUsage.
type usage struct {
	input, output, total, cacheRead, cacheWrite int
	hasTotal                                    bool
}

func readUsage(d *jsonread.Decoder) usage {
	var u usage
	d.Object(func(key []byte) {
		switch string(key) {
		case "inputTokens":
			u.input = d.Int()
		case "outputTokens":
			u.output = d.Int()
		case "totalTokens":
			u.total, u.hasTotal = d.Int(), true
		case "cacheReadInputTokens":
			u.cacheRead = d.Int()
		case "cacheWriteInputTokens":
			u.cacheWrite = d.Int()
		}
	})
	return u
}

// canonical maps usage. canonical InputTokens counts every prompt token,
// cached ones included. Bedrock's inputTokens is taken to exclude cache
// reads and writes, as Anthropic's input_tokens does (AWS's prompt-caching
// examples add all four counts up to totalTokens). When totalTokens says
// otherwise (it equals inputTokens + outputTokens although cache counts are
// set), inputTokens already includes them and is used as is.
func (u *usage) canonical() canonical.Usage {
	cache := u.cacheRead + u.cacheWrite
	in := u.input + cache
	if cache > 0 && u.hasTotal && u.total == u.input+u.output && u.input >= cache {
		in = u.input
	}
	return canonical.Usage{
		InputTokens:       in,
		CachedInputTokens: u.cacheRead,
		CacheWriteTokens:  u.cacheWrite,
		OutputTokens:      u.output,
	}
}

// stopKind is a stopReason as the gateway reads it.
type stopKind uint8

const (
	stopUnset stopKind = iota
	stopOK             // a stop reason that ends a complete answer
	// stopMalformed: the model's output (or tool call) was malformed; the
	// answer is not a complete one, so it is reported as a failure.
	stopMalformed
)

// stopReason maps Converse's stopReason. guardrail_intervened (a
// configured guardrail blocked or masked the answer) and content_filtered
// (the provider's own filter) are filters removing output, not the model
// declining, so both are StopContentFilter. An unknown reason reads as a
// natural end.
func stopReason(s []byte) (canonical.StopReason, stopKind) {
	switch string(s) {
	case "end_turn":
		return canonical.StopEnd, stopOK
	case "tool_use":
		return canonical.StopToolUse, stopOK
	case "max_tokens":
		return canonical.StopMaxTokens, stopOK
	case "stop_sequence":
		return canonical.StopSequence, stopOK
	case "guardrail_intervened", "content_filtered":
		return canonical.StopContentFilter, stopOK
	case "model_context_window_exceeded":
		return canonical.StopContextWindow, stopOK
	case "malformed_model_output", "malformed_tool_use":
		return canonical.StopEnd, stopMalformed
	}
	return canonical.StopEnd, stopOK
}

// malformedOutput is the failure for a malformed_* stop reason: the answer
// is broken (a tool call lost, output cut), which must not pass for a
// complete one.
func malformedOutput(reason string) *failure.Error {
	return failure.Malformed("the model's output was malformed (stopReason "+reason+")", nil)
}

// errorAnswer turns a non-2xx response into a classified error. Bedrock
// names the exception in X-Amzn-ErrorType ("ThrottlingException:http://...")
// and, failing that, in the body's __type or code; the status is the HTTP
// one. It reads at most provider.MaxErrorBody bytes and closes the body.
func errorAnswer(resp *http.Response) *failure.Error {
	defer resp.Body.Close()
	a := failure.Answer{Status: resp.StatusCode, RetryAfter: provider.RetryAfter(resp.Header, time.Now())}
	// A body cut short still leaves the status and header to classify by.
	body, _ := io.ReadAll(io.LimitReader(resp.Body, provider.MaxErrorBody))
	var bodyType string
	if len(body) > 0 {
		bodyType, a.Message = parseErrorBody(body)
	}
	a.Type = errorType(resp.Header.Get("X-Amzn-Errortype"))
	if a.Type == "" {
		a.Type = errorType(bodyType)
	}
	return failure.Classify(a)
}

// errorType cleans an error code as the AWS SDK does: the text before the
// first ':' and after the last '#' (a shape id such as
// "com.amazon.bedrock#ThrottlingException").
func errorType(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, ':'); i >= 0 {
		s = s[:i]
	}
	if i := strings.LastIndexByte(s, '#'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// parseErrorBody reads {"message"|"Message", "__type"|"code"} from an
// error body; a body of another shape (an HTML page from a proxy) yields
// nothing, and the answer classifies by status.
func parseErrorBody(body []byte) (typ, msg string) {
	var d jsonread.Decoder
	d.Reset(body)
	if d.Peek() != '{' {
		return "", ""
	}
	var code string
	d.Object(func(key []byte) {
		switch string(key) {
		case "message", "Message":
			if d.Peek() == '"' {
				msg = d.Str()
			}
		case "__type":
			if d.Peek() == '"' {
				typ = d.Str()
			}
		case "code":
			if d.Peek() == '"' {
				code = d.Str()
			}
		}
	})
	if d.End() != nil {
		return "", ""
	}
	if typ == "" {
		typ = code
	}
	return typ, msg
}

// jsonInsteadOfStream handles a 2xx JSON body on ConverseStream: an error
// body is classified by the status its exception stands for; anything
// else is malformed.
func jsonInsteadOfStream(resp *http.Response) error {
	return provider.JSONInsteadOfStream(resp, func(body []byte) error {
		typ, msg := parseErrorBody(body)
		if t := errorType(resp.Header.Get("X-Amzn-Errortype")); t != "" {
			typ = t
		}
		if typ = errorType(typ); typ == "" {
			return nil
		}
		return failure.Classify(failure.Answer{Status: statusOf(typ), Type: typ, Message: msg})
	})
}

// statusOf is the HTTP status a Bedrock exception stands for (its smithy
// httpError trait), for exceptions that arrive inside a 200 stream, where
// they are spelled lowerCamel (throttlingException) rather than as the
// shape name (ThrottlingException).
func statusOf(exception string) int {
	switch strings.ToLower(exception) {
	case "validationexception", "servicequotaexceededexception", "conflictexception":
		return http.StatusBadRequest
	case "accessdeniedexception":
		return http.StatusForbidden
	case "resourcenotfoundexception":
		return http.StatusNotFound
	case "modeltimeoutexception":
		return http.StatusRequestTimeout
	case "modelerrorexception", "modelstreamerrorexception":
		return http.StatusFailedDependency
	case "throttlingexception", "modelnotreadyexception":
		return http.StatusTooManyRequests
	case "serviceunavailableexception":
		return http.StatusServiceUnavailable
	}
	// internalServerException and anything unknown: the provider failed.
	return http.StatusInternalServerError
}
