package budget

import (
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/ledger"
)

// benchAccountant has limits at all four scopes, large enough never to
// refuse, so every gate is checked and nothing short-circuits.
func benchAccountant() *Accountant {
	a := New(nil)
	huge := int64(1) << 60
	var bs []ledger.Budget
	for _, sc := range all4 {
		bs = append(bs, ledger.Budget{Scope: sc.Kind, ID: sc.ID, CreditMicroUSD: &huge, DailyCapMicroUSD: &huge, RPM: 1 << 40, TPM: 1 << 50})
	}
	a.SetBudgets(bs)
	return a
}

// One request's accounting: Reserve across org, team, key and model, then
// Settle. Serial: the cost without contention.
func BenchmarkReserveSettle(b *testing.B) {
	a := benchAccountant()
	b.ReportAllocs()
	for b.Loop() {
		h, r := a.Reserve(all4, 12_000, 5_000)
		if r != nil {
			b.Fatal(r)
		}
		h.Settle(9_000, 3_000)
	}
}

// Parallel: each goroutine is a different key of the same org, team and
// model, so the shared scopes' mutexes are contended as in production.
func BenchmarkReserveSettleParallel(b *testing.B) {
	a := benchAccountant()
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		scopes := []Scope{org, team, {ledger.ScopeKey, "key_" + strconv.FormatInt(next.Add(1), 10)}, model}
		for pb.Next() {
			h, r := a.Reserve(scopes, 12_000, 5_000)
			if r != nil {
				b.Fatal(r)
			}
			h.Settle(9_000, 3_000)
		}
	})
}

// The refusal path: a caller hammering an exhausted key.
func BenchmarkReserveRefused(b *testing.B) {
	a := New(nil)
	a.SetBudgets([]ledger.Budget{{Scope: ledger.ScopeKey, ID: key.ID, CreditMicroUSD: i64(0)}})
	b.ReportAllocs()
	for b.Loop() {
		if _, r := a.Reserve(all4, 12_000, 5_000); r == nil {
			b.Fatal("not refused")
		}
	}
}

func BenchmarkWorstCaseMicro(b *testing.B) {
	p := &catalog.Price{InputPerMTok: 3, OutputPerMTok: 15, CachedInputPerMTok: 0.3, CacheWritePerMTok: 3.75}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := WorstCaseMicro(p, 3_000, 8_192); !ok {
			b.Fatal("unpriced")
		}
	}
}
