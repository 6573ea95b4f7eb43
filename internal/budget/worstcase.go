package budget

import "github.com/spillway-gw/spillway/internal/catalog"

// WorstCaseMicro is the most one request can cost at price, in
// micro-dollars: inputTokens charged at the dearest input rate (uncached,
// cache read or cache write, since the request may write the prompt cache)
// plus outputCeiling tokens at the output rate, rounded up as
// catalog.Deployment.CostMicroUSD rounds. outputCeiling is what
// catalog.Deployment.OutputCeiling gives for the request's max_tokens.
//
// ok is false when the worst case cannot be priced: no price (unpriced is
// never $0) or no output ceiling (unbounded). Such a rung is ineligible;
// the caller reserves the maximum over the rungs that remain.
func WorstCaseMicro(price *catalog.Price, inputTokens, outputCeiling int) (micro int64, ok bool) {
	if price == nil || outputCeiling <= 0 {
		return 0, false
	}
	inputTokens = max(inputTokens, 0)
	d := catalog.Deployment{Price: price}
	micro = d.CostMicroUSD(inputTokens, 0, 0, outputCeiling)
	micro = max(micro, d.CostMicroUSD(inputTokens, inputTokens, 0, outputCeiling))
	micro = max(micro, d.CostMicroUSD(inputTokens, 0, inputTokens, outputCeiling))
	return micro, true
}

// EstimateInputTokens estimates the input tokens of a request body of the
// given size in bytes: bytes/4, rounded up. It is an estimate for the
// reservation and TPM only (English prose runs near 4 bytes a token, code
// and other scripts denser, JSON framing looser); settlement always uses
// the provider's reported usage.
func EstimateInputTokens(bytes int) int {
	if bytes <= 0 {
		return 0
	}
	return bytes/4 + min(bytes%4, 1)
}
