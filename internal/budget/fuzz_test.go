package budget

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/ledger"
)

// FuzzAccounting runs random Reserve/Settle/Release/clock sequences against
// a reference model and checks, after every step, that nothing is
// overspent (spent+held within credit, today+held within the daily cap,
// window counts within RPM/TPM), that holds and spend add up, and that no
// money gate refuses a request that fits. Settlements never exceed their
// reservation here, as in a well-estimated request.
func FuzzAccounting(f *testing.F) {
	f.Add([]byte{10, 20, 5, 30, 0, 15, 40, 0, 15, 40, 1, 0, 128, 2, 0, 0, 3, 200, 3})
	f.Add([]byte{1, 1, 1, 1, 0, 15, 255, 0, 3, 9, 3, 255, 255, 0, 15, 1, 1, 0, 0})
	f.Add([]byte("the quick brown fox reserves over the lazy dog at midnight"))
	f.Add([]byte{255, 255, 255, 255, 0, 15, 100, 0, 15, 100, 0, 15, 100, 3, 61, 1, 0, 15, 100})
	f.Fuzz(func(t *testing.T, prog []byte) {
		if len(prog) < 4 || len(prog) > 4+3*512 { // long programs only slow the search
			return
		}
		a, c := newTest(time.Date(2026, 3, 10, 23, 50, 0, 0, time.UTC))
		credit, daily := int64(prog[0])*20, int64(prog[1])*20
		rpm, tpm := int(prog[2]%8)+1, int(prog[3])*4+1
		a.SetBudgets([]ledger.Budget{
			{Scope: ledger.ScopeOrg, ID: org.ID, CreditMicroUSD: &credit},
			{Scope: ledger.ScopeTeam, ID: team.ID, DailyCapMicroUSD: &daily},
			{Scope: ledger.ScopeKey, ID: key.ID, CreditMicroUSD: &daily, TPM: tpm},
			{Scope: ledger.ScopeModel, ID: model.ID, RPM: rpm},
		})
		type open struct {
			h      *Hold
			scopes []Scope
			amount int64
			tokens int
		}
		var (
			holds []open
			spent = map[Scope]int64{}
			today = map[Scope]int64{}
			held  = map[Scope]int64{}
			day   = dayOf(c.Now())
		)
		rollRef := func() {
			if d := dayOf(c.Now()); d != day {
				day, today = d, map[Scope]int64{}
			}
		}
		lim := map[Scope][2]int64{org: {credit, -1}, team: {-1, daily}, key: {daily, -1}, model: {-1, -1}}
		prog = prog[4:]
		for step := 0; len(prog) >= 3; step, prog = step+1, prog[3:] {
			op, x, y := prog[0]%4, prog[1], prog[2]
			switch op {
			case 0:
				var scopes []Scope
				for i, sc := range all4 {
					if x&(1<<i) != 0 {
						scopes = append(scopes, sc)
					}
				}
				amount, tokens := int64(y)*5, int(y)
				h, r := a.Reserve(scopes, amount, tokens)
				rollRef()
				if r != nil {
					if h != nil {
						t.Fatalf("step %d: both a hold and a refusal", step)
					}
					if strings.HasSuffix(r.Code, "_budget_exceeded") || r.Code == "org_credit_exhausted" {
						if l := lim[r.Scope][0]; spent[r.Scope]+held[r.Scope]+amount <= l {
							t.Fatalf("step %d: %s refused %d with %d spent, %d held of %d", step, r.Code, amount, spent[r.Scope], held[r.Scope], l)
						}
					}
					if strings.HasSuffix(r.Code, "_daily_cap_reached") {
						if l := lim[r.Scope][1]; today[r.Scope]+held[r.Scope]+amount <= l {
							t.Fatalf("step %d: %s refused %d with %d today, %d held of %d", step, r.Code, amount, today[r.Scope], held[r.Scope], l)
						}
					}
					break
				}
				for _, sc := range scopes {
					held[sc] += amount
				}
				holds = append(holds, open{h, scopes, amount, tokens})
			case 1, 2:
				if len(holds) == 0 {
					break
				}
				i := int(x) % len(holds)
				o := holds[i]
				holds = append(holds[:i], holds[i+1:]...)
				actual, toks := o.amount*int64(y)/255, o.tokens*int(y)/255
				if op == 2 {
					actual, toks = 0, 0
					o.h.Release()
				} else {
					o.h.Settle(actual, toks)
				}
				if o.h.Settle(1, 1) {
					t.Fatalf("step %d: settled twice", step)
				}
				rollRef()
				for _, sc := range o.scopes {
					held[sc] -= o.amount
					spent[sc] += actual
					today[sc] += actual
				}
			case 3:
				c.Advance(time.Duration(x) * time.Duration(y%16+1) * time.Second)
				rollRef()
			}
			checkInvariants(t, step, a, lim, spent, today, held, int64(rpm), int64(tpm))
		}
	})
}

func checkInvariants(t *testing.T, step int, a *Accountant, lim map[Scope][2]int64, spent, today, held map[Scope]int64, rpm, tpm int64) {
	t.Helper()
	for _, s := range a.Snapshot() {
		sc := s.Scope
		where := fmt.Sprintf("step %d, %v (%+v)", step, sc, s)
		if s.SpentMicro != spent[sc] || s.HeldMicro != held[sc] || s.TodayMicro != today[sc] {
			t.Fatalf("%s: want spent %d held %d today %d", where, spent[sc], held[sc], today[sc])
		}
		if l := lim[sc][0]; l >= 0 && s.SpentMicro+s.HeldMicro > l {
			t.Fatalf("%s: overspent credit %d", where, l)
		}
		if l := lim[sc][1]; l >= 0 && s.TodayMicro+s.HeldMicro > l {
			t.Fatalf("%s: over the daily cap %d", where, l)
		}
		if sc == model && s.Requests > rpm {
			t.Fatalf("%s: over RPM %d", where, rpm)
		}
		if sc == key && s.Tokens > tpm {
			t.Fatalf("%s: over TPM %d", where, tpm)
		}
		if s.HeldMicro < 0 || s.Tokens < 0 || s.Requests < 0 {
			t.Fatalf("%s: negative figure", where)
		}
	}
}

// Random Reserve/Settle/Release from many goroutines at once, under -race:
// credit is never exceeded at any instant a Snapshot sees, and once every
// hold is closed the spend is exactly what was settled.
func TestConcurrentRandomNeverOverspends(t *testing.T) {
	const credit, workers, rounds = 50_000, 16, 300
	a, c := newTest(t0)
	a.SetBudgets([]ledger.Budget{
		{Scope: ledger.ScopeOrg, ID: org.ID, CreditMicroUSD: i64(credit)},
		{Scope: ledger.ScopeTeam, ID: team.ID, DailyCapMicroUSD: i64(credit / 2)},
	})
	var (
		wg      sync.WaitGroup
		settled atomic.Int64
		done    = make(chan struct{})
	)
	watcher := make(chan error, 1)
	go func() { // owned here: ends when done closes
		defer close(watcher)
		for {
			select {
			case <-done:
				return
			default:
			}
			for _, s := range a.Snapshot() {
				if s.CreditMicro != nil && s.SpentMicro+s.HeldMicro > *s.CreditMicro ||
					s.DailyCapMicro != nil && s.TodayMicro+s.HeldMicro > *s.DailyCapMicro {
					watcher <- fmt.Errorf("overspent: %+v", s)
					return
				}
			}
		}
	}()
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			var open []*Hold
			for range rounds {
				if len(open) > 0 && rng.IntN(3) == 0 {
					i := rng.IntN(len(open))
					h := open[i]
					open = append(open[:i], open[i+1:]...)
					if rng.IntN(4) == 0 {
						h.Release()
						continue
					}
					actual := rng.Int64N(h.AmountMicro() + 1)
					if h.Settle(actual, 0) {
						settled.Add(actual)
					}
					continue
				}
				if rng.IntN(50) == 0 {
					c.Advance(time.Second)
				}
				if h, r := a.Reserve(all4, rng.Int64N(2_000), rng.IntN(100)); r == nil {
					open = append(open, h)
				}
			}
			for _, h := range open {
				h.Release()
			}
		})
	}
	wg.Wait()
	close(done)
	if err := <-watcher; err != nil {
		t.Fatal(err)
	}
	if s := stateOf(a, org); s.HeldMicro != 0 || s.SpentMicro != settled.Load() || s.SpentMicro > credit {
		t.Errorf("org %+v, settled %d", s, settled.Load())
	}
}
