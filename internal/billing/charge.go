package billing

import (
	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/engine"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/tokens"
)

// charge decides what a finished request costs, against the serving rung's
// price: nothing when no rung served or the answer was empty; the
// delivered tokens when a stream broke or the caller left after commit;
// the provider's reported usage otherwise.
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
			u.OutputTokens = tokens.Estimate(len(r.Text) + len(r.Refusal) + argsLen(r.ToolCalls))
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
	return u, d.Price.CostMicroUSD(u.InputTokens, u.CachedInputTokens, u.CacheWriteTokens, u.OutputTokens), ledger.CostPriced
}

func argsLen(tcs []canonical.ToolCall) int {
	n := 0
	for _, tc := range tcs {
		n += len(tc.Arguments)
	}
	return n
}

// operatorCost prices an attempt that a provider may bill but the caller
// does not pay for: a hedge's loser, a refusal moved on from. Its tokens
// are what the provider reported before the attempt ended (input, cached
// input, output), and else the gateway's estimate: the prompt's estimate
// as input (the provider received the prompt) and, as output, what was
// read from the attempt (a loser is cancelled at the winner's first token,
// so that is nothing or little). The output is never above the rung's
// ceiling, and the cost never above the request's reservation (the worst
// case of every rung). Any other attempt, and a bring-your-own-key rung,
// costs the operator nothing here. ok is false when the attempt is not
// one the operator pays for.
func (s *Settlement) operatorCost(a *engine.Attempt) (u canonical.Usage, cost int64, ok bool) {
	if a.Err == nil || (a.Err.Class != failure.HedgedLost && a.Err.Class != failure.Refused) {
		return u, 0, false
	}
	d := s.r.Plan.Rungs[a.Rung].Deployment
	u = canonical.Usage{InputTokens: s.inputEst, OutputTokens: a.OutputSeen}
	if a.UsageReported {
		if a.Usage.InputTokens > 0 {
			u.InputTokens, u.CachedInputTokens, u.CacheWriteTokens = a.Usage.InputTokens, a.Usage.CachedInputTokens, a.Usage.CacheWriteTokens
		}
		u.OutputTokens = max(a.Usage.OutputTokens, a.OutputSeen)
	}
	if limit := d.OutputCeiling(s.r.Req.MaxTokens); limit > 0 {
		u.OutputTokens = min(u.OutputTokens, limit)
	}
	if d.Funding == catalog.FundingBYOK {
		return u, 0, true
	}
	return u, min(d.Price.CostMicroUSD(u.InputTokens, u.CachedInputTokens, u.CacheWriteTokens, u.OutputTokens), s.reserved), true
}
