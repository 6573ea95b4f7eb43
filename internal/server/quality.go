package server

import (
	"encoding/json"
	"io"
	"net/http"

	"github.com/spillway-gw/spillway/internal/engine"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/quality"
)

// newQuality builds the gateway's quality monitor and exports it in
// /metrics.
func (s *Server) newQuality() *quality.Monitor {
	q := quality.NewMonitor(s.opts.Log, s.opts.Now)
	s.opts.Metrics.WatchQuality(q)
	return q
}

func (s *Server) routeQuality() {
	s.mux.Handle("GET /v1/admin/quality", s.admin(s.handleQuality))
	s.mux.Handle("POST /v1/admin/quality/clear", s.admin(s.handleQualityClear))
}

// observeQuality reduces a served answer to its content-free signals and
// counts them for the deployment that served it. Called once per answer,
// after its last byte; tap is a stream's (nil: a whole answer).
func (s *Server) observeQuality(c *call, res *engine.Result, tap *quality.Tap) {
	if c.req == nil || c.req.Embed != nil || res == nil {
		return
	}
	k := res.ServingAttempt()
	if k < 0 {
		return
	}
	var a quality.Answer
	switch {
	case tap != nil:
		a = tap.Answer(res.Stop)
	case res.Response != nil:
		a = quality.FromResponse(res.Response)
	default:
		return
	}
	smp := s.quality.Extract(c.req, &a)
	s.quality.Observe(s.runtime().snap, res.Attempts[k].Deployment, &smp)
}

func (s *Server) handleQuality(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(s.quality.Report())
}

// QualityClear is the body of POST /v1/admin/quality/clear, and its
// answer (with Cleared).
type QualityClear struct {
	Pool       string `json:"pool"`
	Deployment string `json:"deployment"`
	// Cleared is how many alerts were cleared.
	Cleared int `json:"cleared"`
}

func (s *Server) handleQualityClear(w http.ResponseWriter, r *http.Request) {
	var req QualityClear
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err != nil || json.Unmarshal(body, &req) != nil {
		writeJSONError(w, failure.BadRequest("", `the body must be JSON: {"pool": "...", "deployment": "..."}`))
		return
	}
	if req.Pool == "" || req.Deployment == "" {
		writeJSONError(w, failure.BadRequest("pool", "pool and deployment are both required"))
		return
	}
	n, ok := s.quality.Clear(req.Pool, req.Deployment)
	if !ok {
		writeJSONError(w, &failure.Public{Status: http.StatusNotFound, Code: "quality_pair_not_found",
			Message: "no pool of that id has that deployment as a secondary (the primary is never compared with itself)"})
		return
	}
	req.Cleared = n
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(req)
}
