package server

import (
	"net/http"
	"strconv"

	"github.com/spillway-gw/spillway/internal/jsonw"
)

func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"status":"ok"}`))
}

// handleModels lists the public model names in OpenAI's list shape, which
// the OpenAI and Anthropic SDKs both read.
func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	snap := s.opts.Catalog.Load()
	created := strconv.FormatInt(s.opts.Now().Unix(), 10)
	b := []byte(`{"object":"list","data":[`)
	for i, m := range snap.Models() {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = jsonw.AppendString(b, m)
		b = append(b, `,"object":"model","created":`...)
		b = append(b, created...)
		b = append(b, `,"owned_by":"spillway"}`...)
	}
	b = append(b, "]}"...)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}
