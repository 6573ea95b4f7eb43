package server

import (
	"net/http"
	"strings"

	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/failure"
)

// Stored-object endpoints of OpenAI's and Anthropic's APIs. spillway keeps
// no conversation, response, batch or file, so each answers a 404 in its
// dialect that says so, instead of a bare 404 an SDK cannot read.
const (
	whyResponses     = "stored responses (retrieve, delete, cancel, input_items): spillway is stateless and stores no response; send the whole conversation in 'input' instead of previous_response_id"
	whyConversations = "conversations: spillway is stateless and stores no conversation; send the whole conversation in 'input'"
	whyChatStored    = "stored chat completions: spillway is stateless and stores no completion"
	whyBatches       = "batches: spillway serves interactive requests only"
	whyFiles         = "files: spillway stores no file; send content inline"
)

// statelessPaths maps each such collection to why it is not served. A
// collection whose own path is a served endpoint (POST /v1/responses)
// is matched below it only, and for the methods that endpoint lacks.
var statelessPaths = []struct {
	collection, why string
	self            bool // the collection's own path is refused too
}{
	{"/v1/responses", whyResponses, false},
	{"/v1/conversations", whyConversations, true},
	{"/v1/chat/completions", whyChatStored, false},
	{"/v1/messages/batches", whyBatches, true},
	{"/v1/batches", whyBatches, true},
	{"/v1/files", whyFiles, true},
	{"/v1/completions", "legacy text completions: this gateway serves chat models only; use POST /v1/chat/completions", true},
}

func (s *Server) routeStateless() {
	for _, p := range statelessPaths {
		h := statelessHandler(p.why)
		if p.self {
			s.mux.HandleFunc(p.collection, h)
		}
		if p.collection == "/v1/completions" {
			continue
		}
		// Both patterns, so that /x/{id} is not redirected to /x/{id}/.
		s.mux.HandleFunc(p.collection+"/{id}", h)
		s.mux.HandleFunc(p.collection+"/{id}/{rest...}", h)
	}
	// Listing stored chat completions.
	s.mux.HandleFunc("GET /v1/chat/completions", statelessHandler(whyChatStored))
	s.mux.HandleFunc("/", s.handleUnknown)
}

func statelessHandler(why string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		writeDialectError(w, pathDialect(r.URL.Path), &failure.Public{Status: http.StatusNotFound, Code: "unsupported_endpoint",
			Message: r.Method + " " + r.URL.Path + " is not served: " + why})
	}
}

// pathDialect is the dialect a path's prefix implies: Anthropic's for
// /v1/messages, OpenAI's for everything else.
func pathDialect(path string) dialect.Dialect {
	if path == "/v1/messages" || strings.HasPrefix(path, "/v1/messages/") {
		return anthropicMessages()
	}
	return openaiChat()
}

// handleUnknown answers what no other pattern took: a 405 with Allow when
// the path exists under another method, else a 404; both as JSON in the
// dialect the path implies, never net/http's plain text.
func (s *Server) handleUnknown(w http.ResponseWriter, r *http.Request) {
	d := pathDialect(r.URL.Path)
	var allow []string
	for _, m := range [...]string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "/" && pattern != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeDialectError(w, d, &failure.Public{Status: http.StatusMethodNotAllowed, Code: "method_not_allowed",
			Message: r.Method + " is not allowed on " + r.URL.Path + "; use " + strings.Join(allow, " or ")})
		return
	}
	writeDialectError(w, d, &failure.Public{Status: http.StatusNotFound, Code: "not_found",
		Message: "no endpoint " + r.Method + " " + r.URL.Path + " on this gateway; it serves /v1/chat/completions, /v1/responses, /v1/messages, /v1/embeddings and /v1/models"})
}
