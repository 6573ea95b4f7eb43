// Package route is spillway's one selection module: given a snapshot, a
// request's attributes and read-only views of health and the runtime, Make
// returns the plan (the matched route, every rung kept or dropped with the
// gate that dropped it, the order, the last-resort rung). The server
// executes that plan and route explain prints it, from the same call, so
// the two never disagree. Eligibility is a gate, never a weight.
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
	// Health is true when health, not a gate, dropped the rung: only such
	// rungs may get a last-resort probe.
	Health bool
	// ModelChange marks a rung of the route's fallback pool: it serves
	// another exact model (allowed by the route's allow_model_change).
	ModelChange bool
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
