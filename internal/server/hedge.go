package server

import (
	"net/http"
	"time"

	"github.com/spillway-gw/spillway/internal/engine"
	"github.com/spillway-gw/spillway/internal/route"
)

// This file is the server's side of two opt-in route behaviours, hedging
// and refusal failover: what the plan hands the engine, what the answer
// and explain say of them, and what the operator pays for the attempts
// the caller does not.

// hdrHedge says what a request's hedge did: won (the hedge served), lost
// (the first attempt served) or failed (neither did). Absent when none
// started.
const hdrHedge = "X-Spillway-Hedge"

// racing hands the engine the plan's hedge threshold and refusal buffer.
func racing(pl *route.Plan, p *engine.Plan) {
	p.Hedge, p.RefusalBuffer = pl.Hedge.After, pl.RefusalBuffer
}

// setHedgeHeader says what the request's hedge did, if one started.
func setHedgeHeader(h http.Header, res *engine.Result) {
	if res.Hedge != "" {
		h.Set(hdrHedge, string(res.Hedge))
	}
}

// ExplainedHedge is a route's hedge as a request would meet it.
type ExplainedHedge struct {
	// After is the route's setting: a duration, or "p95".
	After string `json:"after"`
	// ThresholdMS is the threshold this request would use; 0 when it
	// would not be hedged (Fires false).
	ThresholdMS float64 `json:"threshold_ms"`
	// Source is where the threshold came from: fixed, p95 (the first
	// rung's observed first-token p95, within the route's floor) or
	// fallback (too few samples for a p95).
	Source string `json:"source,omitempty"`
	// P95MS and Samples are the first rung's observed figures (p95 only).
	P95MS   float64 `json:"first_token_p95_ms,omitempty"`
	Samples int     `json:"samples,omitempty"`
	// Fires says whether the request would arm a hedge: false when the
	// plan has no second rung of its first rung's model, is a last-resort
	// probe, or is shed.
	Fires bool `json:"fires"`
}

// ExplainedRefusal is a route's refusal failover.
type ExplainedRefusal struct {
	BufferBytes int `json:"buffer_bytes"`
}

// explainRace adds the route's hedge and refusal failover, as the plan
// decided them, to an explanation.
func explainRace(ex *Explanation, pl *route.Plan) {
	rr := pl.Route
	if rr == nil {
		return
	}
	if h := rr.Hedge; h != nil {
		ex.Hedge = &ExplainedHedge{After: h.After.String(), Fires: pl.Hedge.After > 0, Source: pl.Hedge.Source,
			ThresholdMS: ms(pl.Hedge.After), P95MS: ms(pl.Hedge.P95), Samples: pl.Hedge.Samples}
	}
	if rr.RefusalBuffer > 0 {
		ex.RefusalFailover = &ExplainedRefusal{BufferBytes: rr.RefusalBuffer}
	}
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
