package gemini

import (
	"bytes"
	"net/http"
	"time"

	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/json/jsonread"
)

// Google RPC error bodies look like
//
//	{"error":{"code":429,"message":"...","status":"RESOURCE_EXHAUSTED",
//	  "details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"36s"}, ...]}}
//
// They fill a failure.Answer as: Type = the canonical status
// (RESOURCE_EXHAUSTED), Code = the google.rpc.ErrorInfo reason
// (API_KEY_INVALID), Param = the first google.rpc.BadRequest field
// violation, RetryAfter = google.rpc.RetryInfo.retryDelay. Some Google
// front ends wrap the object in a one-element array; that is accepted too.

// rpcError is one decoded error object.
type rpcError struct {
	code       int
	status     string
	message    string
	reason     string
	field      string
	retryDelay time.Duration
	hasRetry   bool
}

// parseError reads an error body and reports whether it had the Google RPC
// shape; a is filled only then. a.Status is left alone.
func parseError(body []byte, a *failure.Answer) bool {
	e, ok := parseRPC(body)
	if ok {
		e.fill(a)
	}
	return ok
}

// parseRPC reads {"error":{...}} (or [{"error":{...}}]).
func parseRPC(body []byte) (rpcError, bool) {
	var (
		d     jsonread.Decoder
		e     rpcError
		found bool
	)
	d.Reset(body)
	readTop := func() {
		d.Object(func(key []byte) {
			if string(key) == "error" && d.Peek() == '{' {
				found = true
				readRPCError(&d, &e)
			}
		})
	}
	switch d.Peek() {
	case '{':
		readTop()
	case '[':
		first := true
		d.Array(func() {
			if first && d.Peek() == '{' {
				readTop()
			}
			first = false
		})
	default:
		return e, false
	}
	if d.End() != nil || !found {
		return rpcError{}, false
	}
	return e, true
}

// answer is the classified form of an error that arrived with a 200 (in a
// stream, or as a JSON body where a stream was asked for).
func (e *rpcError) answer() *failure.Error {
	var a failure.Answer
	e.fill(&a)
	a.Status = statusFor(e.code, e.status)
	return failure.Classify(a)
}

func (e *rpcError) fill(a *failure.Answer) {
	a.Type, a.Code, a.Message, a.Param = e.status, e.reason, e.message, e.field
	if e.hasRetry {
		a.RetryAfter = e.retryDelay
	}
}

// readRPCError reads {"code","message","status","details"} into e.
func readRPCError(d *jsonread.Decoder, e *rpcError) {
	d.Object(func(key []byte) {
		switch string(key) {
		case "code":
			// An int everywhere Google documents it; anything else is left
			// to the HTTP status.
			if c := d.Peek(); c == '-' || (c >= '0' && c <= '9') {
				e.code = d.Int()
			}
		case "message":
			if d.Peek() == '"' {
				e.message = d.Str()
			}
		case "status":
			if d.Peek() == '"' {
				e.status = d.Str()
			}
		case "details":
			if d.Peek() == '[' {
				d.Array(func() {
					if d.Peek() == '{' {
						readDetail(d, e)
					}
				})
			}
		}
	})
}

// detailType is the part of a detail's "@type" the adapter acts on.
type detailType uint8

const (
	detailOther detailType = iota
	detailErrorInfo
	detailRetryInfo
	detailBadRequest
)

func detailTypeOf(b []byte) detailType {
	switch {
	case bytes.HasSuffix(b, []byte("google.rpc.ErrorInfo")):
		return detailErrorInfo
	case bytes.HasSuffix(b, []byte("google.rpc.RetryInfo")):
		return detailRetryInfo
	case bytes.HasSuffix(b, []byte("google.rpc.BadRequest")):
		return detailBadRequest
	}
	return detailOther
}

// readDetail reads one details[] entry. "@type" may come after the fields
// it qualifies, so the candidates are kept until the object is read.
func readDetail(d *jsonread.Decoder, e *rpcError) {
	var (
		typ          detailType
		reason       string
		delay        time.Duration
		delayOK      bool
		field        string
		hasViolation bool
	)
	d.Object(func(key []byte) {
		switch string(key) {
		case "@type":
			if d.Peek() == '"' {
				typ = detailTypeOf(d.Bytes())
			}
		case "reason":
			if d.Peek() == '"' {
				reason = d.Str()
			}
		case "retryDelay":
			if d.Peek() == '"' {
				delay, delayOK = parseRetryDelay(d.Bytes())
			}
		case "fieldViolations":
			if d.Peek() == '[' {
				d.Array(func() {
					if hasViolation || d.Peek() != '{' {
						return
					}
					hasViolation = true
					d.Object(func(key []byte) {
						if string(key) == "field" && d.Peek() == '"' {
							field = d.Str()
						}
					})
				})
			}
		}
	})
	switch typ {
	case detailErrorInfo:
		if e.reason == "" {
			e.reason = reason
		}
	case detailRetryInfo:
		if delayOK && !e.hasRetry {
			e.retryDelay, e.hasRetry = delay, true
		}
	case detailBadRequest:
		if e.field == "" {
			e.field = field
		}
	}
}

// parseErrorBody is provider.ErrorAnswer's parser; a body of another shape
// (a proxy's HTML page) leaves the answer to its status and headers.
func parseErrorBody(body []byte, a *failure.Answer) { parseError(body, a) }

// maxRetryDelay caps absurd delays, as provider.RetryAfter does.
const maxRetryDelay = 24 * time.Hour

// parseRetryDelay reads a google.protobuf.Duration in its JSON form:
// decimal seconds with an "s" suffix and up to nine fractional digits
// ("36s", "3.95s", "0.000001s"). Negative, malformed or zero delays are not
// usable (ok false); very long ones are capped at a day.
func parseRetryDelay(b []byte) (d time.Duration, ok bool) {
	if len(b) < 2 || b[len(b)-1] != 's' {
		return 0, false
	}
	b = b[:len(b)-1]
	var secs int64
	i := 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if secs < int64(maxRetryDelay/time.Second) {
			secs = secs*10 + int64(b[i]-'0')
		}
	}
	if i == 0 {
		return 0, false
	}
	var nanos int64
	if i < len(b) {
		if b[i] != '.' || i == len(b)-1 {
			return 0, false
		}
		scale := int64(1e8)
		for i++; i < len(b); i++ {
			c := b[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			nanos += int64(c-'0') * scale // digits past the ninth add nothing
			scale /= 10
		}
	}
	if secs >= int64(maxRetryDelay/time.Second) {
		return maxRetryDelay, true
	}
	d = time.Duration(secs)*time.Second + time.Duration(nanos)
	return d, d > 0
}

// statusFor is the HTTP status an error that arrived with a 200 stands
// for: the error's own code when it is an HTTP error status, else its
// canonical status's usual HTTP mapping. CANCELLED (499) inside an answer
// is the server giving up, not our caller leaving (then nobody would be
// reading), so it counts as the provider failing.
func statusFor(code int, status string) int {
	if code >= 400 && code <= 599 && code != failure.StatusClientClosedRequest {
		return code
	}
	switch status {
	case "INVALID_ARGUMENT", "FAILED_PRECONDITION", "OUT_OF_RANGE":
		return http.StatusBadRequest
	case "UNAUTHENTICATED":
		return http.StatusUnauthorized
	case "PERMISSION_DENIED":
		return http.StatusForbidden
	case "NOT_FOUND":
		return http.StatusNotFound
	case "ABORTED", "ALREADY_EXISTS":
		return http.StatusConflict
	case "RESOURCE_EXHAUSTED":
		return http.StatusTooManyRequests
	case "UNIMPLEMENTED":
		return http.StatusNotImplemented
	case "UNAVAILABLE":
		return http.StatusServiceUnavailable
	case "DEADLINE_EXCEEDED":
		return http.StatusGatewayTimeout
	}
	// INTERNAL, UNKNOWN, DATA_LOSS and anything new: the provider failed.
	return http.StatusInternalServerError
}
