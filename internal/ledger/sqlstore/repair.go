package sqlstore

import (
	"fmt"

	"github.com/spillway-gw/spillway/internal/ledger"
)

// RequestFixColumns are the requests columns ScanRequestFix reads.
const RequestFixColumns = `request_id, input_tokens, output_tokens, cached_tokens,
	cost_micro_usd, reserved_micro_usd`

// ScanRequestFix reads a row of RequestFixColumns.
func ScanRequestFix(sc Scanner) (ledger.RequestFix, error) {
	var f ledger.RequestFix
	err := sc.Scan(&f.RequestID, &f.InputTokens, &f.OutputTokens, &f.CachedTokens, &f.CostMicroUSD, &f.ReservedMicroUSD)
	return f, err
}

// AttemptFixColumns are the columns ScanAttemptFix reads, from attempts
// as a joined with their requests as r.
const AttemptFixColumns = `a.request_id, a.seq, a.failure_class, a.input_tokens,
	a.output_tokens, a.cost_micro_usd, r.cost_micro_usd`

// ScanAttemptFix reads a row of AttemptFixColumns.
func ScanAttemptFix(sc Scanner) (ledger.AttemptFix, error) {
	var f ledger.AttemptFix
	err := sc.Scan(&f.RequestID, &f.Seq, &f.FailureClass, &f.InputTokens, &f.OutputTokens, &f.CostMicroUSD, &f.RequestCostMicroUSD)
	return f, err
}

// RequestOutOfBounds is the condition a requests row that Repair rewrites
// meets: a figure past ledger.RequestFix.Fix's bounds.
func RequestOutOfBounds() string {
	tok, cost := outOfBounds()
	return `input_tokens` + tok + ` OR output_tokens` + tok + ` OR cached_tokens` + tok + `
	OR cost_micro_usd` + cost + ` OR reserved_micro_usd` + cost
}

// AttemptOutOfBounds is the condition an attempts row, as a, that Repair
// rewrites meets: a figure past ledger.AttemptFix.Fix's bounds.
func AttemptOutOfBounds() string {
	tok, cost := outOfBounds()
	return `a.input_tokens` + tok + ` OR a.output_tokens` + tok + ` OR a.cost_micro_usd` + cost
}

func outOfBounds() (tok, cost string) {
	return fmt.Sprintf(" NOT BETWEEN 0 AND %d", ledger.MaxTokens), fmt.Sprintf(" NOT BETWEEN 0 AND %d", ledger.MaxCostMicro)
}
