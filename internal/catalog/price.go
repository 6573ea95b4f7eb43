package catalog

import (
	"math"
	"math/bits"
)

// Priced reports whether requests to d can be accounted for: a byok
// deployment always (the caller pays the provider), a host-funded one only
// with a price. An unpriced host-funded deployment is never routed
// (price_unknown): unpriced is never $0.
func (d *Deployment) Priced() bool {
	return d.Funding == FundingBYOK || d.Price != nil
}

// CostMicroUSD prices one attempt's usage at d's price (Price.CostMicroUSD):
// 0 when d has no price, so callers check Priced first. For a byok
// deployment the result is an estimate at the configured list price, never
// a charge.
func (d *Deployment) CostMicroUSD(input, cachedInput, cacheWrite, output int) int64 {
	return d.Price.CostMicroUSD(input, cachedInput, cacheWrite, output)
}

// CostMicroUSD prices usage in micro-dollars, rounded up to a whole
// micro-dollar so that the gateway never under-bills. cachedInput
// (prompt-cache reads) and cacheWrite are part of input and are charged at
// their own rates when set, the rest of input at InputPerMTok. Negative
// counts are taken as 0; if cachedInput+cacheWrite exceed input, they are
// charged in full and the uncached remainder is 0.
//
// A nil price costs 0: callers must tell an unknown price from a zero one
// first (Deployment.Priced).
func (p *Price) CostMicroUSD(input, cachedInput, cacheWrite, output int) int64 {
	if p == nil {
		return 0
	}
	input, cachedInput, cacheWrite, output = max(input, 0), max(cachedInput, 0), max(cacheWrite, 0), max(output, 0)
	uncached := max(input-cachedInput-cacheWrite, 0)
	cachedRate, writeRate := p.CachedInputPerMTok, p.CacheWritePerMTok
	if cachedRate == 0 {
		cachedRate = p.InputPerMTok
	}
	if writeRate == 0 {
		writeRate = p.InputPerMTok
	}
	// USD per million tokens is micro-dollars per token. Rates become whole
	// pico-dollars per token so that the sum is exact: in floating point,
	// 10 tokens at $0.3/MTok come to 3.0000000000000004 and would round up
	// to 4 micro-dollars.
	var pico uint64
	var overflow bool
	for _, t := range []struct {
		n    int
		rate float64
	}{{uncached, p.InputPerMTok}, {cachedInput, cachedRate}, {cacheWrite, writeRate}, {output, p.OutputPerMTok}} {
		r := math.Round(t.rate * 1e6)
		if t.n == 0 || !(r > 0) {
			continue // zero, negative or NaN rates (refused by Validate) cost nothing
		}
		if r >= math.MaxInt64 {
			overflow = true
			break
		}
		hi, lo := bits.Mul64(uint64(t.n), uint64(r))
		var carry uint64
		pico, carry = bits.Add64(pico, lo, 0)
		if hi != 0 || carry != 0 {
			overflow = true
			break
		}
	}
	micro := pico / 1e6
	if pico%1e6 != 0 {
		micro++
	}
	if overflow || micro > math.MaxInt64 {
		return math.MaxInt64 // saturate: absurd, but never wraps to a small charge
	}
	return int64(micro)
}

// WorstCaseMicro is the most one request can cost at p, in micro-dollars:
// inputTokens at the dearest input rate (uncached, cache read or cache
// write, since the request may write the prompt cache) plus outputCeiling
// tokens at the output rate, rounded up as CostMicroUSD rounds.
// outputCeiling is what Deployment.OutputCeiling gives for the request's
// max_tokens.
//
// ok is false when the worst case cannot be priced: no price (unpriced is
// never $0) or no output ceiling (unbounded).
func (p *Price) WorstCaseMicro(inputTokens, outputCeiling int) (micro int64, ok bool) {
	if p == nil || outputCeiling <= 0 {
		return 0, false
	}
	inputTokens = max(inputTokens, 0)
	micro = p.CostMicroUSD(inputTokens, 0, 0, outputCeiling)
	micro = max(micro, p.CostMicroUSD(inputTokens, inputTokens, 0, outputCeiling))
	micro = max(micro, p.CostMicroUSD(inputTokens, 0, inputTokens, outputCeiling))
	return micro, true
}

// OutputCeiling is the most output tokens one request can produce at d, for
// reserving the worst case: maxTokens when positive, capped by
// MaxOutputTokens when that is set; else MaxOutputTokens; else
// ContextWindow. 0 means unbounded or unknown, so the worst case cannot be
// priced.
func (d *Deployment) OutputCeiling(maxTokens int) int {
	switch {
	case maxTokens > 0 && d.MaxOutputTokens > 0:
		return min(maxTokens, d.MaxOutputTokens)
	case maxTokens > 0:
		return maxTokens
	case d.MaxOutputTokens > 0:
		return d.MaxOutputTokens
	case d.ContextWindow > 0:
		return d.ContextWindow
	}
	return 0
}
