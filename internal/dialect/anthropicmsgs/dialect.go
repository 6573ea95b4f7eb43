// Package anthropicmsgs is the Anthropic Messages caller dialect: it decodes
// POST /v1/messages requests into canonical requests and writes answers,
// stream events and errors exactly as Anthropic's API and SDKs expect.
//
// Where Anthropic offers something not every provider of a model can honour
// (extended thinking, documents, server tools, top_k, beta headers), the
// request is refused with a 400 naming the field rather than silently
// changed. Hints that never change the answer (cache_control, metadata,
// service_tier) are checked and ignored.
package anthropicmsgs

import "github.com/spillway-gw/spillway/internal/dialect"

// Dialect is the Anthropic Messages wire format. It holds no state and is
// safe for concurrent use.
type Dialect struct{}

var (
	_ dialect.Dialect = (*Dialect)(nil)
	_ dialect.Counter = (*Dialect)(nil)
)

// New returns the dialect.
func New() *Dialect { return &Dialect{} }

// Name is the dialect's id.
func (*Dialect) Name() string { return "anthropic-messages" }

// IDPrefix starts the public message id, as Anthropic's do.
func (*Dialect) IDPrefix() string { return "msg_" }
