package route

import "github.com/spillway-gw/spillway/internal/catalog"

// addFallback appends the candidates of the route's fallback pool (another
// exact model, allowed by the route's allow_model_change) after its own:
// gated and health-checked as the route's own rungs are, marked as
// changing the model, and kept ones tried after every own rung. It returns
// how many health dropped.
func (p *Plan) addFallback(in *Input, need *needs, h Health, r Readiness) (healthSkips int) {
	for _, d := range p.Route.FallbackDeployments {
		c := Candidate{Deployment: d, Kept: true, ModelChange: true}
		c.Reason, c.Detail = gate(d, in, need, r)
		if c.Reason == "" {
			c.Reason, c.Detail = diverged(in, p.Route.Fallback, d)
		}
		if c.Reason == "" && h != nil {
			if ok, why := h.Check(d.ID); !ok {
				c.Reason, c.Detail, c.Health = why, "deployment health", true
				healthSkips++
			}
		}
		if c.Reason != "" {
			c.Kept = false
		} else {
			p.Order = append(p.Order, d)
		}
		p.Candidates = append(p.Candidates, c)
	}
	return healthSkips
}

// ModelOf is the exact model deployment d serves in this plan: the
// fallback pool's for a model-changing rung, else the route's.
func (p *Plan) ModelOf(d *catalog.Deployment) string {
	if p.Route == nil {
		return ""
	}
	return p.Route.ModelOf(d)
}

// ownKept counts the kept rungs of the route's own pool (those before any
// model-changing rung in Order).
func (p *Plan) ownKept() int {
	n := 0
	for i := range p.Candidates {
		if c := &p.Candidates[i]; c.Kept && !c.ModelChange {
			n++
		}
	}
	return n
}
