package billing

import (
	"time"

	"github.com/spillway-gw/spillway/internal/budget"
	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/engine"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/tokens"
)

// Request is what billing knows of a customer request.
type Request struct {
	ID    string
	Start time.Time
	Key   *ledger.Key
	Req   *canonical.Request
	// Route is the matched route: a served deployment's place in it is
	// the request row's route depth.
	Route *catalog.ResolvedRoute
	// Plan holds the rungs the request may be served by, in order.
	Plan *engine.Plan
	// Exercise: routing sent the request to a secondary rung first, to
	// keep its failover path exercised.
	Exercise bool
	// Settled, when set, runs once, right after the settlement, with the
	// result it settled (nil when the request ended without one, e.g. a
	// panic) and the bill: the one place for what observes a settled
	// request (the server's settled: cost figures, the dashboard). It runs
	// inside Settle, so it must not call Settle, and a call to Settle made
	// meanwhile returns only after it. Nil: nothing runs.
	Settled func(res *engine.Result, b *Bill)
}

// Reserve holds the request's worst case once, before any provider is
// called: the most any of the plan's rungs could cost (output ceiling ×
// output rate plus the prompt's upper bound at the dearest input rate).
// Bring-your-own-key rungs add nothing: they skip the credit gate. A
// budget's refusal is returned as the caller's 429 with the specific
// reason, and the request goes no further. Otherwise the returned
// Settlement must be settled (Settle), once, however the request ends.
func (b *Biller) Reserve(r Request) (*Settlement, *failure.Public) {
	inputBytes := r.Req.InputBytes()
	st := &Settlement{b: b, r: r, inputEst: tokens.Estimate(inputBytes), bill: Bill{Status: ledger.CostNone}}
	// The reservation must bound the bill, so the prompt is counted at one
	// token per byte (no tokenizer makes a token of less than a byte), plus
	// an allowance for each message's and the request's own framing, which
	// providers bill too; the estimate undercounts.
	inputUpper := inputBytes + 32*len(r.Req.Messages) + 64
	for i := range r.Plan.Rungs {
		d := r.Plan.Rungs[i].Deployment
		if d.Funding == catalog.FundingBYOK {
			continue
		}
		if worst, ok := d.Price.WorstCaseMicro(inputUpper, d.OutputCeiling(r.Req.MaxTokens)); ok && worst > st.reserved {
			st.reserved = worst
		}
	}
	if b.Budget == nil {
		return st, nil
	}
	// TPM counts the prompt and the output the caller asked for; the worst
	// case of an unbounded request would lock out every TPM-limited key.
	hold, refusal := b.Budget.Reserve(scopes(r.Key, r.Req.Model), st.reserved, st.inputEst+r.Req.MaxTokens)
	if refusal != nil {
		return nil, refusal.Public()
	}
	st.hold = hold
	if b.Ledger != nil {
		b.Ledger.Reserve(ledger.Reservation{RequestID: r.ID, KeyID: r.Key.ID, Org: r.Key.Org, Team: r.Key.Team,
			PublicModel: r.Req.Model, AmountMicro: st.reserved, CreatedAt: r.Start.UTC()})
	}
	return st, nil
}

// scopes are the budgets a request of key for model counts against.
func scopes(k *ledger.Key, model string) []budget.Scope {
	sc := make([]budget.Scope, 0, 4)
	if k.Org != "" {
		sc = append(sc, budget.Scope{Kind: ledger.ScopeOrg, ID: k.Org})
	}
	if k.Team != "" {
		sc = append(sc, budget.Scope{Kind: ledger.ScopeTeam, ID: k.Team})
	}
	return append(sc, budget.Scope{Kind: ledger.ScopeKey, ID: k.ID}, budget.Scope{Kind: ledger.ScopeModel, ID: model})
}
