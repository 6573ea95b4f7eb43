package redisstate

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/budget"
	"github.com/spillway-gw/spillway/internal/ledger"
)

func accountants(t *testing.T, p budget.DownPolicy, cs []*Client, bs ...ledger.Budget) []*budget.Accountant {
	out := make([]*budget.Accountant, len(cs))
	for i, c := range cs {
		out[i] = budget.New(nil)
		out[i].SetBudgets(bs)
		c.ShareBudgets(out[i], p)
	}
	return out
}

func ptr(v int64) *int64 { return &v }

var acme = []budget.Scope{{Kind: ledger.ScopeOrg, ID: "acme"}, {Kind: ledger.ScopeKey, ID: "k1"}}

// 300 concurrent reservations spread over three replicas against a credit
// for exactly 10 hold exactly 10; settling frees nothing (spent), a
// release gives one back.
func TestBudgetNoOverspendAcrossReplicas(t *testing.T) {
	url := redisURL(t)
	prefix := testPrefix()
	cs := []*Client{open(t, url, prefix, nil), open(t, url, prefix, nil), open(t, url, prefix, nil)}
	as := accountants(t, budget.DownPolicy{}, cs, ledger.Budget{Scope: ledger.ScopeOrg, ID: "acme", CreditMicroUSD: ptr(10_000)})
	var ok, refused atomic.Int32
	var holds sync.Map
	var wg sync.WaitGroup
	for i := range 300 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, r := as[i%3].Reserve(acme, 1000, 10)
			switch {
			case h != nil:
				ok.Add(1)
				holds.Store(i, h)
			case r != nil && r.Code == "org_credit_exhausted":
				refused.Add(1)
			default:
				t.Errorf("reservation %d: %v", i, r)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 10 || refused.Load() != 290 {
		t.Fatalf("%d held, %d refused; want exactly 10 held across replicas", ok.Load(), refused.Load())
	}
	// Settle all at their full cost: the credit is spent.
	holds.Range(func(_, v any) bool { v.(*budget.Hold).Settle(1000, 10); return true })
	time.Sleep(100 * time.Millisecond) // settlements are queued
	if h, _ := as[1].Reserve(acme, 1, 1); h != nil {
		t.Fatal("a spent credit still held a request on another replica")
	}
}

// An RPM limit holds across replicas; its refusal says when to retry.
func TestRPMAcrossReplicas(t *testing.T) {
	url := redisURL(t)
	prefix := testPrefix()
	cs := []*Client{open(t, url, prefix, nil), open(t, url, prefix, nil)}
	as := accountants(t, budget.DownPolicy{}, cs, ledger.Budget{Scope: ledger.ScopeKey, ID: "k1", RPM: 5, TPM: 1000})
	n := 0
	var last *budget.Refusal
	for i := range 12 {
		if h, r := as[i%2].Reserve(acme, 0, 10); h != nil {
			n++
			h.Settle(0, 10)
		} else {
			last = r
		}
	}
	if n != 5 || last == nil || last.Code != "key_rpm_exceeded" || last.RetryAfter <= 0 || last.RetryAfter > time.Minute {
		t.Fatalf("%d passed, last refusal %+v; want 5 across two replicas and a retry within the minute", n, last)
	}
	// TPM: one request asking more than the limit alone is refused for good.
	if _, r := as[0].Reserve([]budget.Scope{{Kind: ledger.ScopeKey, ID: "k1"}}, 0, 5000); r == nil || r.Code != "key_tpm_exceeded" && r.Code != "key_rpm_exceeded" {
		t.Fatalf("over the TPM alone: %+v", r)
	}
}

// Redis down: money limits refuse with 503 budget_unavailable by default;
// with an allowance each replica spends its share alone; rate-only scopes
// use local windows.
func TestBudgetRedisDown(t *testing.T) {
	url := redisURL(t)
	p, purl := newProxy(t, url)
	c := open(t, purl, testPrefix(), func(o *Options) { o.Timeout = 30 * time.Millisecond })
	credit := ledger.Budget{Scope: ledger.ScopeOrg, ID: "acme", CreditMicroUSD: ptr(10_000)}
	rate := ledger.Budget{Scope: ledger.ScopeKey, ID: "k1", RPM: 100}
	refuse := accountants(t, budget.DownPolicy{}, []*Client{c}, credit, rate)[0]
	allow := budget.New(nil)
	allow.SetBudgets([]ledger.Budget{credit})
	c.ShareBudgets(allow, budget.DownPolicy{Allowance: 0.3})
	p.Cut(true)
	refuse.Reserve(acme, 1000, 1) // the call that finds Redis down
	h, r := refuse.Reserve(acme, 1000, 1)
	if h != nil || r == nil || r.Code != "budget_unavailable" || r.Public().Status != 503 {
		t.Fatalf("refuse policy, Redis down: %v %+v", h, r)
	}
	if h, r := refuse.Reserve([]budget.Scope{{Kind: ledger.ScopeKey, ID: "k1"}}, 1000, 1); h == nil {
		t.Fatalf("a rate-only scope with Redis down: %+v, want local windows", r)
	}
	n := 0
	for range 10 {
		if h, _ := allow.Reserve(acme, 1000, 1); h != nil {
			n++
		}
	}
	if n != 3 {
		t.Errorf("allowance 0.3 of a credit for 10: %d held alone, want 3", n)
	}
	p.Cut(false)
	waitFor(t, 3*time.Second, "reconnected", c.Up)
	if h, r := refuse.Reserve(acme, 1000, 1); h == nil {
		t.Errorf("Redis back: %+v", r)
	}
}

// A hold settled while Redis is down is settled there once it returns:
// the budget is not blocked until the hold expires.
func TestBudgetSettleDuringOutage(t *testing.T) {
	url := redisURL(t)
	p, purl := newProxy(t, url)
	c := open(t, purl, testPrefix(), func(o *Options) { o.Timeout = 100 * time.Millisecond })
	a := accountants(t, budget.DownPolicy{}, []*Client{c}, ledger.Budget{Scope: ledger.ScopeOrg, ID: "acme", CreditMicroUSD: ptr(10_000)})[0]
	h, r := a.Reserve(acme, 10_000, 1)
	if h == nil {
		t.Fatalf("reserve: %+v", r)
	}
	p.Cut(true)
	waitFor(t, 2*time.Second, "down", func() bool { a.Reserve(acme, 1, 1); return !c.Up() })
	h.Release() // kept: Redis is down
	p.Cut(false)
	waitFor(t, 3*time.Second, "the whole credit free again after Redis returned", func() bool {
		h, _ := a.Reserve(acme, 10_000, 1)
		if h != nil {
			h.Release()
		}
		return h != nil
	})
}
