package server

import (
	"net/http"
	"strconv"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/failure"
)

// checkLimits refuses a request whose lists pass server.limits. The
// dialects decode in linear time, so the check comes after decoding.
func checkLimits(req *canonical.Request, l catalog.Limits) *failure.Public {
	over := func(param, what string, n, max int, setting string) *failure.Public {
		return &failure.Public{Status: http.StatusBadRequest, Code: "request_too_large", Param: param,
			Message: "the request has " + strconv.Itoa(n) + " " + what + "; this gateway takes at most " + strconv.Itoa(max) + " (server.limits." + setting + ")"}
	}
	switch {
	case l.MaxMessages > 0 && len(req.Messages) > l.MaxMessages:
		return over("messages", "messages", len(req.Messages), l.MaxMessages, "max_messages")
	case l.MaxTools > 0 && len(req.Tools) > l.MaxTools:
		return over("tools", "tools", len(req.Tools), l.MaxTools, "max_tools")
	case l.MaxStopSequences > 0 && len(req.Stop) > l.MaxStopSequences:
		return over("stop", "stop sequences", len(req.Stop), l.MaxStopSequences, "max_stop_sequences")
	}
	for i := range req.Messages {
		m := &req.Messages[i]
		switch {
		case l.MaxParts > 0 && len(m.Content) > l.MaxParts:
			return over("messages", "content parts in one message", len(m.Content), l.MaxParts, "max_parts")
		case l.MaxToolCalls > 0 && len(m.ToolCalls) > l.MaxToolCalls:
			return over("messages", "tool calls in one message", len(m.ToolCalls), l.MaxToolCalls, "max_tool_calls")
		}
	}
	return nil
}
