package server

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/route"
)

// Explanation is the body of the route explain endpoint: the matched
// route, every rung kept or dropped and why, and the final order.
type Explanation struct {
	Model      string          `json:"model"`
	ExactModel string          `json:"exact_model"`
	Pool       string          `json:"pool"`
	Rungs      []ExplainedRung `json:"rungs"`
	// Order is the deployments that would be tried, in order.
	Order []string `json:"order"`
	// LastResort names the rung a last-resort probe would go to when
	// health skipped every rung; empty otherwise.
	LastResort string `json:"last_resort,omitempty"`
}

// ExplainedRung is one deployment of the pool.
type ExplainedRung struct {
	Deployment string `json:"deployment"`
	Provider   string `json:"provider"`
	Kept       bool   `json:"kept"`
	Reason     string `json:"reason,omitempty"`
	Detail     string `json:"detail,omitempty"`
	Health     string `json:"health"`
}

// handleExplain explains routing for a request: GET with ?model= (and
// optionally max_tokens, stream), or POST with a request body: an
// Anthropic Messages body when anthropic-version is sent (its
// anthropic-beta flags count), an OpenAI Responses body with
// ?dialect=responses, else an OpenAI Chat body.
func (s *Server) handleExplain(w http.ResponseWriter, r *http.Request) {
	var req *canonical.Request
	switch r.Method {
	case http.MethodPost:
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.Catalog.Load().Config().Server.MaxBodyBytes))
		if err != nil {
			writeJSONError(w, failure.BadRequest("", "could not read the body"))
			return
		}
		d := openaiChat()
		switch {
		case r.Header.Get("Anthropic-Version") != "":
			d = anthropicMessages()
		case r.URL.Query().Get("dialect") == "responses":
			d = openaiResponses()
		}
		var pub *failure.Public
		if req, pub = d.Decode(body, r.Header); pub != nil {
			writeJSONError(w, pub)
			return
		}
	default:
		q := r.URL.Query()
		req = &canonical.Request{Model: q.Get("model"), Stream: q.Get("stream") == "true"}
		if v := q.Get("max_tokens"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				writeJSONError(w, failure.BadRequest("max_tokens", "max_tokens must be a positive integer"))
				return
			}
			req.MaxTokens = n
		}
	}
	if req.Model == "" {
		writeJSONError(w, failure.BadRequest("model", "model is required"))
		return
	}
	rt := s.runtime()
	rr, ok := rt.snap.Route(req.Model)
	if !ok {
		writeJSONError(w, &failure.Public{Status: http.StatusNotFound, Code: "model_not_found", Param: "model", Message: "no route for model " + strconv.Quote(req.Model)})
		return
	}
	sel := route.Select(rr, req, rt.eligible, route.Priced, rt.capable, s.healthFilter)
	ex := Explanation{Model: req.Model, ExactModel: rr.Pool.Model, Pool: rr.Pool.ID, Order: []string{}}
	for _, c := range sel.Candidates {
		st, _ := s.health.Status(c.Deployment.ID, s.opts.Now())
		ex.Rungs = append(ex.Rungs, ExplainedRung{Deployment: c.Deployment.ID, Provider: c.Deployment.Provider,
			Kept: c.Kept, Reason: c.Reason, Detail: c.Detail, Health: string(st.State)})
		if c.Kept {
			ex.Order = append(ex.Order, c.Deployment.ID)
		}
	}
	if len(ex.Order) == 0 {
		// Say where a last-resort probe would go without spending one.
		best, bestWait := "", int64(-1)
		for _, c := range sel.Candidates {
			if isHealthSkip(c.Reason) {
				wait, _ := s.health.Wait(c.Deployment.ID)
				if bestWait < 0 || int64(wait) < bestWait {
					best, bestWait = c.Deployment.ID, int64(wait)
				}
			}
		}
		ex.LastResort = best
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(ex)
}
