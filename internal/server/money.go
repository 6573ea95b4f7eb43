package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/spillway-gw/spillway/internal/budget"
	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/engine"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/ledger"
)

// Cost headers.
const (
	hdrCostUSD    = "X-Spillway-Cost-Usd"
	hdrCostStatus = "X-Spillway-Cost-Status"
)

// reserve holds the request's worst case once, before any provider is
// called: the most any kept rung could cost (output ceiling × output rate
// plus the input estimate). Bring-your-own-key rungs add nothing: they skip
// the credit gate. A refusal is returned as the caller's 429 with the
// specific reason, and never walks the chain.
func (s *Server) reserve(c *call, p *engine.Plan) *failure.Public {
	inputBytes := c.req.InputBytes()
	c.inputEst = budget.EstimateInputTokens(inputBytes)
	// The reservation must bound the bill, so the prompt is counted at one
	// token per byte (no tokenizer makes a token of less than a byte), plus
	// an allowance for each message's and the request's own framing, which
	// providers bill too; the ~4-bytes-per-token estimate undercounts.
	inputUpper := inputBytes + 32*len(c.req.Messages) + 64
	var amount int64
	for i := range p.Rungs {
		d := p.Rungs[i].Deployment
		if d.Funding == catalog.FundingBYOK {
			continue
		}
		if worst, ok := budget.WorstCaseMicro(d.Price, inputUpper, d.OutputCeiling(c.req.MaxTokens)); ok && worst > amount {
			amount = worst
		}
	}
	c.reserved = amount
	if s.opts.Budget == nil {
		return nil
	}
	scopes := make([]budget.Scope, 0, 4)
	if c.key.Org != "" {
		scopes = append(scopes, budget.Scope{Kind: ledger.ScopeOrg, ID: c.key.Org})
	}
	if c.key.Team != "" {
		scopes = append(scopes, budget.Scope{Kind: ledger.ScopeTeam, ID: c.key.Team})
	}
	scopes = append(scopes, budget.Scope{Kind: ledger.ScopeKey, ID: c.key.ID}, budget.Scope{Kind: ledger.ScopeModel, ID: c.req.Model})
	// TPM counts the prompt and the output the caller asked for; the worst
	// case of an unbounded request would lock out every TPM-limited key.
	hold, refusal := s.opts.Budget.Reserve(scopes, amount, c.inputEst+c.req.MaxTokens)
	if refusal != nil {
		return refusal.Public()
	}
	c.hold = hold
	if s.opts.Ledger != nil {
		s.opts.Ledger.Reserve(ledger.Reservation{RequestID: c.id, KeyID: c.key.ID, Org: c.key.Org, Team: c.key.Team,
			PublicModel: c.req.Model, AmountMicro: amount, CreatedAt: c.start.UTC()})
	}
	return nil
}

// charge decides what a finished request costs, against the serving rung's
// price: nothing when no rung served or the answer was empty; the delivered
// tokens when a stream broke or the caller left after commit; the
// provider's reported usage otherwise.
func charge(req *canonical.Request, p *engine.Plan, res *engine.Result, inputEst int) (u canonical.Usage, cost int64, status string) {
	if res.Served < 0 {
		return canonical.Usage{}, 0, ledger.CostNone
	}
	d := p.Rungs[res.Served].Deployment
	u = res.Usage
	switch {
	case res.Err != nil:
		// Cut short after commit: exactly what reached the caller.
		u.OutputTokens, u.ReasoningTokens = res.DeliveredTokens, 0
		if u.InputTokens == 0 {
			u.InputTokens = inputEst
		}
	case !res.UsageReported:
		u = canonical.Usage{InputTokens: inputEst, OutputTokens: res.DeliveredTokens}
		if r := res.Response; r != nil {
			u.OutputTokens = budget.EstimateInputTokens(len(r.Text) + len(r.Refusal) + argsLen(r.ToolCalls))
		}
	}
	// The provider was sent at most this many output tokens to write (the
	// reservation covered it); a figure above it is never billed.
	if limit := d.OutputCeiling(req.MaxTokens); limit > 0 && u.OutputTokens > limit {
		u.OutputTokens = limit
		u.ReasoningTokens = min(u.ReasoningTokens, limit)
	}
	empty := res.DeliveredEvents == 0
	if r := res.Response; r != nil {
		empty = r.Empty()
	}
	if d.Funding == catalog.FundingBYOK {
		return u, 0, ledger.CostUnpriced
	}
	if empty {
		return u, 0, ledger.CostPriced
	}
	return u, d.CostMicroUSD(u.InputTokens, u.CachedInputTokens, u.CacheWriteTokens, u.OutputTokens), ledger.CostPriced
}

func argsLen(tcs []canonical.ToolCall) int {
	n := 0
	for _, tc := range tcs {
		n += len(tc.Arguments)
	}
	return n
}

// settle settles the request exactly once: the budget hold, then the
// ledger's request and attempt rows. With wait, it returns only once the
// rows are durable, so it is called right before a response's final byte.
func (s *Server) settle(ctx context.Context, c *call, p *engine.Plan, res *engine.Result, wait bool) error {
	if c.settled {
		return nil
	}
	c.settled = true
	var u canonical.Usage
	var cost int64
	status := ledger.CostNone
	if res != nil && p != nil {
		u, cost, status = charge(c.req, p, res, c.inputEst)
		if res.UsageInvalid && status == ledger.CostPriced {
			// The provider's figure was impossible: the reservation, the
			// bound the caller agreed to, is the price.
			cost = c.reserved
		}
		if res.Served >= 0 {
			c.deployment = p.Rungs[res.Served].Deployment.ID
		}
	}
	c.cost, c.costStatus, c.billed = cost, status, u
	s.recordActivity(c, res)
	var err error
	if s.opts.Ledger != nil && c.key != nil {
		st := s.settlement(c, p, res, u, cost, status)
		if !wait {
			s.opts.Ledger.SettleAsync(st)
		} else {
			err = s.opts.Ledger.Settle(ctx, st)
		}
	}
	switch {
	case err == nil:
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		// The caller left while the row was being made durable; the
		// Writer still commits it, so there is nothing to alarm about.
		s.opts.Log.Debug("caller left during settlement", "request_id", c.id)
		err = nil
	default:
		// The row could not be made durable: the answer is withheld (an
		// answer that reached its caller always has its row), and nothing
		// is charged, here or in the ledger.
		s.opts.Log.Error("settling in the ledger; the answer is withheld", "request_id", c.id, "err", err)
		c.cost, c.costStatus = 0, ledger.CostNone
		cost = 0
	}
	if c.hold != nil {
		c.hold.Settle(cost, u.InputTokens+u.OutputTokens)
	}
	return err
}

// errLedgerUnavailable is what a caller is told when the ledger cannot
// record its request: before any work (admission), or instead of an
// answer that could not be recorded.
func errLedgerUnavailable(withheld bool) *failure.Public {
	msg := "the gateway cannot record usage right now, so it accepts no billable request; nothing was sent to a model provider or charged; retry shortly"
	if withheld {
		msg = "the gateway could not record this answer in its ledger, so the answer is withheld and nothing is charged; retry shortly"
	}
	return &failure.Public{Status: http.StatusServiceUnavailable, Code: "ledger_unavailable", Message: msg,
		RetryAfter: 5 * time.Second, Retryable: true}
}

// ledgerGate refuses billable work while the ledger cannot make rows
// durable.
func (s *Server) ledgerGate() *failure.Public {
	if s.opts.Ledger == nil || s.opts.Ledger.Unavailable() == nil {
		return nil
	}
	return errLedgerUnavailable(false)
}

// settlement builds the content-free ledger rows of a request.
func (s *Server) settlement(c *call, p *engine.Plan, res *engine.Result, u canonical.Usage, cost int64, status string) *ledger.Settlement {
	now := s.opts.Now()
	r := ledger.Request{
		RequestID: c.id, Org: c.key.Org, Team: c.key.Team, KeyID: c.key.ID,
		RouteDepth: -1, Status: c.ledgerStatus(res), CostMicroUSD: cost, CostStatus: status,
		ReservedMicroUSD: c.reserved, LatencyMS: now.Sub(c.start).Milliseconds(),
		StartedAt: c.start.UTC(), FinishedAt: now.UTC(),
	}
	if c.req != nil {
		r.PublicModel, r.Streamed = c.req.Model, c.req.Stream
	}
	st := &ledger.Settlement{}
	if res != nil {
		if res.Err != nil {
			r.FailureClass = string(res.Err.Class)
		}
		r.Attempts = len(res.Attempts)
		if res.Served >= 0 && p != nil {
			d := p.Rungs[res.Served].Deployment
			r.ExactModel, r.Deployment = p.ModelOf(res.Served), d.ID
			r.RouteDepth = c.poolIndex(d.ID)
			r.InputTokens, r.OutputTokens, r.CachedTokens = u.InputTokens, u.OutputTokens, u.CachedInputTokens
		}
		served := res.ServingAttempt()
		for i, a := range res.Attempts {
			la := ledger.Attempt{RequestID: c.id, Seq: i, Deployment: a.Deployment,
				FirstByteMS: a.FirstByte.Milliseconds(), DurationMS: a.Duration.Milliseconds(), StartedAt: a.Start.UTC()}
			if a.Err != nil {
				la.FailureClass, la.HTTPStatus = string(a.Err.Class), a.Err.Status
			} else {
				la.HTTPStatus = http.StatusOK
			}
			if i == served {
				la.InputTokens, la.OutputTokens, la.CostMicroUSD = u.InputTokens, u.OutputTokens, cost
			} else if ou, oc, ok := operatorCost(c, p, &a); ok {
				// The operator's, not the caller's: the request row has the
				// serving attempt's cost alone.
				la.InputTokens, la.OutputTokens, la.CostMicroUSD = ou.InputTokens, ou.OutputTokens, oc
			}
			if r.FirstTokenMS == 0 && a.Err == nil {
				r.FirstTokenMS = (a.Start.Sub(c.start) + a.FirstToken).Milliseconds()
			}
			st.Attempts = append(st.Attempts, la)
		}
	}
	r.Exercise = c.exercise != ""
	st.Request = r
	return st
}

// ledgerStatus is the request row's final status.
func (c *call) ledgerStatus(res *engine.Result) string {
	switch {
	case res == nil:
		return ledger.StatusFailed
	case res.Err == nil:
		return ledger.StatusOK
	case res.Err.Class == failure.ClientCancelled:
		return ledger.StatusCancelled
	case res.Committed:
		return ledger.StatusInterrupted
	}
	return ledger.StatusFailed
}

// poolIndex is a deployment's place in the route's ladder (its route
// depth): its pool index, continued through a fallback pool.
func (c *call) poolIndex(id string) int { return routeDepth(c.route, id) }

// setCostHeaders says what the request cost: the settled amount, or no
// cost and "unpriced" for bring-your-own-key traffic.
func setCostHeaders(h http.Header, c *call) {
	h.Set(hdrCostStatus, c.costStatus)
	if c.costStatus == ledger.CostPriced {
		h.Set(hdrCostUSD, ledger.FormatUSD(c.cost))
	}
}
