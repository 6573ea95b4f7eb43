package failure

import (
	"fmt"
	"net/http"
	"time"
)

// Public is an error as the caller is told it, before a dialect gives it its
// wire shape. It never carries provider detail.
type Public struct {
	Status int
	// Code is stable and machine-readable: rate_limit_exceeded,
	// upstream_error, upstream_timeout, invalid_request, model_not_found, ...
	Code    string
	Message string
	// Param names the offending request field, when there is one.
	Param string
	// RetryAfter is sent as the Retry-After header when positive.
	RetryAfter time.Duration
	// ErrorCode is a finer machine-readable code for dialects that carry
	// one (Anthropic's error.details.error_code), e.g.
	// "thread_unsupported_request"; empty when none.
	ErrorCode string
	// Retryable is the hint of a stream interrupted after commit: whether
	// sending the request again may succeed (false when the provider
	// rejected the request itself).
	Retryable bool
}

func (p *Public) Error() string { return fmt.Sprintf("%d %s: %s", p.Status, p.Code, p.Message) }

// StatusClientClosedRequest is the conventional status logged when the
// caller disconnected before an answer.
const StatusClientClosedRequest = 499

// Fixed messages: infrastructure faults collapse to these, whatever the
// provider said.
const (
	msgUpstream = "the model provider failed to answer; the request was not completed"
	msgTimeout  = "the model provider did not answer in time; the request was not completed"
	msgThrottle = "every provider of this model is rate limiting; retry after the delay in the Retry-After header"
	msgRejected = "the model provider rejected the request"
)

// ToPublic maps a classified attempt failure to what the caller sees on the
// last rung: the mapping column of the classification table.
func (e *Error) ToPublic() *Public {
	switch e.Class {
	case Throttled:
		ra := e.RetryAfter
		if ra < time.Second {
			ra = time.Second
		}
		return &Public{Status: http.StatusTooManyRequests, Code: "rate_limit_exceeded", Message: msgThrottle, RetryAfter: ra}
	case InvalidRequest:
		msg := e.Message
		if msg == "" {
			msg = msgRejected
		}
		return &Public{Status: http.StatusBadRequest, Code: "invalid_request", Message: msg, Param: e.Param}
	case ClientCancelled:
		return &Public{Status: StatusClientClosedRequest, Code: "client_closed_request", Message: "the caller closed the request"}
	case GatewayBusy:
		return &Public{Status: http.StatusServiceUnavailable, Code: "gateway_busy", Retryable: true, RetryAfter: time.Second,
			Message: "the gateway is holding as many whole answers in memory as it may; retry shortly, or ask for a stream"}
	}
	if e.Timeout != "" {
		return &Public{Status: http.StatusGatewayTimeout, Code: "upstream_timeout", Message: msgTimeout}
	}
	return &Public{Status: http.StatusBadGateway, Code: "upstream_error", Message: msgUpstream}
}

// BadRequest is a caller error found by the gateway itself.
func BadRequest(param, format string, args ...any) *Public {
	return &Public{Status: http.StatusBadRequest, Code: "invalid_request", Param: param, Message: fmt.Sprintf(format, args...)}
}
