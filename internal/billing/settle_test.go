package billing

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/budget"
	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/engine"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/ledger"
)

// fakeLedger counts what billing hands the ledger's writer.
type fakeLedger struct {
	mu             sync.Mutex
	reserved       []ledger.Reservation
	waited, queued []*ledger.Settlement
	settleErr      error
	block          chan struct{} // Settle waits on block when set
}

func (l *fakeLedger) Reserve(r ledger.Reservation) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reserved = append(l.reserved, r)
}

func (l *fakeLedger) Settle(ctx context.Context, s *ledger.Settlement) error {
	if l.block != nil {
		<-l.block
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waited = append(l.waited, s)
	return l.settleErr
}

func (l *fakeLedger) SettleAsync(s *ledger.Settlement) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.queued = append(l.queued, s)
}

func (l *fakeLedger) settlements() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.waited) + len(l.queued)
}

var price = &catalog.Price{InputPerMTok: 3, OutputPerMTok: 15}

// fixture is a biller with a budget and a fake ledger, and one request on a
// two-rung plan with a key-scope credit.
type fixture struct {
	ledger *fakeLedger
	budget *budget.Accountant
	biller *Biller
	req    Request
	hooks  int
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{ledger: &fakeLedger{}, budget: budget.New(nil)}
	credit := int64(1_000_000)
	f.budget.SetBudgets([]ledger.Budget{{Scope: ledger.ScopeKey, ID: "key_1", CreditMicroUSD: &credit}})
	f.biller = &Biller{Budget: f.budget, Ledger: f.ledger, Now: func() time.Time { return time.Unix(1_800_000_000, 0) }}
	deps := []*catalog.Deployment{
		{ID: "a", Price: price, MaxOutputTokens: 1000},
		{ID: "b", Price: price, MaxOutputTokens: 1000},
	}
	p := &engine.Plan{RequestID: "req_1", Model: "m"}
	for _, d := range deps {
		p.Rungs = append(p.Rungs, engine.Rung{Deployment: d})
	}
	f.req = Request{ID: "req_1", Start: time.Unix(1_800_000_000, 0), Key: &ledger.Key{ID: "key_1", Org: "o", Team: "t"},
		Req:   &canonical.Request{Model: "m", MaxTokens: 100, Messages: []canonical.Message{{Role: "user", Content: []canonical.Part{{Type: canonical.PartText, Text: "hello there"}}}}},
		Route: &catalog.ResolvedRoute{Deployments: deps}, Plan: p,
		Settled: func(*engine.Result, *Bill) { f.hooks++ }}
	return f
}

// held is what the budget still holds at the key's scope.
func (f *fixture) held() (held, spent int64) {
	for _, s := range f.budget.Snapshot() {
		if s.Kind == ledger.ScopeKey {
			return s.HeldMicro, s.SpentMicro
		}
	}
	return -1, -1
}

// served is a result served by rung 1 after a failed attempt on rung 0.
func served() *engine.Result {
	return &engine.Result{Served: 1, Usage: canonical.Usage{InputTokens: 10, OutputTokens: 20}, UsageReported: true,
		Committed: true, DeliveredEvents: 3, DeliveredTokens: 20,
		Attempts: []engine.Attempt{
			{Rung: 0, Deployment: "a", Err: &failure.Error{Class: failure.ProviderUnavailable, Status: 529}},
			{Rung: 1, Deployment: "b"},
		}}
}

// cut is a stream served by rung 0 that broke after 7 delivered tokens.
func cut() *engine.Result {
	return &engine.Result{Served: 0, Committed: true, DeliveredEvents: 7, DeliveredTokens: 7,
		Err:      &failure.Error{Class: failure.ProviderUnavailable},
		Attempts: []engine.Attempt{{Rung: 0, Deployment: "a", Err: &failure.Error{Class: failure.ProviderUnavailable, Status: 200}}}}
}

func TestReserveHoldsTheWorstCase(t *testing.T) {
	f := newFixture(t)
	st, pub := f.biller.Reserve(f.req)
	if pub != nil {
		t.Fatal(pub)
	}
	if held, _ := f.held(); held != st.Reserved() || held <= 0 {
		t.Fatalf("held %d, reserved %d", held, st.Reserved())
	}
	if len(f.ledger.reserved) != 1 || f.ledger.reserved[0].AmountMicro != st.Reserved() {
		t.Fatalf("ledger reservations %+v", f.ledger.reserved)
	}
	// The worst case: 100 output tokens plus the prompt at a token a byte
	// with its framing (11 + 32 + 64 bytes).
	if want, _ := price.WorstCaseMicro(11+32+64, 100); st.Reserved() != want {
		t.Fatalf("reserved %d, want %d", st.Reserved(), want)
	}
}

func TestReserveRefused(t *testing.T) {
	f := newFixture(t)
	none := int64(0)
	f.budget.SetBudgets([]ledger.Budget{{Scope: ledger.ScopeKey, ID: "key_1", CreditMicroUSD: &none}})
	st, pub := f.biller.Reserve(f.req)
	if st != nil || pub == nil || pub.Status != 429 {
		t.Fatalf("reserve = %v, %+v; want a 429", st, pub)
	}
	if len(f.ledger.reserved) != 0 {
		t.Fatal("a refused request was reserved in the ledger")
	}
}

// TestSettleOnce: however a request ends and however often its end is
// reported, it is settled once: one ledger settlement, one hook call, the
// hold released once at the first result's charge.
func TestSettleOnce(t *testing.T) {
	for _, c := range []struct {
		name  string
		calls []*engine.Result // in order; the first one wins
		wait  bool
		cost  bool
	}{
		{"served, then the stream's end, then the deferred call", []*engine.Result{served(), served(), nil}, true, true},
		{"interrupt, then the stream's end", []*engine.Result{cut(), cut()}, true, true},
		{"caller left, then the deferred call", []*engine.Result{{Served: -1, Err: &failure.Error{Class: failure.ClientCancelled}}, nil}, false, false},
		{"panic: the deferred call alone", []*engine.Result{nil}, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			st, _ := f.biller.Reserve(f.req)
			var first error
			for i, res := range c.calls {
				err := st.Settle(context.Background(), res)
				if i == 0 {
					first = err
				} else if err != first {
					t.Errorf("call %d returned %v, the first %v", i, err, first)
				}
			}
			if n := f.ledger.settlements(); n != 1 {
				t.Fatalf("%d ledger settlements", n)
			}
			if (len(f.ledger.waited) == 1) != c.wait {
				t.Errorf("waited %d, queued %d; want waited %v", len(f.ledger.waited), len(f.ledger.queued), c.wait)
			}
			if f.hooks != 1 {
				t.Errorf("the settled hook ran %d times", f.hooks)
			}
			held, spent := f.held()
			if held != 0 || spent != st.Bill().Cost || (spent > 0) != c.cost {
				t.Errorf("held %d, spent %d, bill %+v", held, spent, st.Bill())
			}
		})
	}
}

// TestSettleConcurrently: an interrupt and the stream's end racing (and a
// deferred call behind them) settle once, and every caller sees the one
// outcome. Run with -race.
func TestSettleConcurrently(t *testing.T) {
	for range 50 {
		f := newFixture(t)
		st, _ := f.biller.Reserve(f.req)
		var wg sync.WaitGroup
		results := []*engine.Result{cut(), served(), nil, cut()}
		errs := make([]error, len(results))
		for i, res := range results {
			wg.Go(func() { errs[i] = st.Settle(context.Background(), res) })
		}
		wg.Wait()
		if n := f.ledger.settlements(); n != 1 || f.hooks != 1 {
			t.Fatalf("%d settlements, %d hook calls", n, f.hooks)
		}
		held, spent := f.held()
		if held != 0 || spent != st.Bill().Cost {
			t.Fatalf("held %d, spent %d, bill %+v", held, spent, st.Bill())
		}
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestSettleWaitsForTheFirst: a call made while another is still making
// the rows durable returns only once they are, with that call's outcome (a
// stream's end never answers before the row its interrupt is writing).
func TestSettleWaitsForTheFirst(t *testing.T) {
	f := newFixture(t)
	f.ledger.block = make(chan struct{})
	f.ledger.settleErr = errors.New("disk gone")
	st, _ := f.biller.Reserve(f.req)
	errs := make(chan error, 2)
	go func() { errs <- st.Settle(context.Background(), cut()) }()
	go func() { errs <- st.Settle(context.Background(), served()) }()
	select {
	case err := <-errs:
		t.Fatalf("a call returned %v while the rows were not durable", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(f.ledger.block)
	e1, e2 := <-errs, <-errs
	if e1 == nil || e1 != e2 {
		t.Fatalf("calls returned %v and %v: want the ledger's error for both", e1, e2)
	}
	if n := f.ledger.settlements(); n != 1 || f.hooks != 1 {
		t.Fatalf("%d settlements, %d hook calls", n, f.hooks)
	}
	// Not durable: the answer is withheld and nothing is charged.
	if b := st.Bill(); b.Cost != 0 || b.Status != ledger.CostNone {
		t.Fatalf("bill %+v after a failed settlement", b)
	}
	if held, spent := f.held(); held != 0 || spent != 0 {
		t.Fatalf("held %d, spent %d", held, spent)
	}
}
