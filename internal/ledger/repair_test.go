package ledger

import "testing"

// TestRepairFix holds Repair's plan: what each impossible figure becomes,
// and what the record says.
func TestRepairFix(t *testing.T) {
	r := RequestFix{RequestID: "r", InputTokens: -1, OutputTokens: MaxTokens + 1, CachedTokens: 7,
		CostMicroUSD: -5, ReservedMicroUSD: 300}
	got := r.Fix()
	want := RequestFix{RequestID: "r", CachedTokens: 7, CostMicroUSD: 300, ReservedMicroUSD: 300}
	if r != want {
		t.Errorf("request fixed to %+v, want %+v", r, want)
	}
	if got.Seq != -1 || got.What != "input_tokens -1 -> 0, output_tokens 100000001 -> 0, cost_micro_usd -5 -> 300 (the reservation)" {
		t.Errorf("request record %+v", got)
	}
	r = RequestFix{RequestID: "r", CostMicroUSD: MaxCostMicro + 1, ReservedMicroUSD: -1}
	if got := r.Fix(); r.CostMicroUSD != 0 || r.ReservedMicroUSD != 0 ||
		got.What != "reserved_micro_usd -1 -> 0, cost_micro_usd 10000000000001 -> 0 (the reservation)" {
		t.Errorf("request with no sane reservation: %+v, %+v", r, got)
	}
	for _, c := range []struct {
		class string
		to    int64
	}{{"", 40}, {"timeout", 0}} {
		a := AttemptFix{RequestID: "r", Seq: 2, FailureClass: c.class, InputTokens: 3, OutputTokens: -2,
			CostMicroUSD: -1, RequestCostMicroUSD: 40}
		got := a.Fix()
		if a.InputTokens != 3 || a.OutputTokens != 0 || a.CostMicroUSD != c.to || got.Seq != 2 {
			t.Errorf("attempt (class %q) fixed to %+v, %+v", c.class, a, got)
		}
	}
}
