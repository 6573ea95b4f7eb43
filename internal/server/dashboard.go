package server

import (
	"net/http"
	"strconv"

	"github.com/spillway-gw/spillway/internal/activity"
	"github.com/spillway-gw/spillway/internal/engine"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/ui"
)

// routeDashboard serves the dashboard's page (open: it is static and holds
// no data) and the two admin endpoints only it needs: recent traffic and
// the trail of failed attempts, both kept in this replica's memory and
// bounded by activity's defaults.
func (s *Server) routeDashboard() {
	s.activity = activity.New(activity.Options{Now: s.opts.Now})
	h := ui.Handler()
	s.mux.Handle("GET "+ui.Prefix, h)
	s.mux.Handle("GET "+ui.Prefix+"/{file...}", h)
	s.mux.Handle("GET /v1/admin/traffic", s.admin(s.handleTraffic))
	s.mux.Handle("GET /v1/admin/failures", s.admin(s.handleFailures))
}

// recordActivity notes a settled request's attempts for the dashboard.
func (s *Server) recordActivity(c *call, res *engine.Result) {
	if res == nil || c.route == nil {
		return
	}
	s.activity.Record(c.id, c.route.Public, res)
}

// handleTraffic: GET /v1/admin/traffic, served and failed attempts per
// deployment and failovers per route, in one-minute buckets.
func (s *Server) handleTraffic(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, s.activity.Traffic())
}

// handleFailures: GET /v1/admin/failures[?limit=N], the newest failed
// attempts first; N above the trail's capacity is the capacity.
func (s *Server) handleFailures(w http.ResponseWriter, r *http.Request) {
	limit := 0
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeJSONError(w, failure.BadRequest("limit", "limit must be a positive integer (at most %d are kept)", activity.DefaultTrail))
			return
		}
		limit = n
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, s.activity.Failures(limit))
}
