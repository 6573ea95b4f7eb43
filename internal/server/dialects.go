package server

import (
	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/dialect/anthropicmsgs"
	"github.com/spillway-gw/spillway/internal/dialect/openaichat"
	"github.com/spillway-gw/spillway/internal/dialect/openairesponses"
)

func openaiChat() dialect.Dialect      { return openaichat.New() }
func openaiResponses() dialect.Dialect { return openairesponses.New() }
func anthropicMessages() dialect.Dialect {
	return anthropicmsgs.New()
}
