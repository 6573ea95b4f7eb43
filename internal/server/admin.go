package server

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/health"
	"github.com/spillway-gw/spillway/internal/keys"
)

// admin protects an operator endpoint with the admin key, sent as a bearer
// token or x-api-key. Without a configured key the endpoints do not exist.
func (s *Server) admin(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.opts.Admin.Enabled() {
			writeJSONError(w, &failure.Public{Status: http.StatusNotFound, Code: "admin_disabled",
				Message: "the admin API is disabled: this gateway has no admin key (spillway admin rotate makes one)"})
			return
		}
		if !s.isAdmin(r) {
			writeJSONError(w, &failure.Public{Status: http.StatusUnauthorized, Code: "invalid_admin_key",
				Message: "this endpoint needs the gateway's admin key as a bearer token (printed at the first start; spillway admin rotate makes a new one)"})
			return
		}
		h(w, r)
	})
}

// isAdmin reports whether the request carries the admin key.
func (s *Server) isAdmin(r *http.Request) bool {
	return s.opts.Admin.Check(keys.FromHeaders(r.Header.Get("Authorization"), r.Header.Get("X-Api-Key")))
}

// writeJSONError writes an operator-facing error in OpenAI's shape.
func writeJSONError(w http.ResponseWriter, p *failure.Public) {
	w.Header().Set("Content-Type", "application/json")
	if p.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.FormatInt(int64((p.RetryAfter+time.Second-1)/time.Second), 10))
	}
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": p.Message, "type": p.Code, "code": p.Code, "param": nil}})
}

// HealthReport is the body of GET /v1/admin/health.
type HealthReport struct {
	Deployments []health.Status `json:"deployments"`
	Routes      []RouteHealth   `json:"routes"`
}

// RouteHealth counts a route's rungs that would be tried now.
type RouteHealth struct {
	Model        string `json:"model"`
	Pool         string `json:"pool"`
	ExactModel   string `json:"exact_model"`
	Rungs        int    `json:"rungs"`
	HealthyRungs int    `json:"healthy_rungs"`
}

func (s *Server) handleAdminHealth(w http.ResponseWriter, r *http.Request) {
	rt := s.runtime()
	rep := HealthReport{Deployments: s.health.Statuses()}
	for _, m := range rt.snap.Models() {
		rr, _ := rt.snap.Route(m)
		rh := RouteHealth{Model: m, Pool: rr.Pool.ID, ExactModel: rr.Pool.Model, Rungs: len(rr.Deployments)}
		for _, d := range rr.Deployments {
			if ok, _ := s.health.Check(d.ID); ok && rt.rungs[d.ID].missing == "" {
				rh.HealthyRungs++
			}
		}
		rep.Routes = append(rep.Routes, rh)
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(rep)
}
