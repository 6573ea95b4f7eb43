package ledger

import (
	"fmt"
	"strings"
)

// Store.Repair's plan, the same in every store: which stored figures are
// impossible and what each becomes. The stores only find the rows and
// write them back.

// RequestFix is a request row's figures as Repair reads and rewrites them.
// They are int64 because a row an older gateway wrote may hold any.
type RequestFix struct {
	RequestID                               string
	InputTokens, OutputTokens, CachedTokens int64
	CostMicroUSD, ReservedMicroUSD          int64
}

// Fix bounds f's figures: an impossible count becomes 0, an impossible
// reservation 0, an impossible cost the reservation (what the caller
// agreed to risk, itself bounded first). It returns the row's record.
func (f *RequestFix) Fix() Repaired {
	var what []string
	zeroCounts(&what, []namedCount{{"input_tokens", &f.InputTokens}, {"output_tokens", &f.OutputTokens},
		{"cached_tokens", &f.CachedTokens}})
	if !SaneCost(f.ReservedMicroUSD) {
		what = append(what, fmt.Sprintf("reserved_micro_usd %d -> 0", f.ReservedMicroUSD))
		f.ReservedMicroUSD = 0
	}
	if !SaneCost(f.CostMicroUSD) {
		what = append(what, fmt.Sprintf("cost_micro_usd %d -> %d (the reservation)", f.CostMicroUSD, f.ReservedMicroUSD))
		f.CostMicroUSD = f.ReservedMicroUSD
	}
	return Repaired{RequestID: f.RequestID, Seq: -1, What: strings.Join(what, ", ")}
}

// AttemptFix is an attempt row's figures as Repair reads and rewrites
// them, with its request's cost (as repaired already).
type AttemptFix struct {
	RequestID                 string
	Seq                       int
	FailureClass              string
	InputTokens, OutputTokens int64
	CostMicroUSD              int64
	RequestCostMicroUSD       int64
}

// Fix bounds f's figures: an impossible count becomes 0, an impossible
// cost 0, or the request's cost for the serving attempt (no failure
// class), which carries it. It returns the row's record.
func (f *AttemptFix) Fix() Repaired {
	var what []string
	zeroCounts(&what, []namedCount{{"input_tokens", &f.InputTokens}, {"output_tokens", &f.OutputTokens}})
	if !SaneCost(f.CostMicroUSD) {
		to := int64(0)
		if f.FailureClass == "" {
			to = f.RequestCostMicroUSD
		}
		what = append(what, fmt.Sprintf("cost_micro_usd %d -> %d", f.CostMicroUSD, to))
		f.CostMicroUSD = to
	}
	return Repaired{RequestID: f.RequestID, Seq: f.Seq, What: strings.Join(what, ", ")}
}

type namedCount struct {
	name string
	v    *int64
}

// zeroCounts sets each impossible count to 0, saying so in what.
func zeroCounts(what *[]string, counts []namedCount) {
	for _, c := range counts {
		if *c.v < 0 || *c.v > MaxTokens {
			*what = append(*what, fmt.Sprintf("%s %d -> 0", c.name, *c.v))
			*c.v = 0
		}
	}
}
