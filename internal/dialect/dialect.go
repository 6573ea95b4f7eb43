// Package dialect defines what a caller dialect is: how a caller's request
// body becomes a canonical request, and how canonical answers, events and
// errors are written back in that caller's wire format.
package dialect

import (
	"net/http"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
)

// Meta labels one answer to the caller. It is the same whatever rung serves,
// so a failover before commit is invisible on the wire.
type Meta struct {
	// ID is the public response id (already carrying the dialect's prefix,
	// e.g. "chatcmpl-…", "msg_…", "resp_…").
	ID string
	// Model is the exact model that serves the request.
	Model string
	// Created is the answer's creation time, Unix seconds.
	Created int64
}

// Dialect is one caller wire format.
type Dialect interface {
	// Name is the dialect's id, e.g. "openai-chat".
	Name() string
	// IDPrefix starts every public response id, e.g. "chatcmpl-".
	IDPrefix() string
	// Decode validates and decodes a request body. Bad input returns a
	// *failure.Public naming the field.
	Decode(body []byte, h http.Header) (*canonical.Request, *failure.Public)
	// NewEncoder starts encoding one streamed answer to req.
	NewEncoder(m Meta, req *canonical.Request) Encoder
	// AppendResponse appends a whole non-streamed answer's body.
	AppendResponse(dst []byte, m Meta, req *canonical.Request, resp *canonical.Response) []byte
	// AppendError appends an error body in the dialect's error shape.
	AppendError(dst []byte, e *failure.Public) []byte
}

// Encoder writes one streamed answer. Each method appends the bytes of zero
// or more complete SSE events to dst and returns it; the caller writes and
// flushes them. The engine calls Start once, at commit (before the first
// semantic event, or before Finish for an empty answer), then Event for each
// semantic event, then exactly one of Finish or Interrupt.
type Encoder interface {
	Start(dst []byte) []byte
	// Event receives text, tool-call and refusal events only.
	Event(dst []byte, ev *canonical.Event) []byte
	// Finish ends a complete answer with its success terminator.
	Finish(dst []byte, stop canonical.StopReason, stopSequence string, u canonical.Usage) []byte
	// Interrupt ends a stream that broke after commit with the dialect's
	// typed error event (type "stream_interrupted", retryable, the count of
	// delivered tokens) and no success terminator.
	Interrupt(dst []byte, e *failure.Public, deliveredTokens int) []byte
}

// StartUsage is implemented by encoders whose stream start reports usage
// (Anthropic's message_start carries the input counts, and some clients
// read them only there). The sink calls it before Start with what the
// provider has reported by commit; fields not yet known are zero.
type StartUsage interface {
	StartUsage(u canonical.Usage)
}

// Counter is a dialect with a token-counting endpoint (Anthropic's
// count_tokens, OpenAI's responses/input_tokens).
type Counter interface {
	// DecodeCount validates a count request's body and headers.
	DecodeCount(body []byte, h http.Header) (*canonical.Request, *failure.Public)
	// AppendCount appends the answer: the request's input tokens.
	AppendCount(dst []byte, tokens int) []byte
}
