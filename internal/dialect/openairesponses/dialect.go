// Package openairesponses is the OpenAI Responses caller dialect: it decodes
// stateless /v1/responses requests into canonical requests and writes
// response objects, streamed events and errors exactly as OpenAI's API and
// SDKs expect.
//
// spillway stores nothing, so every request carries its whole conversation
// in input: previous_response_id, conversation, background mode, stored
// prompts and store:true are refused with a 400 that says so.
package openairesponses

import (
	"net/http"
	"strconv"
	"time"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/failure"
)

// Dialect is the OpenAI Responses wire format. It holds no mutable state and
// is safe for concurrent use.
type Dialect struct {
	// now stamps completed_at; nil means time.Now. Tests fix it.
	now func() time.Time
}

var (
	_ dialect.Dialect = (*Dialect)(nil)
	_ dialect.Counter = (*Dialect)(nil)
)

// New returns the dialect.
func New() *Dialect { return &Dialect{now: time.Now} }

// Name is the dialect's id.
func (*Dialect) Name() string { return "openai-responses" }

// IDPrefix starts the public response id, as OpenAI's do.
func (*Dialect) IDPrefix() string { return "resp_" }

func (d *Dialect) unix() int64 {
	if d == nil || d.now == nil {
		return time.Now().Unix()
	}
	return d.now().Unix()
}

// DecodeCount validates a POST /v1/responses/input_tokens request: the
// same body as a response request.
func (d *Dialect) DecodeCount(body []byte, h http.Header) (*canonical.Request, *failure.Public) {
	return d.Decode(body, h)
}

// AppendCount appends input_tokens' answer.
func (*Dialect) AppendCount(dst []byte, tokens int) []byte {
	dst = append(dst, `{"object":"response.input_tokens","input_tokens":`...)
	dst = strconv.AppendInt(dst, int64(tokens), 10)
	return append(dst, '}')
}
