package server

import (
	"net/http"
	"strings"
	"time"

	"github.com/spillway-gw/spillway/internal/engine"
	"github.com/spillway-gw/spillway/internal/route"
	"github.com/spillway-gw/spillway/internal/tracing"
)

// What a finished request tells metrics and traces beyond the access log:
// which rungs it failed over between, which one served, and (tracing on)
// its span and one child span per attempt. The handler's hooks are three:
// startTrace when the request arrives, ran when the engine returns, and
// observe when it is logged.

// ran keeps the engine's plan and result for observe.
func (c *call) ran(p *engine.Plan, res *engine.Result) { c.eplan, c.res = p, res }

// startTrace begins the request's span when tracing is on, as a child of
// the caller's traceparent, and names the trace in the response's
// X-Spillway-Trace-Id when it is recorded. Tracing off: nothing happens,
// and nothing is allocated.
func (s *Server) startTrace(w http.ResponseWriter, r *http.Request, c *call) {
	t := s.opts.Tracer
	if t == nil {
		return
	}
	op := "chat"
	if c.d.Name() == "openai-embeddings" {
		op = "embeddings"
	}
	_, path, _ := strings.Cut(r.Pattern, " ") // the mux's fixed pattern, never the caller's text
	c.span = t.Start(r.Context(), r.Header, c.start, op, r.Method, path)
	c.span.Config = s.runtime().snap.Version()
	if id := c.span.TraceID(); id != "" {
		w.Header().Set(tracing.HeaderTraceID, id)
	}
}

// observe counts the request's failovers and the deployment that served
// it, by route, and ends its span at end.
func (s *Server) observe(c *call, end time.Time) {
	if c.route != nil && c.res != nil && c.eplan != nil {
		s.opts.Metrics.ObserveResult(c.route.Public, c.eplan, c.res)
	}
	if c.span != nil {
		s.opts.Tracer.End(c.span, c.traced(), end)
	}
}

// traced is what the request's span records: names, codes and counts,
// never content.
func (c *call) traced() *tracing.Request {
	tr := &tracing.Request{ID: c.id, Dialect: c.d.Name(), Status: c.status, Outcome: c.outcome,
		Stream: c.req != nil && c.req.Stream, Cost: c.cost, CostStatus: c.costStatus, Usage: c.billed,
		Exercise: c.exercise, Plan: c.eplan, Result: c.res}
	if c.route != nil {
		tr.Route, tr.Pool, tr.Model = c.route.Public, c.route.Pool.ID, c.route.Pool.Model
		tr.ServedModel = servedModel(c, c.res)
	}
	if c.res != nil {
		tr.UsageEstimated = !c.res.UsageReported
	}
	if pl := c.plan; pl != nil {
		tr.Sticky = pl.Sticky
		for i := range pl.Candidates {
			if cd := &pl.Candidates[i]; !cd.Kept {
				tr.Dropped = append(tr.Dropped, tracing.Dropped{Deployment: cd.Deployment.ID, Reason: cd.Reason})
			}
		}
	}
	return tr
}

// healthyRungs counts each route's rungs that would be tried now, for
// the metrics' scrape.
func (s *Server) healthyRungs() []route.RungHealth {
	rt := s.runtime()
	return route.HealthyRungs(rt.snap, s.health, rt)
}
