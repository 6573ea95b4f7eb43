package openai

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/spillway-gw/spillway/internal/failure"
)

// apiError is OpenAI's error object. Compatible servers differ: OpenRouter
// sends a numeric code (the HTTP status it stands for), vLLM's older
// releases put these fields at the top level of the body, and some servers
// send "error" as a bare string.
type apiError struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Param   json.RawMessage `json:"param"`
	Code    json.RawMessage `json:"code"`
}

// errorBody is any of the error bodies above.
type errorBody struct {
	Error json.RawMessage `json:"error"`
	apiError
}

// parseErrorBody fills a from an error response body; a body of another
// shape leaves a alone, to be classified by status.
func parseErrorBody(body []byte, a *failure.Answer) {
	var eb errorBody
	if json.Unmarshal(body, &eb) != nil {
		return
	}
	if isNull(eb.Error) {
		fillAnswer(a, &eb.apiError) // vLLM's flat shape, or unknown
		return
	}
	fillFromRaw(a, eb.Error)
}

// fillFromRaw fills a from the value of an "error" key.
func fillFromRaw(a *failure.Answer, raw json.RawMessage) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		_ = json.Unmarshal(raw, &a.Message)
		return
	}
	var e apiError
	if json.Unmarshal(raw, &e) == nil {
		fillAnswer(a, &e)
	}
}

func fillAnswer(a *failure.Answer, e *apiError) {
	a.Message = e.Message
	a.Type = e.Type
	a.Param = rawString(e.Param)
	// A numeric code is a status, not an OpenAI error code.
	if code := bytes.TrimSpace(e.Code); len(code) > 0 && code[0] == '"' {
		a.Code = rawString(code)
	}
}

// streamError classifies an error object that arrived inside a 200 stream
// (or a 200 body). The status it stands for comes from a numeric code when
// the server sent one (OpenRouter), else from the type and code.
func streamError(raw json.RawMessage) *failure.Error {
	var a failure.Answer
	fillFromRaw(&a, raw)
	a.Status = inStreamStatus(&a, raw)
	return failure.Classify(a)
}

func inStreamStatus(a *failure.Answer, raw json.RawMessage) int {
	var num struct {
		Code json.RawMessage `json:"code"`
	}
	if json.Unmarshal(raw, &num) == nil {
		if n, err := strconv.Atoi(string(bytes.TrimSpace(num.Code))); err == nil && n >= 400 && n <= 599 {
			return n
		}
	}
	typ, code := strings.ToLower(a.Type), strings.ToLower(a.Code)
	switch {
	case code == "insufficient_quota", typ == "insufficient_quota":
		return http.StatusTooManyRequests // classifies as credit exhaustion by body
	case code == "rate_limit_exceeded", typ == "rate_limit_exceeded", typ == "tokens", typ == "requests":
		return http.StatusTooManyRequests
	case code == "invalid_api_key", typ == "authentication_error":
		return http.StatusUnauthorized
	case code == "model_not_found":
		return http.StatusNotFound
	case code == "context_length_exceeded", typ == "invalid_request_error":
		return http.StatusBadRequest
	case typ == "server_overloaded", typ == "overloaded", code == "server_overloaded":
		return http.StatusServiceUnavailable
	}
	// server_error and anything unknown: the provider failed mid-answer.
	return http.StatusInternalServerError
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// rawString is a JSON string's value, a number's text, or "" for anything
// else (null, objects).
func rawString(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	switch c := raw[0]; {
	case c == '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	case c == '-' || (c >= '0' && c <= '9'):
		return string(raw)
	}
	return ""
}
