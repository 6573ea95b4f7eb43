package route

import (
	"time"

	"github.com/spillway-gw/spillway/internal/catalog"
)

// Latency is what hedging reads of health: a deployment's observed
// first-token p95 and how many samples it rests on. It is optional: a
// Health that does not implement it leaves p95 hedges at their fallback.
// It must be read-only.
type Latency interface {
	FirstTokenP95(id string) (p95 time.Duration, samples int)
}

// Where a hedge's threshold came from (Hedge.Source).
const (
	HedgeFixed    = "fixed"    // the route's written duration
	HedgeP95      = "p95"      // the first rung's observed p95, within the route's floor
	HedgeFallback = "fallback" // too few samples for a p95: the route's fallback
)

// Hedge is a plan's hedging decision: how long the request's first attempt
// may go without a first token before the next rung of the same model
// starts alongside it.
type Hedge struct {
	// After is the threshold; 0 when the request is not hedged (the route
	// has no hedge, or the plan has no second rung of its first rung's
	// pool, or it is a last-resort probe or shed).
	After time.Duration
	// Source says where After came from: HedgeFixed, HedgeP95 or
	// HedgeFallback; "" when not hedged.
	Source string
	// P95 and Samples are the first rung's observed first-token figures
	// (p95 hedges only; Samples 0 when health has none).
	P95     time.Duration
	Samples int
}

// race decides how the plan's attempts race and end: the route's refusal
// buffer, and its hedge when the plan is to be tried (Planned) and a
// second rung of the first rung's pool follows it. Read-only, and
// allocation-free.
func (p *Plan) race(h Health) {
	rr := p.Route
	p.RefusalBuffer = rr.RefusalBuffer
	hc := rr.Hedge
	if hc == nil || p.Verdict != Planned || !samePoolFollows(rr, p.Order) {
		return
	}
	if !hc.After.P95 {
		p.Hedge = Hedge{After: hc.After.Fixed.D(), Source: HedgeFixed}
		return
	}
	p.Hedge = Hedge{After: hc.Fallback.D(), Source: HedgeFallback}
	if l, ok := h.(Latency); ok {
		p.Hedge.P95, p.Hedge.Samples = l.FirstTokenP95(p.Order[0].ID)
	}
	if p.Hedge.Samples >= catalog.HedgeMinSamples {
		p.Hedge.After, p.Hedge.Source = min(max(p.Hedge.P95, hc.Min.D()), catalog.MaxHedgeAfter), HedgeP95
	}
}

// samePoolFollows reports whether a later rung of order is in the same
// pool as its first (the route's own, or its fallback pool): a hedge
// never changes the model.
func samePoolFollows(rr *catalog.ResolvedRoute, order []*catalog.Deployment) bool {
	if len(order) < 2 {
		return false
	}
	own := inPool(rr.Deployments, order[0])
	for _, d := range order[1:] {
		if inPool(rr.Deployments, d) == own {
			return true
		}
	}
	return false
}

func inPool(ds []*catalog.Deployment, d *catalog.Deployment) bool {
	for _, x := range ds {
		if x == d {
			return true
		}
	}
	return false
}
