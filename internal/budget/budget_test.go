package budget

import (
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/clock/clocktest"
	"github.com/spillway-gw/spillway/internal/ledger"
)

// Every refusal code at every scope: the limit sits on one scope only, the
// request is reserved against all four, and the refusal names that scope,
// its limit and what to do, and holds nothing anywhere.
func TestRefusalCodes(t *testing.T) {
	type gate struct {
		name   string
		budget ledger.Budget                                         // limits only; put on each scope in turn
		fill   func(t *testing.T, a *Accountant, c *clocktest.Clock) // uses up most of the limit
		amount int64
		tokens int
		code   func(kind string) string
		inMsg  string
		retry  time.Duration
	}
	gates := []gate{
		{
			name:   "credit",
			budget: ledger.Budget{CreditMicroUSD: i64(1_000_000)},
			fill: func(t *testing.T, a *Accountant, c *clocktest.Clock) {
				mustReserve(t, a, all4, 400_000, 0).Settle(400_000, 0)
				mustReserve(t, a, all4, 400_000, 0) // left open: holds count
			},
			amount: 300_000,
			code: func(kind string) string {
				if kind == ledger.ScopeOrg {
					return "org_credit_exhausted"
				}
				return kind + "_budget_exceeded"
			},
			inMsg: "$1.00",
		},
		{
			name:   "credit, request alone too dear",
			budget: ledger.Budget{CreditMicroUSD: i64(1_000_000)},
			fill:   func(*testing.T, *Accountant, *clocktest.Clock) {},
			amount: 1_000_001,
			code: func(kind string) string {
				if kind == ledger.ScopeOrg {
					return "org_credit_exhausted"
				}
				return kind + "_budget_exceeded"
			},
			inMsg: "lower max_tokens",
		},
		{
			name:   "daily cap",
			budget: ledger.Budget{DailyCapMicroUSD: i64(2_500_000)},
			fill: func(t *testing.T, a *Accountant, c *clocktest.Clock) {
				mustReserve(t, a, all4, 2_000_000, 0).Settle(2_000_000, 0)
			},
			amount: 600_000,
			code:   func(kind string) string { return kind + "_daily_cap_reached" },
			inMsg:  "daily cap of $2.50",
			retry:  12 * time.Hour, // t0 is noon
		},
		{
			name:   "daily cap, request alone too dear",
			budget: ledger.Budget{DailyCapMicroUSD: i64(2_500_000)},
			fill:   func(*testing.T, *Accountant, *clocktest.Clock) {},
			amount: 2_500_001,
			code:   func(kind string) string { return kind + "_daily_cap_reached" },
			inMsg:  "lower max_tokens",
		},
		{
			name:   "rpm",
			budget: ledger.Budget{RPM: 2},
			fill: func(t *testing.T, a *Accountant, c *clocktest.Clock) {
				mustReserve(t, a, all4, 0, 0).Release()
				c.Advance(15 * time.Second)
				mustReserve(t, a, all4, 0, 0).Release()
				c.Advance(5 * time.Second)
			},
			code:  func(kind string) string { return kind + "_rpm_exceeded" },
			inMsg: "2 requests per minute",
			retry: 40 * time.Second, // the first request leaves the window at t0+60s
		},
		{
			name:   "tpm",
			budget: ledger.Budget{TPM: 1000},
			fill: func(t *testing.T, a *Accountant, c *clocktest.Clock) {
				mustReserve(t, a, all4, 0, 300)
				c.Advance(10 * time.Second)
				mustReserve(t, a, all4, 0, 500)
				c.Advance(10 * time.Second)
			},
			tokens: 400,
			code:   func(kind string) string { return kind + "_tpm_exceeded" },
			inMsg:  "1000 tokens per minute",
			retry:  40 * time.Second, // 300 tokens leave at t0+60s: 500+400 fits
		},
		{
			name:   "tpm, request alone too large",
			budget: ledger.Budget{TPM: 1000},
			fill:   func(*testing.T, *Accountant, *clocktest.Clock) {},
			tokens: 1001,
			code:   func(kind string) string { return kind + "_tpm_exceeded" },
			inMsg:  "shorten the input",
		},
	}
	for _, g := range gates {
		for _, sc := range all4 {
			t.Run(g.name+"/"+sc.Kind, func(t *testing.T) {
				a, c := newTest(t0)
				a.SetBudgets([]ledger.Budget{limit(sc, g.budget)})
				g.fill(t, a, c)
				before := a.Snapshot()

				h, r := a.Reserve(all4, g.amount, g.tokens)
				if h != nil || r == nil {
					t.Fatalf("Reserve = %v, %v; want a refusal", h, r)
				}
				if r.Scope != sc || r.Code != g.code(sc.Kind) {
					t.Errorf("refusal %s at %v, want %s at %v", r.Code, r.Scope, g.code(sc.Kind), sc)
				}
				if r.RetryAfter != g.retry {
					t.Errorf("RetryAfter = %v, want %v", r.RetryAfter, g.retry)
				}
				if !strings.Contains(r.Message, g.inMsg) {
					t.Errorf("message %q does not say %q", r.Message, g.inMsg)
				}
				for _, other := range all4 { // no tenant ids, no spend figures
					if strings.Contains(r.Message, other.ID) {
						t.Errorf("message %q names %s", r.Message, other.ID)
					}
				}
				if p := r.Public(); p.Status != http.StatusTooManyRequests || p.Code != r.Code || p.RetryAfter != r.RetryAfter {
					t.Errorf("Public() = %+v", p)
				}
				for _, b := range before {
					x := stateOf(a, b.Scope)
					if b.HeldMicro != x.HeldMicro || b.Requests != x.Requests || b.Tokens != x.Tokens || b.SpentMicro != x.SpentMicro {
						t.Errorf("refusal changed %v: %+v -> %+v", b.Scope, b, x)
					}
				}
				for _, x := range a.Snapshot() {
					if x.HeldMicro != 0 && !slices.ContainsFunc(before, func(b ScopeState) bool { return b.Scope == x.Scope }) {
						t.Errorf("refusal left a hold at %v", x.Scope)
					}
				}
			})
		}
	}
}

// limit puts b's limits on sc.
func limit(sc Scope, b ledger.Budget) ledger.Budget {
	b.Scope, b.ID = sc.Kind, sc.ID
	return b
}

// A refusal at one scope leaves no hold and no count at any other, whatever
// the order the scopes were locked in.
func TestAllOrNothing(t *testing.T) {
	tests := []struct {
		name   string
		budget ledger.Budget
		first  []Scope // reserved first, so state creation (lock) order differs
	}{
		{"org credit", ledger.Budget{Scope: ledger.ScopeOrg, ID: "acme", CreditMicroUSD: i64(0)}, nil},
		{"org credit, key created first", ledger.Budget{Scope: ledger.ScopeOrg, ID: "acme", CreditMicroUSD: i64(0)}, []Scope{model, key}},
		{"model rpm", ledger.Budget{Scope: ledger.ScopeModel, ID: model.ID, RPM: 1}, []Scope{model}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _ := newTest(t0)
			if tt.first != nil {
				mustReserve(t, a, tt.first, 0, 0).Release()
			}
			a.SetBudgets([]ledger.Budget{tt.budget})
			before := map[Scope]ScopeState{}
			for _, s := range a.Snapshot() {
				before[s.Scope] = s
			}
			if _, r := a.Reserve(all4, 5, 7); r == nil {
				t.Fatal("not refused")
			}
			for _, sc := range all4 {
				s, b := stateOf(a, sc), before[sc]
				if s.HeldMicro != 0 || s.Requests != b.Requests || s.Tokens != b.Tokens {
					t.Errorf("%v after refusal: held %d, requests %d->%d, tokens %d->%d", sc, s.HeldMicro, b.Requests, s.Requests, b.Tokens, s.Tokens)
				}
			}
		})
	}
}

// 200 concurrent requests against a limit for exactly 10: exactly 10 pass,
// whichever gate it is, and nothing is ever overspent.
func TestConcurrentReserveNeverOverspends(t *testing.T) {
	const n, fits, amount, tokens = 200, 10, 1_000, 50
	tests := []struct {
		name string
		b    ledger.Budget
		code string
	}{
		{"org credit", ledger.Budget{Scope: ledger.ScopeOrg, ID: "acme", CreditMicroUSD: i64(fits * amount)}, "org_credit_exhausted"},
		{"key credit", ledger.Budget{Scope: ledger.ScopeKey, ID: "key_1", CreditMicroUSD: i64(fits * amount)}, "key_budget_exceeded"},
		{"team daily cap", ledger.Budget{Scope: ledger.ScopeTeam, ID: "research", DailyCapMicroUSD: i64(fits * amount)}, "team_daily_cap_reached"},
		{"model rpm", ledger.Budget{Scope: ledger.ScopeModel, ID: model.ID, RPM: fits}, "model_rpm_exceeded"},
		{"key tpm", ledger.Budget{Scope: ledger.ScopeKey, ID: "key_1", TPM: fits * tokens}, "key_tpm_exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _ := newTest(t0)
			a.SetBudgets([]ledger.Budget{tt.b})
			var (
				wg      sync.WaitGroup
				start   = make(chan struct{})
				granted atomic.Int64
				holds   = make(chan *Hold, n)
			)
			for range n {
				wg.Go(func() {
					<-start
					h, r := a.Reserve(all4, amount, tokens)
					if r != nil {
						if r.Code != tt.code {
							t.Errorf("refused with %s, want %s", r.Code, tt.code)
						}
						return
					}
					granted.Add(1)
					holds <- h
				})
			}
			close(start)
			wg.Wait()
			close(holds)
			if got := granted.Load(); got != fits {
				t.Fatalf("%d of %d reservations granted, want exactly %d", got, n, fits)
			}
			for _, sc := range all4 {
				if s := stateOf(a, sc); s.HeldMicro != fits*amount || s.Requests != fits || s.Tokens != fits*tokens {
					t.Errorf("%v: %+v", sc, s)
				}
			}
			for h := range holds {
				h.Settle(amount, tokens)
			}
			for _, sc := range all4 {
				if s := stateOf(a, sc); s.HeldMicro != 0 || s.SpentMicro != fits*amount {
					t.Errorf("%v after settling: %+v", sc, s)
				}
			}
		})
	}
}

func TestSettle(t *testing.T) {
	t.Run("nil hold", func(t *testing.T) {
		var h *Hold
		if h.Settle(1, 1) || h.Release() {
			t.Error("a nil hold settled")
		}
	})
	t.Run("twice is a no-op", func(t *testing.T) {
		a, _ := newTest(t0)
		h := mustReserve(t, a, all4, 1000, 100)
		if !h.Settle(400, 40) {
			t.Fatal("first Settle returned false")
		}
		if h.Settle(900, 90) || h.Release() {
			t.Error("second call returned true")
		}
		for _, sc := range all4 {
			if s := stateOf(a, sc); s.SpentMicro != 400 || s.TodayMicro != 400 || s.HeldMicro != 0 || s.Tokens != 40 || s.Requests != 1 {
				t.Errorf("%v: %+v", sc, s)
			}
		}
	})
	t.Run("concurrent settle counts once", func(t *testing.T) {
		a, _ := newTest(t0)
		h := mustReserve(t, a, all4, 1000, 100)
		var wg sync.WaitGroup
		var wins atomic.Int64
		for range 50 {
			wg.Go(func() {
				if h.Settle(700, 70) {
					wins.Add(1)
				}
			})
		}
		wg.Wait()
		if s := stateOf(a, org); wins.Load() != 1 || s.SpentMicro != 700 || s.HeldMicro != 0 {
			t.Errorf("%d winners, org %+v", wins.Load(), s)
		}
	})
	t.Run("less than reserved releases the rest", func(t *testing.T) {
		a, _ := newTest(t0)
		a.SetBudgets([]ledger.Budget{{Scope: ledger.ScopeKey, ID: "key_1", CreditMicroUSD: i64(1000), TPM: 100}})
		mustReserve(t, a, all4, 1000, 100).Settle(250, 30)
		if _, r := a.Reserve(all4, 751, 0); r == nil || r.Code != "key_budget_exceeded" {
			t.Errorf("751 of 750 left: %v", r)
		}
		if _, r := a.Reserve(all4, 0, 71); r == nil || r.Code != "key_tpm_exceeded" {
			t.Errorf("71 of 70 tokens left: %v", r)
		}
		mustReserve(t, a, all4, 750, 70)
	})
	t.Run("more than reserved is recorded", func(t *testing.T) {
		a, _ := newTest(t0)
		a.SetBudgets([]ledger.Budget{{Scope: ledger.ScopeOrg, ID: "acme", CreditMicroUSD: i64(1000)}})
		mustReserve(t, a, all4, 800, 10).Settle(1200, 15)
		if s := stateOf(a, org); s.SpentMicro != 1200 || s.Tokens != 15 {
			t.Errorf("org %+v, want the actual 1200 spent", s)
		}
		if _, r := a.Reserve(all4, 0, 0); r == nil || r.Code != "org_credit_exhausted" {
			t.Errorf("overspent org still reserves: %v", r)
		}
	})
	t.Run("negative figures count as zero", func(t *testing.T) {
		a, _ := newTest(t0)
		mustReserve(t, a, all4, -5, -5).Settle(-7, -7)
		if s := stateOf(a, key); s.SpentMicro != 0 || s.HeldMicro != 0 || s.Tokens != 0 {
			t.Errorf("key %+v", s)
		}
	})
	t.Run("release gives back money and tokens, not the request", func(t *testing.T) {
		a, _ := newTest(t0)
		h := mustReserve(t, a, all4, 1000, 100)
		if h.AmountMicro() != 1000 {
			t.Errorf("AmountMicro = %d", h.AmountMicro())
		}
		if !h.Release() {
			t.Fatal("Release returned false")
		}
		if s := stateOf(a, key); s.SpentMicro != 0 || s.HeldMicro != 0 || s.Tokens != 0 || s.Requests != 1 {
			t.Errorf("key %+v", s)
		}
	})
	t.Run("settled after the window passed", func(t *testing.T) {
		a, c := newTest(t0)
		h := mustReserve(t, a, all4, 1000, 100)
		c.Advance(90 * time.Second) // a long stream
		mustReserve(t, a, all4, 0, 10)
		h.Settle(1000, 500)
		if s := stateOf(a, key); s.Tokens != 10 || s.Requests != 1 {
			t.Errorf("an expired second was corrected: %+v", s)
		}
	})
}

func TestDuplicateScopesCountOnce(t *testing.T) {
	a, _ := newTest(t0)
	a.SetBudgets([]ledger.Budget{{Scope: ledger.ScopeKey, ID: "key_1", CreditMicroUSD: i64(100)}})
	h := mustReserve(t, a, []Scope{key, org, key, key}, 100, 5)
	if s := stateOf(a, key); s.HeldMicro != 100 || s.Requests != 1 {
		t.Errorf("key %+v", s)
	}
	h.Settle(60, 5)
	if s := stateOf(a, key); s.SpentMicro != 60 || s.HeldMicro != 0 {
		t.Errorf("key %+v", s)
	}
}

func TestNoScopes(t *testing.T) {
	a, _ := newTest(t0)
	h := mustReserve(t, a, nil, 100, 5)
	if !h.Settle(100, 5) || len(a.Snapshot()) != 0 {
		t.Error("an empty reservation touched something")
	}
}

func TestSaturatingFigures(t *testing.T) {
	a, _ := newTest(t0)
	a.SetBudgets([]ledger.Budget{{Scope: ledger.ScopeOrg, ID: "acme", CreditMicroUSD: i64(math.MaxInt64 - 1)}})
	mustReserve(t, a, all4, math.MaxInt64-10, 0)
	// spent+held+amount would wrap negative and pass if it were not saturated.
	if _, r := a.Reserve(all4, math.MaxInt64, 0); r == nil {
		t.Fatal("a wrapped sum passed the credit gate")
	}
	if _, r := a.Reserve(all4, 20, math.MaxInt); r == nil || r.Code != "org_credit_exhausted" {
		t.Fatalf("got %v", r)
	}
}

// The daily cap resets at UTC midnight; holds made before it still count
// after it, and their spend lands on the day they settle.
func TestDailyCapAcrossMidnight(t *testing.T) {
	late := time.Date(2026, 3, 10, 23, 59, 30, 0, time.UTC)
	a, c := newTest(late)
	a.SetBudgets([]ledger.Budget{{Scope: ledger.ScopeTeam, ID: "research", DailyCapMicroUSD: i64(1000)}})
	mustReserve(t, a, all4, 600, 0).Settle(600, 0)
	open := mustReserve(t, a, all4, 300, 0)

	_, r := a.Reserve(all4, 200, 0)
	if r == nil || r.Code != "team_daily_cap_reached" || r.RetryAfter != 30*time.Second {
		t.Fatalf("before midnight: %+v", r)
	}
	c.Advance(29*time.Second + 999*time.Millisecond)
	if _, r := a.Reserve(all4, 200, 0); r == nil || r.RetryAfter != time.Millisecond {
		t.Fatalf("1 ms before midnight: %+v", r)
	}
	c.Advance(time.Millisecond)
	if s := stateOf(a, team); s.TodayMicro != 0 || s.SpentMicro != 600 || s.HeldMicro != 300 {
		t.Errorf("at midnight: %+v", s)
	}
	// 300 still held from yesterday: 700 fits, 701 does not.
	if _, r := a.Reserve(all4, 701, 0); r == nil {
		t.Error("yesterday's open hold was forgotten")
	}
	h := mustReserve(t, a, all4, 700, 0)
	open.Settle(300, 0)
	h.Settle(100, 0)
	if s := stateOf(a, team); s.TodayMicro != 400 || s.SpentMicro != 1000 {
		t.Errorf("after settling: %+v", s)
	}
}

// RPM and TPM windows slide second by second with the clock.
func TestRateWindowsSlide(t *testing.T) {
	t.Run("rpm", func(t *testing.T) {
		a, c := newTest(t0.Add(500 * time.Millisecond))
		a.SetBudgets([]ledger.Budget{{Scope: ledger.ScopeKey, ID: "key_1", RPM: 3}})
		for range 3 {
			mustReserve(t, a, all4, 0, 0)
			c.Advance(10 * time.Second) // at t0+0.5, 10.5, 20.5
		}
		want := []time.Duration{29500 * time.Millisecond, 10 * time.Second, 10 * time.Second} // until t0+60, then +70, +80
		for i := range 3 {
			_, r := a.Reserve(all4, 0, 0)
			if r == nil || r.Code != "key_rpm_exceeded" || r.RetryAfter != want[i] {
				t.Fatalf("step %d: %+v, want retry after %v", i, r, want[i])
			}
			c.Advance(r.RetryAfter)
			mustReserve(t, a, all4, 0, 0)
		}
		if s := stateOf(a, key); s.Requests != 3 {
			t.Errorf("%d requests in the window, want 3", s.Requests)
		}
		c.Advance(2 * time.Minute)
		if s := stateOf(a, key); s.Requests != 0 {
			t.Errorf("%d requests in the window after two idle minutes", s.Requests)
		}
	})
	t.Run("tpm corrected at settle", func(t *testing.T) {
		a, c := newTest(t0)
		a.SetBudgets([]ledger.Budget{{Scope: ledger.ScopeModel, ID: model.ID, TPM: 1000}})
		h := mustReserve(t, a, all4, 0, 800)
		c.Advance(5 * time.Second)
		if _, r := a.Reserve(all4, 0, 300); r == nil || r.Code != "model_tpm_exceeded" || r.RetryAfter != 55*time.Second {
			t.Fatalf("got %+v", r)
		}
		h.Settle(0, 200) // 800 reserved, 200 used
		mustReserve(t, a, all4, 0, 800)
		if _, r := a.Reserve(all4, 0, 1); r == nil {
			t.Fatal("TPM full yet a token passed")
		}
		c.Advance(55 * time.Second) // t0's 200 leave
		mustReserve(t, a, all4, 0, 200)
	})
	t.Run("clock stepping back", func(t *testing.T) {
		a, c := newTest(t0)
		a.SetBudgets([]ledger.Budget{{Scope: ledger.ScopeKey, ID: "key_1", TPM: 100}})
		mustReserve(t, a, all4, 0, 50)
		c.Set(c.Now().Add(-2 * time.Minute))
		h := mustReserve(t, a, all4, 0, 50)
		if _, r := a.Reserve(all4, 0, 1); r == nil {
			t.Fatal("a step back emptied the window")
		}
		h.Settle(0, 10) // its second is outside the window: not corrected
		if s := stateOf(a, key); s.Tokens != 100 {
			t.Errorf("tokens %d, want 100", s.Tokens)
		}
	})
}

// SetBudgets takes effect for the next Reserve and keeps open holds.
func TestSetBudgetsWithOpenHolds(t *testing.T) {
	a, _ := newTest(t0)
	a.SetBudgets([]ledger.Budget{{Scope: ledger.ScopeKey, ID: "key_1", CreditMicroUSD: i64(1000)}})
	h1 := mustReserve(t, a, all4, 600, 0)

	a.SetBudgets([]ledger.Budget{{Scope: ledger.ScopeKey, ID: "key_1", CreditMicroUSD: i64(500)}})
	if _, r := a.Reserve(all4, 0, 0); r == nil || r.Code != "key_budget_exceeded" {
		t.Fatalf("tightened below the open hold: %v", r)
	}
	if !h1.Settle(100, 0) {
		t.Fatal("open hold did not settle")
	}
	h2 := mustReserve(t, a, all4, 400, 0)

	a.SetBudgets(nil) // no limits at all
	mustReserve(t, a, all4, 1_000_000, 0)
	if s := stateOf(a, key); s.SpentMicro != 100 || s.HeldMicro != 1_000_400 || s.CreditMicro != nil {
		t.Errorf("key %+v", s)
	}
	h2.Release()

	// Last entry wins; a non-positive RPM is no limit; a zero credit allows nothing.
	a.SetBudgets([]ledger.Budget{
		{Scope: ledger.ScopeKey, ID: "key_1", RPM: 1},
		{Scope: ledger.ScopeKey, ID: "key_1", RPM: -1, CreditMicroUSD: i64(-5)},
	})
	if _, r := a.Reserve(all4, 1, 0); r == nil || r.Code != "key_budget_exceeded" {
		t.Fatalf("negative credit: %v", r)
	}
	if s := stateOf(a, key); s.RPM != 0 || s.CreditMicro == nil || *s.CreditMicro != 0 {
		t.Errorf("key limits %+v", s)
	}
}

func TestLoadSpend(t *testing.T) {
	a, c := newTest(t0)
	a.SetBudgets([]ledger.Budget{
		{Scope: ledger.ScopeOrg, ID: "acme", CreditMicroUSD: i64(10_000)},
		{Scope: ledger.ScopeKey, ID: "key_1", DailyCapMicroUSD: i64(1_000)},
	})
	open := mustReserve(t, a, all4, 50, 0)
	a.LoadSpend([]ledger.Spend{
		{Scope: ledger.ScopeOrg, ID: "acme", TotalMicro: 9_900, TodayMicro: 400},
		{Scope: ledger.ScopeKey, ID: "key_1", TotalMicro: 5_000, TodayMicro: 950},
		{Scope: ledger.ScopeTeam, ID: "other", TotalMicro: -3, TodayMicro: -3},
	}, t0.Truncate(24*time.Hour))

	if s := stateOf(a, org); s.SpentMicro != 9_900 || s.TodayMicro != 400 || s.HeldMicro != 50 {
		t.Errorf("org %+v", s)
	}
	if s := stateOf(a, Scope{ledger.ScopeTeam, "other"}); s.SpentMicro != 0 || s.TodayMicro != 0 {
		t.Errorf("negative seed: %+v", s)
	}
	if _, r := a.Reserve(all4, 1, 0); r == nil || r.Code != "key_daily_cap_reached" {
		t.Errorf("950 today + 50 held of a 1000 cap: %v", r)
	}
	open.Release()
	if _, r := a.Reserve(all4, 101, 0); r == nil || r.Code != "org_credit_exhausted" {
		t.Errorf("9900 of 10000 spent: %v", r)
	}
	mustReserve(t, a, all4, 50, 0)

	// A seed taken yesterday sets totals, not today.
	c.Advance(24 * time.Hour)
	a.LoadSpend([]ledger.Spend{{Scope: ledger.ScopeKey, ID: "key_1", TotalMicro: 7_000, TodayMicro: 999}}, t0)
	if s := stateOf(a, key); s.SpentMicro != 7_000 || s.TodayMicro != 0 {
		t.Errorf("key %+v", s)
	}
}

func TestSnapshot(t *testing.T) {
	a, _ := newTest(t0)
	a.SetBudgets([]ledger.Budget{
		{Scope: ledger.ScopeTeam, ID: "zeta", RPM: 5},
		{Scope: ledger.ScopeOrg, ID: "acme", CreditMicroUSD: i64(900), DailyCapMicroUSD: i64(100), TPM: 10},
	})
	mustReserve(t, a, all4, 30, 4).Settle(20, 3)
	mustReserve(t, a, all4, 40, 5)
	got := a.Snapshot()
	var names []string
	for _, s := range got {
		names = append(names, s.Kind+"/"+s.ID)
	}
	if want := "key/key_1 model/claude-sonnet-4-5 org/acme team/research team/zeta"; strings.Join(names, " ") != want {
		t.Fatalf("scopes %v, want %s", names, want)
	}
	o := got[2]
	if *o.CreditMicro != 900 || *o.DailyCapMicro != 100 || o.TPM != 10 || o.RPM != 0 ||
		o.SpentMicro != 20 || o.TodayMicro != 20 || o.HeldMicro != 40 || o.Requests != 2 || o.Tokens != 8 {
		t.Errorf("org %+v", o)
	}
	if z := got[4]; z.RPM != 5 || z.CreditMicro != nil || z.Requests != 0 {
		t.Errorf("zeta %+v", z)
	}
}

func TestUSD(t *testing.T) {
	for micro, want := range map[int64]string{
		0: "$0.00", 1: "$0.000001", 1234: "$0.001234", 1_500_000: "$1.50",
		10_000_000: "$10.00", 12_345_678: "$12.345678", -2_500_000: "-$2.50",
	} {
		if got := usd(micro); got != want {
			t.Errorf("usd(%d) = %q, want %q", micro, got, want)
		}
	}
}
