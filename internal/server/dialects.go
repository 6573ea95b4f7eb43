package server

import (
	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/dialect/openaichat"
)

func openaiChat() dialect.Dialect { return openaichat.New() }
