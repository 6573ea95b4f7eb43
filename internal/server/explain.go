package server

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/health"
	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/route"
	"github.com/spillway-gw/spillway/internal/tokens"
)

// Explanation is the body of the route explain endpoint: the matched
// route, every rung kept or dropped and why, and the final order.
type Explanation struct {
	Model      string `json:"model"`
	ExactModel string `json:"exact_model,omitempty"`
	Pool       string `json:"pool,omitempty"`
	// Route is the matched route: its place in the file and its rules.
	Route *ExplainedRoute `json:"route,omitempty"`
	// Verdict is planned, last_resort, unknown_model, no_matching_route
	// or no_rungs.
	Verdict string          `json:"verdict"`
	Rungs   []ExplainedRung `json:"rungs"`
	// Order is the deployments that would be tried, in order.
	Order []string `json:"order"`
	// LastResort names the rung a last-resort probe would go to when
	// health skipped every rung; empty otherwise.
	LastResort string `json:"last_resort,omitempty"`
	// Priority is the request's priority (?priority=, default normal),
	// shown when the route sheds.
	Priority string `json:"priority,omitempty"`
	// Exercise names the secondary rung the request would be sent to
	// first (the route's exercise share); empty when none.
	Exercise string `json:"exercise,omitempty"`
	// Shed says why the request would be shed (verdict "shed").
	Shed *ExplainedShed `json:"shed,omitempty"`
	// Pin is the deployment that served the conversation's last turn;
	// Sticky is the same when the pin moved it to the front of Order (it
	// is kept and healthy, and the request continues the conversation).
	Pin    string `json:"pin,omitempty"`
	Sticky string `json:"sticky,omitempty"`
	// Rank is "cost_latency" when Order was ranked (see the rungs' rank).
	Rank string `json:"rank,omitempty"`
	// Hedge is the route's hedge and the threshold this request would
	// use; RefusalFailover the route's refusal failover. Absent when the
	// route has none.
	Hedge           *ExplainedHedge   `json:"hedge,omitempty"`
	RefusalFailover *ExplainedRefusal `json:"refusal_failover,omitempty"`
}

// ExplainedRoute is the route a request matched.
type ExplainedRoute struct {
	Index int                `json:"index"`
	Line  int                `json:"line,omitempty"`
	Match catalog.RouteMatch `json:"match"`
}

// ExplainedRung is one deployment of the pool.
type ExplainedRung struct {
	Deployment string `json:"deployment"`
	Provider   string `json:"provider"`
	Kept       bool   `json:"kept"`
	Reason     string `json:"reason,omitempty"`
	Detail     string `json:"detail,omitempty"`
	Health     string `json:"health"`
	// ModelChange names the other exact model a fallback pool's rung
	// serves; empty for the route's own rungs.
	ModelChange string `json:"model_change,omitempty"`
	// Quota is a rung's declared quota and its use in the last minute.
	Quota *ExplainedQuota `json:"quota,omitempty"`
	// Sticky marks the rung the conversation is pinned to, tried first.
	Sticky bool `json:"sticky,omitempty"`
	// Rank is what ranking saw of a kept rung, on a ranked route.
	Rank *ExplainedRank `json:"rank,omitempty"`
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
	// The attributes a caller's key and headers would give, as query
	// parameters: explain is asked by an operator, not by the tenant.
	q := r.URL.Query()
	key := &ledger.Key{Org: q.Get("org"), Team: q.Get("team"), Residency: q.Get("residency")}
	hr := r.Clone(r.Context())
	hr.Header = r.Header.Clone()
	rc := &rt.snap.Config().Routing
	if v := q.Get("workload"); v != "" {
		hr.Header.Set(rc.WorkloadHeader, v)
	}
	if v := q.Get("conversation"); v != "" {
		hr.Header.Set(rc.ConversationHeader, v)
	}
	attrs := s.attributes(hr, key, req, rt.snap)
	prio, pub := explainPriority(q.Get("priority"))
	if pub != nil {
		writeJSONError(w, pub)
		return
	}
	conv, pub := conversation(hr, rt.snap)
	if pub != nil {
		writeJSONError(w, pub)
		return
	}
	// Exercise turns are read, not taken: explain shows the decision the
	// next request would get.
	pl := route.Make(rt.snap, &route.Input{Req: req, Attrs: attrs, InputTokens: tokens.Estimate(req.InputBytes()),
		Priority: prio, Rates: rt.routing, Turns: (*turnPeeker)(rt.routing), Conversation: conv, Sticky: s.pins, Quality: s.quality}, s.health, rt)
	if pl.Verdict == route.UnknownModel {
		writeJSONError(w, &failure.Public{Status: http.StatusNotFound, Code: "model_not_found", Param: "model", Message: "no route for model " + strconv.Quote(req.Model)})
		return
	}
	ex := explain(pl, req.Model, s.health, s.opts.Now())
	explainRouting(&ex, pl, prio, rt.routing)
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(ex)
}

// verdictNames are the Explanation.Verdict values.
var verdictNames = map[route.Verdict]string{route.Planned: "planned", route.LastResort: "last_resort",
	route.UnknownModel: "unknown_model", route.NoMatchingRoute: "no_matching_route", route.NoRungs: "no_rungs",
	route.Shed: "shed"}

// explain renders a plan: exactly what the server would execute.
func explain(pl *route.Plan, model string, h *health.Tracker, now time.Time) Explanation {
	ex := Explanation{Model: model, Verdict: verdictNames[pl.Verdict], Rungs: []ExplainedRung{}, Order: []string{}}
	if rr := pl.Route; rr != nil {
		ex.ExactModel, ex.Pool = rr.Pool.Model, rr.Pool.ID
		ex.Route = &ExplainedRoute{Index: rr.Index, Line: rr.Line, Match: rr.Match}
	}
	for _, c := range pl.Candidates {
		st, _ := h.Status(c.Deployment.ID, now)
		ex.Rungs = append(ex.Rungs, ExplainedRung{Deployment: c.Deployment.ID, Provider: c.Deployment.Provider,
			Kept: c.Kept, Reason: c.Reason, Detail: c.Detail, Health: string(st.State)})
	}
	for _, d := range pl.Order {
		if pl.Verdict == route.LastResort {
			ex.LastResort = d.ID
		} else {
			ex.Order = append(ex.Order, d.ID)
		}
	}
	explainOrder(&ex, pl)
	explainRace(&ex, pl)
	return ex
}
