package drill

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/ledger/sqlite"
)

// testRungs is a pool of three deployments with different prices.
func testRungs() []Rung {
	return []Rung{
		{Deployment: &catalog.Deployment{ID: "p", Provider: "openai", Price: &catalog.Price{InputPerMTok: 3, OutputPerMTok: 15, CachedInputPerMTok: 0.3}}},
		{Deployment: &catalog.Deployment{ID: "s", Provider: "anthropic", Price: &catalog.Price{InputPerMTok: 2.5, OutputPerMTok: 12.5, CachedInputPerMTok: 0.25}}},
		{Deployment: &catalog.Deployment{ID: "t", Provider: "gemini", Price: &catalog.Price{InputPerMTok: 1.25, OutputPerMTok: 10}}},
	}
}

// fixture is a consistent ledger and what the callers saw: A served by s
// after a failed hop on p, B interrupted on p after 5 delivered tokens, C
// failed on every rung, D refused as the caller's error (no row).
type fixture struct {
	batch  ledger.Batch
	expect []Expect
	// plant runs raw SQL against the written ledger.
	plant []string
}

func newFixture() *fixture {
	rs := testRungs()
	now := time.Unix(1_800_000_000, 0).UTC()
	costA := rs[1].Deployment.CostMicroUSD(100, 8, 0, 24)
	costB := rs[0].Deployment.CostMicroUSD(90, 0, 0, 5)
	req := func(id, dep string, depth, attempts int, status, class string, in, cached, out int, cost int64) ledger.Request {
		cs := "priced"
		if dep == "" {
			cs = "none"
		}
		return ledger.Request{RequestID: id, Org: "o", Team: "t", KeyID: "k", PublicModel: testModel, ExactModel: map[bool]string{true: testModel}[dep != ""],
			Deployment: dep, RouteDepth: depth, Attempts: attempts, Status: status, FailureClass: class,
			InputTokens: in, CachedTokens: cached, OutputTokens: out, CostMicroUSD: cost, CostStatus: cs,
			ReservedMicroUSD: 10_000, StartedAt: now, FinishedAt: now}
	}
	att := func(seq int, dep, class string, status int, out int, cost int64) ledger.Attempt {
		return ledger.Attempt{Seq: seq, Deployment: dep, FailureClass: class, HTTPStatus: status, OutputTokens: out, CostMicroUSD: cost, StartedAt: now}
	}
	f := &fixture{}
	for _, id := range []string{"A", "B", "C"} {
		f.batch.Reservations = append(f.batch.Reservations, ledger.Reservation{RequestID: id, KeyID: "k", Org: "o", Team: "t", PublicModel: testModel, AmountMicro: 10_000, CreatedAt: now})
	}
	f.batch.Settlements = []ledger.Settlement{
		{Request: req("A", "s", 1, 2, "ok", "", 100, 8, 24, costA),
			Attempts: []ledger.Attempt{att(0, "p", "provider_unavailable", 529, 0, 0), att(1, "s", "", 200, 24, costA)}},
		{Request: req("B", "p", 0, 1, "interrupted", "provider_unavailable", 90, 0, 5, costB),
			Attempts: []ledger.Attempt{att(0, "p", "provider_unavailable", 200, 5, costB)}},
		{Request: req("C", "", -1, 3, "failed", "throttled", 0, 0, 0, 0),
			Attempts: []ledger.Attempt{att(0, "p", "provider_unavailable", 529, 0, 0), att(1, "s", "provider_unavailable", 0, 0, 0), att(2, "t", "throttled", 429, 0, 0)}},
	}
	f.expect = []Expect{
		{RequestID: "A", Outcome: Served, Deployment: "s", Attempts: 2, Trail: "p=provider_unavailable, s=ok", Usage: Usage{Input: 100, Cached: 8, Output: 24}, Cost: costA, HasCost: true},
		{RequestID: "B", Outcome: Cut, Deployment: "p", Attempts: 1, Trail: "p=ok", Delivered: 5, Cost: costB, HasCost: true},
		{RequestID: "C", Outcome: Failed, Attempts: 3, Trail: "p=provider_unavailable, s=provider_unavailable, t=throttled"},
		{RequestID: "D", Outcome: Refused, Attempts: -1},
		{Outcome: Unknown, Attempts: -1}, // a request that got no answer
	}
	return f
}

func (f *fixture) settlement(id string) *ledger.Settlement {
	for i := range f.batch.Settlements {
		if f.batch.Settlements[i].Request.RequestID == id {
			return &f.batch.Settlements[i]
		}
	}
	panic("no settlement " + id)
}

func (f *fixture) expectation(id string) *Expect {
	for i := range f.expect {
		if f.expect[i].RequestID == id {
			return &f.expect[i]
		}
	}
	panic("no expectation " + id)
}

// write writes the fixture's ledger with the gateway's own store, then
// plants its raw SQL.
func (f *fixture) write(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.WriteBatch(ctx, &f.batch); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if len(f.plant) > 0 {
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for _, q := range f.plant {
			if _, err := db.Exec(q); err != nil {
				t.Fatalf("planting %q: %v", q, err)
			}
		}
	}
	return path
}

func TestCheckLedger(t *testing.T) {
	rs := testRungs()
	cases := []struct {
		name string
		edit func(f *fixture)
		// broken are the invariants that must fail; every other must hold.
		broken []string
	}{
		// Unhappy paths first: each planted fault must be caught.
		{"double settlement", func(f *fixture) {
			// The schema's primary key forbids it: rebuild the table
			// without one, as a store without the constraint would be.
			f.plant = []string{
				`CREATE TABLE requests2 AS SELECT * FROM requests`,
				`DROP TABLE requests`,
				`ALTER TABLE requests2 RENAME TO requests`,
				`INSERT INTO requests SELECT * FROM requests WHERE request_id = 'A'`,
			}
		}, []string{invSettledOnce}},
		{"wrong cost", func(f *fixture) {
			a := f.settlement("A")
			a.Request.CostMicroUSD++
			a.Attempts[1].CostMicroUSD++
			f.expectation("A").Cost++
		}, []string{invCost}},
		{"cost at another rung's price", func(f *fixture) {
			a := f.settlement("A")
			c := rs[0].Deployment.CostMicroUSD(100, 8, 0, 24)
			a.Request.CostMicroUSD, a.Attempts[1].CostMicroUSD = c, c
			f.expectation("A").Cost = c
		}, []string{invCost}},
		{"cached tokens billed at the full input rate", func(f *fixture) {
			a := f.settlement("A")
			c := rs[1].Deployment.CostMicroUSD(100, 0, 0, 24)
			a.Request.CostMicroUSD, a.Attempts[1].CostMicroUSD = c, c
			f.expectation("A").Cost = c
		}, []string{invCost}},
		{"failed hop with a cost", func(f *fixture) {
			f.settlement("A").Attempts[0].CostMicroUSD = 7
		}, []string{invFailedHops}},
		{"request that failed everywhere with a cost", func(f *fixture) {
			f.settlement("C").Request.CostMicroUSD = 3
		}, []string{invFailedHops}},
		{"failed hop of a failed request with a cost", func(f *fixture) {
			f.settlement("C").Attempts[1].CostMicroUSD = 3
		}, []string{invFailedHops}},
		{"ledger tokens differ from the usage the caller saw", func(f *fixture) {
			f.expectation("A").Usage.Output = 23
		}, []string{invCost}},
		{"interrupted stream billed past the delivered tokens", func(f *fixture) {
			b := f.settlement("B")
			c := rs[0].Deployment.CostMicroUSD(90, 0, 0, 6)
			b.Request.OutputTokens, b.Request.CostMicroUSD, b.Attempts[0].CostMicroUSD = 6, c, c
			f.expectation("B").Cost = c
		}, []string{invCost}},
		{"answered request never settled", func(f *fixture) {
			f.batch.Settlements = slices.DeleteFunc(f.batch.Settlements, func(s ledger.Settlement) bool { return s.Request.RequestID == "B" })
		}, []string{invSettledOnce, invReservations}},
		{"reservation left open", func(f *fixture) {
			f.batch.Reservations = append(f.batch.Reservations, ledger.Reservation{RequestID: "E", KeyID: "k", Org: "o", Team: "t", PublicModel: testModel, AmountMicro: 5, CreatedAt: time.Unix(1, 0)})
		}, []string{invReservations}},
		{"caller's error settled", func(f *fixture) {
			s := *f.settlement("C")
			s.Request.RequestID = "D"
			f.batch.Settlements = append(f.batch.Settlements, s)
		}, []string{invSettledOnce}},
		{"rows no caller saw", func(f *fixture) {
			for _, id := range []string{"X", "Y"} {
				s := *f.settlement("C")
				s.Request.RequestID = id
				f.batch.Settlements = append(f.batch.Settlements, s)
			}
		}, []string{invSettledOnce}},
		{"served by another deployment than the header said", func(f *fixture) {
			f.expectation("A").Deployment = "t"
		}, []string{invLedgerMatches}},
		{"cost header differs from the ledger", func(f *fixture) {
			f.expectation("A").Cost++
		}, []string{invLedgerMatches}},
		{"trail differs from the attempt rows", func(f *fixture) {
			f.expectation("A").Trail = "t=provider_unavailable, s=ok"
		}, []string{invLedgerMatches}},
		{"attempts hidden from the caller", func(f *fixture) {
			// The caller would take C for a refusal that sent nothing
			// upstream, and its retry for a request of its own.
			e := f.expectation("C")
			e.Attempts, e.Trail = -1, ""
		}, []string{invLedgerMatches}},
		{"status differs from the caller's outcome", func(f *fixture) {
			f.settlement("B").Request.Status = "ok"
		}, []string{invLedgerMatches}},
		{"exact model changed", func(f *fixture) {
			f.settlement("A").Request.ExactModel = "gpt-4.1"
		}, []string{invNoModelChange}},
		{"served by a deployment outside the pool", func(f *fixture) {
			f.settlement("A").Request.Deployment = "elsewhere"
			f.expectation("A").Deployment = "elsewhere"
		}, []string{invNoModelChange}},
		{"consistent ledger", func(*fixture) {}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture()
			c.edit(f)
			path := f.write(t)
			rep, err := CheckLedger(context.Background(), path, testModel, rs, f.expect)
			if err != nil {
				t.Fatal(err)
			}
			var broken []string
			for _, inv := range rep.Invariants {
				if !inv.Pass {
					broken = append(broken, inv.Name)
					t.Logf("%s: %v", inv.Name, inv.Examples)
				}
			}
			slices.Sort(broken)
			want := slices.Clone(c.broken)
			slices.Sort(want)
			if !slices.Equal(broken, want) {
				t.Errorf("broken %v, want %v", broken, want)
			}
		})
	}
}

func TestCheckLedgerSpend(t *testing.T) {
	f := newFixture()
	rep, err := CheckLedger(context.Background(), f.write(t), testModel, testRungs(), f.expect)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Requests != 3 || rep.Attempts != 6 || rep.OpenReservations != 0 {
		t.Errorf("rows %d attempts %d open %d", rep.Requests, rep.Attempts, rep.OpenReservations)
	}
	if rep.Spend["s"] != f.settlement("A").Request.CostMicroUSD || rep.Spend["p"] != f.settlement("B").Request.CostMicroUSD {
		t.Errorf("spend %v", rep.Spend)
	}
	if rep.FailedBy["p"] != 2 || rep.AttemptsBy["p"] != 3 || rep.FailedBy["s"] != 1 || rep.AttemptsBy["s"] != 2 {
		t.Errorf("attempts %v failed %v", rep.AttemptsBy, rep.FailedBy)
	}
}

func TestCheckLedgerMissing(t *testing.T) {
	_, err := CheckLedger(context.Background(), filepath.Join(t.TempDir(), "none.db"), testModel, testRungs(), nil)
	if err == nil {
		t.Fatal("a missing ledger was read")
	}
}
