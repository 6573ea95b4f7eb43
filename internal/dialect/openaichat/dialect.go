// Package openaichat is the OpenAI Chat Completions caller dialect: it
// decodes /v1/chat/completions requests into canonical requests and writes
// answers, stream chunks and errors exactly as OpenAI's API and SDKs expect.
package openaichat

import "github.com/spillway-gw/spillway/internal/dialect"

// Dialect is the OpenAI Chat Completions wire format. It holds no state and
// is safe for concurrent use.
type Dialect struct{}

var _ dialect.Dialect = (*Dialect)(nil)

// New returns the dialect.
func New() *Dialect { return &Dialect{} }

// Name is the dialect's id.
func (*Dialect) Name() string { return "openai-chat" }

// IDPrefix starts the public completion id, as OpenAI's do.
func (*Dialect) IDPrefix() string { return "chatcmpl-" }
