package budget

import (
	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/tokens"
)

// The money rule lives in internal/billing, the price in catalog.Price and
// the estimator in tokens; these two names stay for budget's callers.

// WorstCaseMicro is price.WorstCaseMicro: the most one request can cost at
// price; ok is false when that cannot be priced (no price, or no output
// ceiling).
func WorstCaseMicro(price *catalog.Price, inputTokens, outputCeiling int) (micro int64, ok bool) {
	return price.WorstCaseMicro(inputTokens, outputCeiling)
}

// EstimateInputTokens is tokens.Estimate: the input tokens of a request
// body of the given size in bytes (a quarter, rounded up).
func EstimateInputTokens(bytes int) int { return tokens.Estimate(bytes) }
