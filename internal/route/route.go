// Package route selects the candidate rungs of one request from its route's
// pool: hard filters first (eligibility is a filter, never a weight), with a
// reason for every rung kept or dropped so that `route explain` can show it.
package route

import (
	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/catalog"
)

// Reasons a rung is dropped.
const (
	ReasonPriceUnknown      = "price_unknown"
	ReasonCredentialMissing = "credential_missing"
	ReasonUnsupported       = "unsupported"
	ReasonNoAdapter         = "no_adapter"
)

// Candidate is one deployment of the route's pool, kept or dropped.
type Candidate struct {
	Deployment *catalog.Deployment
	Kept       bool
	// Reason is why the rung was dropped ("" when kept); Detail explains it.
	Reason string
	Detail string
}

// Filter drops a rung for a request by returning a reason (and detail); it
// returns "" to keep the rung. Filters must be cheap and do no I/O.
type Filter func(d *catalog.Deployment, req *canonical.Request) (reason, detail string)

// Selection is the ordered candidate list of one request.
type Selection struct {
	Route      *catalog.ResolvedRoute
	Candidates []Candidate
}

// Select applies filters to the route's deployments, in pool order. The
// first filter to drop a rung gives the reason.
func Select(rr *catalog.ResolvedRoute, req *canonical.Request, filters ...Filter) *Selection {
	s := &Selection{Route: rr, Candidates: make([]Candidate, 0, len(rr.Deployments))}
	for _, d := range rr.Deployments {
		c := Candidate{Deployment: d, Kept: true}
		for _, f := range filters {
			if reason, detail := f(d, req); reason != "" {
				c.Kept, c.Reason, c.Detail = false, reason, detail
				break
			}
		}
		s.Candidates = append(s.Candidates, c)
	}
	return s
}

// Kept returns the kept deployments, in order.
func (s *Selection) Kept() []*catalog.Deployment {
	out := make([]*catalog.Deployment, 0, len(s.Candidates))
	for _, c := range s.Candidates {
		if c.Kept {
			out = append(out, c.Deployment)
		}
	}
	return out
}

// Priced drops a host-funded rung that has no price or no bounded worst
// case: unpriced is never $0.
func Priced(d *catalog.Deployment, req *canonical.Request) (string, string) {
	if d.Funding == catalog.FundingBYOK {
		return "", ""
	}
	if d.Price == nil {
		return ReasonPriceUnknown, "host-funded deployment has no price"
	}
	if d.OutputCeiling(req.MaxTokens) <= 0 {
		return ReasonPriceUnknown, "no max_tokens, output cap or context window bounds the worst case"
	}
	return "", ""
}
