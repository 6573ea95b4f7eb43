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
	"time"

	"github.com/spillway-gw/spillway/internal/dialect"
)

// Dialect is the OpenAI Responses wire format. It holds no mutable state and
// is safe for concurrent use.
type Dialect struct {
	// now stamps completed_at; nil means time.Now. Tests fix it.
	now func() time.Time
}

var _ dialect.Dialect = (*Dialect)(nil)

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
