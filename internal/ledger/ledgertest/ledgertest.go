// Package ledgertest is the conformance suite every ledger.Store runs: the
// SQLite store today, a PostgreSQL store later, held to the same rules.
package ledgertest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/ledger"
)

// Open returns a fresh, empty store; the suite closes it.
type Open func(t *testing.T) ledger.Store

// day returns the start of the suite's UTC day n (day 0 is 2026-03-01).
func day(n int) time.Time { return time.Date(2026, 3, 1+n, 0, 0, 0, 0, time.UTC) }

// base() is the suite's usual timestamp: 10:00 on day 0.
func base() time.Time { return day(0).Add(10 * time.Hour) }

// Run runs the whole suite against stores made by open.
func Run(t *testing.T, open Open) {
	t.Run("WriteBatchAtomic", func(t *testing.T) { testAtomic(t, open) })
	t.Run("DuplicateSettlement", func(t *testing.T) { testDuplicate(t, open) })
	t.Run("ReservationClosedBySettlement", func(t *testing.T) { testReservations(t, open) })
	t.Run("RecoverOpen", func(t *testing.T) { testRecover(t, open) })
	t.Run("RecoverOwnOnly", func(t *testing.T) { testRecoverOwn(t, open) })
	t.Run("Keys", func(t *testing.T) { testKeys(t, open) })
	t.Run("Budgets", func(t *testing.T) { testBudgets(t, open) })
	t.Run("Spends", func(t *testing.T) { testSpends(t, open) })
	t.Run("Usage", func(t *testing.T) { testUsage(t, open) })
	t.Run("UsageInvalid", func(t *testing.T) { testUsageInvalid(t, open) })
	t.Run("Repair", func(t *testing.T) { testRepair(t, open) })
	t.Run("AdminKeys", func(t *testing.T) { testAdminKeys(t, open) })
	t.Run("Audit", func(t *testing.T) { testAudit(t, open) })
	t.Run("AggregatesReplay", func(t *testing.T) { testAggregatesReplay(t, open) })
	t.Run("PruneKeepsTotals", func(t *testing.T) { testPruneKeepsTotals(t, open) })
}

// testAdminKeys: one admin key is valid at a time; rotating revokes the
// others in the same step, and a hash is never stored twice.
func testAdminKeys(t *testing.T, open Open) {
	ctx := context.Background()
	s := mustOpen(t, open)
	if ks, err := s.AdminKeys(ctx); err != nil || len(ks) != 0 {
		t.Fatalf("a fresh store's admin keys = %v, %v", ks, err)
	}
	first := &ledger.AdminKey{ID: "adm_1", Hash: []byte("h1"), Prefix: "sk-spw-adm-1", CreatedAt: base()}
	second := &ledger.AdminKey{ID: "adm_2", Hash: []byte("h2"), Prefix: "sk-spw-adm-2", CreatedAt: base().Add(time.Hour)}
	for _, k := range []*ledger.AdminKey{first, second} {
		if err := s.RotateAdminKey(ctx, k); err != nil {
			t.Fatalf("RotateAdminKey(%s): %v", k.ID, err)
		}
	}
	ks, err := s.AdminKeys(ctx)
	if err != nil || len(ks) != 2 {
		t.Fatalf("AdminKeys = %v, %v", ks, err)
	}
	if ks[0].ID != "adm_1" || !ks[0].RevokedAt.Equal(second.CreatedAt) || ks[1].ID != "adm_2" || !ks[1].RevokedAt.IsZero() ||
		string(ks[1].Hash) != "h2" || ks[1].Prefix != "sk-spw-adm-2" {
		t.Errorf("after two rotations: %+v; want adm_1 revoked when adm_2 came, adm_2 valid", ks)
	}
	again := &ledger.AdminKey{ID: "adm_3", Hash: []byte("h2")}
	if err := s.RotateAdminKey(ctx, again); !errors.Is(err, ledger.ErrDuplicate) {
		t.Errorf("a repeated hash: %v, want ErrDuplicate", err)
	}
	if ks, _ := s.AdminKeys(ctx); len(ks) != 2 || !ks[1].RevokedAt.IsZero() {
		t.Errorf("a refused rotation changed the keys: %+v", ks)
	}
}

// testRepair writes what an older gateway stored from a hostile provider
// (WriteBatch itself does not check figures; the Writer does) and checks
// that Repair makes every sum work again, pricing the request at its
// reservation.
func testRepair(t *testing.T, open Open) {
	ctx := context.Background()
	s := mustOpen(t, open)
	const huge = 1<<63 - 1
	poisoned := Settlement("poisoned", huge, 2)
	poisoned.Request.InputTokens, poisoned.Request.OutputTokens = huge, -5
	poisoned.Request.ReservedMicroUSD = 3000
	poisoned.Attempts[1].OutputTokens = huge
	both := Settlement("both", -1, 1)
	both.Request.ReservedMicroUSD = huge
	if err := s.WriteBatch(ctx, &ledger.Batch{Settlements: []ledger.Settlement{
		Settlement("fine", 700, 1), poisoned, both,
	}}); err != nil {
		t.Fatalf("WriteBatch: %v", err)
	}
	fixed, err := s.Repair(ctx)
	if err != nil {
		t.Fatalf("Repair: %v", err)
	}
	var got []string
	for _, r := range fixed {
		if r.What == "" {
			t.Errorf("repaired %s/%d without saying what", r.RequestID, r.Seq)
		}
		got = append(got, fmt.Sprintf("%s/%d", r.RequestID, r.Seq))
	}
	want := []string{"both/-1", "poisoned/-1", "both/0", "poisoned/1"} // requests, then attempts
	if !slices.Equal(got, want) {
		t.Errorf("repaired %v, want %v", got, want)
	}
	if u := total(t, s); u.CostMicroUSD != 3700 || u.InputTokens != 20 || u.OutputTokens != 40 {
		t.Errorf("usage after repair = %+v, want cost 3700 (700 + the 3000 reservation + 0), tokens 20/40", u)
	}
	if _, err := s.Spends(ctx, day(0)); err != nil {
		t.Errorf("Spends after repair: %v", err)
	}
	if again, err := s.Repair(ctx); err != nil || len(again) != 0 {
		t.Errorf("second Repair = %v, %v, want nothing to do", again, err)
	}
}

func mustOpen(t *testing.T, open Open) ledger.Store {
	t.Helper()
	s := open(t)
	t.Cleanup(func() { s.Close() })
	return s
}

// Settlement builds a settled request with n attempts, the last serving
// unless status says nothing did.
func Settlement(id string, cost int64, n int) ledger.Settlement {
	s := ledger.Settlement{Request: ledger.Request{
		RequestID: id, Org: "acme", Team: "search", KeyID: "key_a", PublicModel: "sonnet",
		ExactModel: "claude-sonnet-4-5", Deployment: "anthropic", RouteDepth: n - 1, Attempts: n,
		Status: ledger.StatusOK, InputTokens: 10, OutputTokens: 20, CostMicroUSD: cost,
		CostStatus: ledger.CostPriced, StartedAt: base(), FinishedAt: base().Add(time.Second),
	}}
	for i := range n {
		a := ledger.Attempt{RequestID: id, Seq: i, Deployment: fmt.Sprintf("dep%d", i), StartedAt: base()}
		if i < n-1 {
			a.FailureClass, a.HTTPStatus = "provider_unavailable", 503
		} else {
			a.HTTPStatus, a.CostMicroUSD = 200, cost
		}
		s.Attempts = append(s.Attempts, a)
	}
	return s
}

func reservation(id string, amount int64) ledger.Reservation {
	return ledger.Reservation{RequestID: id, KeyID: "key_a", Org: "acme", Team: "search",
		PublicModel: "sonnet", AmountMicro: amount, CreatedAt: base()}
}

func total(t *testing.T, s ledger.Store) ledger.UsageRow {
	t.Helper()
	rows, err := s.Usage(context.Background(), ledger.UsageQuery{})
	if err != nil {
		t.Fatalf("Usage: %v", err)
	}
	if len(rows) != 1 {
		t.Fatalf("Usage with no group-by: %d rows, want 1", len(rows))
	}
	return rows[0]
}

func openIDs(t *testing.T, s ledger.Store) []string {
	t.Helper()
	rel, err := s.RecoverOpen(context.Background(), "")
	if err != nil {
		t.Fatalf("RecoverOpen: %v", err)
	}
	var ids []string
	for _, r := range rel {
		ids = append(ids, r.RequestID)
	}
	sort.Strings(ids)
	return ids
}

func testAtomic(t *testing.T, open Open) {
	ctx := context.Background()
	s := mustOpen(t, open)
	bad := Settlement("r2", 5, 2)
	bad.Attempts[1].Seq = 0 // two attempts with seq 0: a key violation
	err := s.WriteBatch(ctx, &ledger.Batch{
		Reservations: []ledger.Reservation{reservation("r1", 100), reservation("r2", 100)},
		Settlements:  []ledger.Settlement{Settlement("r1", 7, 1), bad},
	})
	if !errors.Is(err, ledger.ErrRejected) {
		t.Fatalf("WriteBatch with a clashing attempt = %v, want ErrRejected", err)
	}
	if got := total(t, s); got.Requests != 0 || got.CostMicroUSD != 0 {
		t.Errorf("after a failed batch: %+v, want nothing written", got)
	}
	if ids := openIDs(t, s); len(ids) != 0 {
		t.Errorf("after a failed batch, reservations %v exist, want none", ids)
	}
	// The good half alone then commits.
	if err := s.WriteBatch(ctx, &ledger.Batch{Settlements: []ledger.Settlement{Settlement("r1", 7, 1)}}); err != nil {
		t.Fatalf("WriteBatch: %v", err)
	}
	if got := total(t, s); got.Requests != 1 || got.CostMicroUSD != 7 {
		t.Errorf("after the good batch: %+v, want 1 request costing 7", got)
	}
}

func testDuplicate(t *testing.T, open Open) {
	ctx := context.Background()
	s := mustOpen(t, open)
	first := Settlement("r1", 100, 2)
	again := Settlement("r1", 999, 3) // different content, same request
	for _, b := range []*ledger.Batch{
		{Reservations: []ledger.Reservation{reservation("r1", 500)}, Settlements: []ledger.Settlement{first}},
		{Settlements: []ledger.Settlement{again}},
		{Settlements: []ledger.Settlement{again, again}},
	} {
		if err := s.WriteBatch(ctx, b); err != nil {
			t.Fatalf("WriteBatch: %v", err)
		}
	}
	got := total(t, s)
	want := ledger.UsageRow{Group: map[string]string{}, Requests: 1, Succeeded: 1, FailedOver: 1,
		Attempts: 2, InputTokens: 10, OutputTokens: 20, CostMicroUSD: 100}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("after three settlements of one request:\n got %+v\nwant %+v (the first, once)", got, want)
	}
}

func testReservations(t *testing.T, open Open) {
	ctx := context.Background()
	s := mustOpen(t, open)
	steps := []*ledger.Batch{
		{Reservations: []ledger.Reservation{reservation("a", 1), reservation("b", 1)}},
		{Settlements: []ledger.Settlement{Settlement("a", 1, 1)}},
		// Reserved and settled in one batch: closed in the same transaction.
		{Reservations: []ledger.Reservation{reservation("c", 1)}, Settlements: []ledger.Settlement{Settlement("c", 1, 1)}},
		// Settled without a reservation (a refusal reserves nothing).
		{Settlements: []ledger.Settlement{Settlement("d", 0, 1)}},
		// A repeated reservation is ignored, not an error.
		{Reservations: []ledger.Reservation{reservation("b", 1)}},
	}
	for i, b := range steps {
		if err := s.WriteBatch(ctx, b); err != nil {
			t.Fatalf("step %d: WriteBatch: %v", i, err)
		}
	}
	if ids := openIDs(t, s); !slices.Equal(ids, []string{"b"}) {
		t.Errorf("open reservations %v, want [b]: a and c were closed by their settlements", ids)
	}
}

func testRecover(t *testing.T, open Open) {
	ctx := context.Background()
	s := mustOpen(t, open)
	if ids := openIDs(t, s); len(ids) != 0 {
		t.Fatalf("fresh store: open %v", ids)
	}
	r := reservation("x", 1234)
	r.KeyID, r.Org, r.Team, r.PublicModel = "key_x", "org_x", "team_x", "model_x"
	if err := s.WriteBatch(ctx, &ledger.Batch{Reservations: []ledger.Reservation{r, reservation("y", 1), reservation("z", 1)}}); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteBatch(ctx, &ledger.Batch{Settlements: []ledger.Settlement{Settlement("y", 1, 1)}}); err != nil {
		t.Fatal(err)
	}
	rel, err := s.RecoverOpen(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(rel) != 2 {
		t.Fatalf("RecoverOpen = %+v, want x and z", rel)
	}
	sort.Slice(rel, func(i, j int) bool { return rel[i].RequestID < rel[j].RequestID })
	got := rel[0].Reservation
	if got.RequestID != r.RequestID || got.KeyID != r.KeyID || got.Org != r.Org || got.Team != r.Team ||
		got.PublicModel != r.PublicModel || got.AmountMicro != r.AmountMicro || !got.CreatedAt.Equal(r.CreatedAt) {
		t.Errorf("released %+v, want %+v", got, r)
	}
	if ids := openIDs(t, s); len(ids) != 0 {
		t.Errorf("second RecoverOpen = %v, want nothing (idempotent)", ids)
	}
	// A late settlement of a released reservation is still recorded once.
	if err := s.WriteBatch(ctx, &ledger.Batch{Settlements: []ledger.Settlement{Settlement("x", 3, 1)}}); err != nil {
		t.Fatal(err)
	}
	if got := total(t, s); got.Requests != 2 {
		t.Errorf("requests = %d, want 2", got.Requests)
	}
}

func testKeys(t *testing.T, open Open) {
	ctx := context.Background()
	s := mustOpen(t, open)
	if _, err := s.KeyByHash(ctx, []byte("nope")); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("KeyByHash(unknown) = %v, want ErrNotFound", err)
	}
	if err := s.RevokeKey(ctx, "key_none", base()); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("RevokeKey(unknown) = %v, want ErrNotFound", err)
	}
	k1 := ledger.Key{ID: "key_1", Hash: []byte{1, 2, 3}, Prefix: "sk-sp-1", Org: "acme", Team: "search",
		Models: []string{"sonnet", "gpt-4.1"}, Residency: "eu", Priority: "high", CreatedAt: base()}
	k2 := ledger.Key{ID: "key_2", Hash: []byte{4, 5, 6}, Prefix: "sk-sp-2", Org: "acme", CreatedAt: base().Add(time.Minute)}
	for _, k := range []ledger.Key{k2, k1} {
		if err := s.CreateKey(ctx, &k); err != nil {
			t.Fatalf("CreateKey(%s): %v", k.ID, err)
		}
	}
	dupHash := ledger.Key{ID: "key_3", Hash: []byte{1, 2, 3}, CreatedAt: base()}
	if err := s.CreateKey(ctx, &dupHash); !errors.Is(err, ledger.ErrDuplicate) {
		t.Errorf("CreateKey(duplicate hash) = %v, want ErrDuplicate", err)
	}
	dupID := ledger.Key{ID: "key_1", Hash: []byte{9}, CreatedAt: base()}
	if err := s.CreateKey(ctx, &dupID); !errors.Is(err, ledger.ErrDuplicate) {
		t.Errorf("CreateKey(duplicate id) = %v, want ErrDuplicate", err)
	}
	got, err := s.KeyByHash(ctx, []byte{1, 2, 3})
	if err != nil {
		t.Fatalf("KeyByHash: %v", err)
	}
	assertKey(t, *got, k1)
	revokedAt := base().Add(time.Hour)
	if err := s.RevokeKey(ctx, "key_1", revokedAt); err != nil {
		t.Fatalf("RevokeKey: %v", err)
	}
	if err := s.RevokeKey(ctx, "key_1", revokedAt.Add(time.Hour)); err != nil {
		t.Fatalf("RevokeKey again: %v", err)
	}
	keys, err := s.Keys(ctx)
	if err != nil {
		t.Fatalf("Keys: %v", err)
	}
	if len(keys) != 2 {
		t.Fatalf("Keys = %d keys, want 2 (revoked ones are listed)", len(keys))
	}
	k1.RevokedAt = revokedAt // the first revocation time stays
	assertKey(t, keys[0], k1)
	assertKey(t, keys[1], k2)
	got, err = s.KeyByHash(ctx, []byte{1, 2, 3})
	if err != nil || !got.RevokedAt.Equal(revokedAt) {
		t.Errorf("KeyByHash(revoked) = %+v, %v; want it with RevokedAt %v", got, err, revokedAt)
	}
}

func assertKey(t *testing.T, got, want ledger.Key) {
	t.Helper()
	if got.ID != want.ID || string(got.Hash) != string(want.Hash) || got.Prefix != want.Prefix ||
		got.Org != want.Org || got.Team != want.Team || !slices.Equal(got.Models, want.Models) || got.Residency != want.Residency || got.Priority != want.Priority ||
		!got.CreatedAt.Equal(want.CreatedAt) || !got.RevokedAt.Equal(want.RevokedAt) {
		t.Errorf("key:\n got %+v\nwant %+v", got, want)
	}
}

func testBudgets(t *testing.T, open Open) {
	ctx := context.Background()
	s := mustOpen(t, open)
	p := func(v int64) *int64 { return &v }
	if err := s.SetBudget(ctx, &ledger.Budget{Scope: "galaxy", ID: "x"}); err == nil {
		t.Error("SetBudget(unknown scope) succeeded")
	}
	set := []ledger.Budget{
		{Scope: ledger.ScopeOrg, ID: "acme", CreditMicroUSD: p(5_000_000), DailyCapMicroUSD: p(100_000), UpdatedAt: base()},
		{Scope: ledger.ScopeKey, ID: "key_1", RPM: 60, TPM: 10_000, UpdatedAt: base()},
		{Scope: ledger.ScopeModel, ID: "sonnet", CreditMicroUSD: p(0), UpdatedAt: base()}, // 0 is a limit, not "none"
		// Replaces the first: the credit goes away, the cap changes.
		{Scope: ledger.ScopeOrg, ID: "acme", DailyCapMicroUSD: p(200_000), RPM: 5, UpdatedAt: base().Add(time.Hour)},
	}
	for _, b := range set {
		if err := s.SetBudget(ctx, &b); err != nil {
			t.Fatalf("SetBudget(%s/%s): %v", b.Scope, b.ID, err)
		}
	}
	got, err := s.Budgets(ctx)
	if err != nil {
		t.Fatalf("Budgets: %v", err)
	}
	want := []ledger.Budget{set[1], set[2], set[3]} // by scope, then id
	if len(got) != len(want) {
		t.Fatalf("Budgets = %+v, want %d", got, len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Scope != w.Scope || g.ID != w.ID || !eqPtr(g.CreditMicroUSD, w.CreditMicroUSD) ||
			!eqPtr(g.DailyCapMicroUSD, w.DailyCapMicroUSD) || g.RPM != w.RPM || g.TPM != w.TPM || !g.UpdatedAt.Equal(w.UpdatedAt) {
			t.Errorf("budget %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
}

func eqPtr(a, b *int64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// Seed is the suite's usage fixture: requests over three UTC days, two
// orgs, every status, and every route shape FailedOver must tell apart.
func Seed() []ledger.Settlement {
	mk := func(id, org, team, key, model, dep string, depth, attempts int, status string, cost int64, started time.Time) ledger.Settlement {
		s := ledger.Settlement{Request: ledger.Request{RequestID: id, Org: org, Team: team, KeyID: key,
			PublicModel: model, ExactModel: model + "-exact", Deployment: dep, RouteDepth: depth,
			Attempts: attempts, Status: status, InputTokens: 100, OutputTokens: int(cost / 10),
			CachedTokens: 5, CostMicroUSD: cost, CostStatus: ledger.CostPriced,
			StartedAt: started, FinishedAt: started.Add(2 * time.Second)}}
		for i := range attempts {
			s.Attempts = append(s.Attempts, ledger.Attempt{Seq: i, Deployment: dep, StartedAt: started})
		}
		return s
	}
	h := time.Hour
	d0, d1, d2 := day(0), day(1), day(2)
	return []ledger.Settlement{
		mk("q01", "acme", "search", "key_a", "sonnet", "anthropic", 0, 1, ledger.StatusOK, 1000, d0.Add(10*h)),
		mk("q02", "acme", "search", "key_a", "sonnet", "bedrock", 1, 2, ledger.StatusOK, 1200, d0.Add(11*h)),   // failed over
		mk("q03", "acme", "search", "key_a", "sonnet", "anthropic", 0, 2, ledger.StatusOK, 1000, d0.Add(12*h)), // same-rung retry: failed over
		mk("q04", "acme", "ads", "key_b", "sonnet", "bedrock", 1, 1, ledger.StatusOK, 900, d0.Add(13*h)),       // primary skipped: failed over
		mk("q05", "acme", "ads", "key_b", "gpt", "", -1, 3, ledger.StatusFailed, 0, d1.Add(10*h)),              // nothing served
		mk("q06", "acme", "ads", "key_b", "gpt", "openai", 0, 1, ledger.StatusInterrupted, 300, d1.Add(11*h)),
		mk("q07", "globex", "", "key_c", "gpt", "azure", 2, 3, ledger.StatusInterrupted, 250, d1.Add(12*h)), // failed over, then broke
		mk("q08", "globex", "", "key_c", "gpt", "", -1, 0, ledger.StatusRefused, 0, d1.Add(13*h)),
		mk("q09", "globex", "", "key_c", "sonnet", "anthropic", 0, 1, ledger.StatusCancelled, 40, d2.Add(-time.Second)), // day 1's last second, finished on day 2
		mk("q10", "globex", "", "key_c", "sonnet", "anthropic", 0, 1, ledger.StatusOK, 700, d2),                         // day 2's first instant
		mk("q11", "acme", "search", "key_a", "gpt", "openai", 0, 1, ledger.StatusOK, 500, d2.Add(h)),
		mk("q12", "acme", "search", "key_a", "gpt", "", -1, 2, ledger.StatusFailed, 0, d2.Add(24*h-time.Minute)),
	}
}

func seeded(t *testing.T, open Open) ledger.Store {
	t.Helper()
	s := mustOpen(t, open)
	seed := Seed()
	// Two batches, so the store's batching is not what makes it pass.
	for _, part := range [][]ledger.Settlement{seed[:5], seed[5:]} {
		if err := s.WriteBatch(context.Background(), &ledger.Batch{Settlements: part}); err != nil {
			t.Fatalf("seed: %v", err)
		}
	}
	return s
}

func testSpends(t *testing.T, open Open) {
	s := seeded(t, open)
	cases := []struct {
		name     string
		dayStart time.Time
		want     []ledger.Spend
	}{
		{
			// Finished times are started + 2s: q09 (started 1s before day 2)
			// finishes on day 2 and counts there.
			name: "day 2", dayStart: day(2),
			want: []ledger.Spend{
				sp(ledger.ScopeKey, "key_a", 3700, 500),
				sp(ledger.ScopeKey, "key_b", 1200, 0),
				sp(ledger.ScopeKey, "key_c", 990, 740),
				sp(ledger.ScopeModel, "gpt", 1050, 500),
				sp(ledger.ScopeModel, "sonnet", 4840, 740),
				sp(ledger.ScopeOrg, "acme", 4900, 500),
				sp(ledger.ScopeOrg, "globex", 990, 740),
				sp(ledger.ScopeTeam, "ads", 1200, 0),
				sp(ledger.ScopeTeam, "search", 3700, 500),
			},
		},
		{
			name: "far future", dayStart: day(30),
			want: []ledger.Spend{
				sp(ledger.ScopeKey, "key_a", 3700, 0),
				sp(ledger.ScopeKey, "key_b", 1200, 0),
				sp(ledger.ScopeKey, "key_c", 990, 0),
				sp(ledger.ScopeModel, "gpt", 1050, 0),
				sp(ledger.ScopeModel, "sonnet", 4840, 0),
				sp(ledger.ScopeOrg, "acme", 4900, 0),
				sp(ledger.ScopeOrg, "globex", 990, 0),
				sp(ledger.ScopeTeam, "ads", 1200, 0),
				sp(ledger.ScopeTeam, "search", 3700, 0),
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := s.Spends(context.Background(), c.dayStart)
			if err != nil {
				t.Fatalf("Spends: %v", err)
			}
			sortSpends(got)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("Spends:\n got %+v\nwant %+v", got, c.want)
			}
			// The oracle agrees with the literal table.
			if ref := ReferenceSpends(Seed(), c.dayStart); !reflect.DeepEqual(ref, c.want) {
				t.Errorf("reference Spends disagrees:\n got %+v\nwant %+v", ref, c.want)
			}
		})
	}
}

func sp(scope, id string, total, today int64) ledger.Spend {
	return ledger.Spend{Scope: scope, ID: id, TotalMicro: total, TodayMicro: today}
}

func sortSpends(sp []ledger.Spend) {
	sort.Slice(sp, func(i, j int) bool {
		if sp[i].Scope != sp[j].Scope {
			return sp[i].Scope < sp[j].Scope
		}
		return sp[i].ID < sp[j].ID
	})
}

func testUsage(t *testing.T, open Open) {
	s := seeded(t, open)
	g := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	// Literal expectations for a few queries, so the oracle below is not
	// trusted blindly; every query is also checked against the oracle.
	cases := []struct {
		name string
		q    ledger.UsageQuery
		want []ledger.UsageRow // nil: oracle only
	}{
		{name: "total", q: ledger.UsageQuery{}, want: []ledger.UsageRow{{Group: g(),
			Requests: 12, Succeeded: 6, Failed: 4, FailedOver: 4, Attempts: 18,
			InputTokens: 1200, OutputTokens: 589, CachedTokens: 60, CostMicroUSD: 5890}}},
		{name: "by org", q: ledger.UsageQuery{GroupBy: []string{"org"}}, want: []ledger.UsageRow{
			{Group: g("org", "acme"), Requests: 8, Succeeded: 5, Failed: 3, FailedOver: 3, Attempts: 13,
				InputTokens: 800, OutputTokens: 490, CachedTokens: 40, CostMicroUSD: 4900},
			{Group: g("org", "globex"), Requests: 4, Succeeded: 1, Failed: 1, FailedOver: 1, Attempts: 5,
				InputTokens: 400, OutputTokens: 99, CachedTokens: 20, CostMicroUSD: 990},
		}},
		{name: "by day", q: ledger.UsageQuery{GroupBy: []string{"day"}}, want: []ledger.UsageRow{
			{Group: g("day", "2026-03-01"), Requests: 4, Succeeded: 4, FailedOver: 3, Attempts: 6,
				InputTokens: 400, OutputTokens: 410, CachedTokens: 20, CostMicroUSD: 4100},
			{Group: g("day", "2026-03-02"), Requests: 5, Failed: 3, FailedOver: 1, Attempts: 8,
				InputTokens: 500, OutputTokens: 59, CachedTokens: 25, CostMicroUSD: 590},
			{Group: g("day", "2026-03-03"), Requests: 3, Succeeded: 2, Failed: 1, Attempts: 4,
				InputTokens: 300, OutputTokens: 120, CachedTokens: 15, CostMicroUSD: 1200},
		}},
		{name: "filter key and day", q: ledger.UsageQuery{GroupBy: []string{"deployment"},
			Filters: map[string]string{"key": "key_a", "day": "2026-03-01"}}, want: []ledger.UsageRow{
			{Group: g("deployment", "anthropic"), Requests: 2, Succeeded: 2, FailedOver: 1, Attempts: 3,
				InputTokens: 200, OutputTokens: 200, CachedTokens: 10, CostMicroUSD: 2000},
			{Group: g("deployment", "bedrock"), Requests: 1, Succeeded: 1, FailedOver: 1, Attempts: 2,
				InputTokens: 100, OutputTokens: 120, CachedTokens: 5, CostMicroUSD: 1200},
		}},
		{name: "no match", q: ledger.UsageQuery{GroupBy: []string{"model"}, Filters: map[string]string{"org": "initech"}},
			want: []ledger.UsageRow{}},
		{name: "no match total", q: ledger.UsageQuery{Filters: map[string]string{"org": "initech"}},
			want: []ledger.UsageRow{{Group: g()}}},
		{name: "from inclusive to exclusive", q: ledger.UsageQuery{From: day(0).Add(11 * time.Hour), To: day(1).Add(11 * time.Hour)}},
		{name: "from only", q: ledger.UsageQuery{From: day(2).Add(-time.Second), GroupBy: []string{"day", "model"}}},
		{name: "to only", q: ledger.UsageQuery{To: day(2), GroupBy: []string{"team"}}},
		{name: "empty team groups", q: ledger.UsageQuery{GroupBy: []string{"team", "key"}}},
		{name: "all dimensions", q: ledger.UsageQuery{GroupBy: []string{"day", "deployment", "model", "key", "team", "org"}}},
		{name: "filter empty deployment", q: ledger.UsageQuery{GroupBy: []string{"model"}, Filters: map[string]string{"deployment": ""}}},
		{name: "every filter", q: ledger.UsageQuery{Filters: map[string]string{"org": "acme", "team": "search",
			"key": "key_a", "model": "sonnet", "deployment": "anthropic", "day": "2026-03-01"}}},
		{name: "empty range", q: ledger.UsageQuery{From: base(), To: base(), GroupBy: []string{"org"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := s.Usage(context.Background(), c.q)
			if err != nil {
				t.Fatalf("Usage: %v", err)
			}
			ref := ReferenceUsage(Seed(), c.q)
			if c.want != nil && !usageEqual(ref, c.want) {
				t.Errorf("reference disagrees with the table:\n got %+v\nwant %+v", ref, c.want)
			}
			if !usageEqual(got, ref) {
				t.Errorf("Usage(%+v):\n got %+v\nwant %+v", c.q, got, ref)
			}
		})
	}
}

func usageEqual(a, b []ledger.UsageRow) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

func testUsageInvalid(t *testing.T, open Open) {
	s := mustOpen(t, open)
	for _, q := range []ledger.UsageQuery{
		{GroupBy: []string{"prompt"}},
		{GroupBy: []string{"org; DROP TABLE requests"}},
		{GroupBy: []string{"org", "org"}},
		{Filters: map[string]string{"status": "ok"}},
		{Filters: map[string]string{"day": "2026-3-1"}},
		{Filters: map[string]string{"day": "2026-02-30"}},
		{From: base().Add(time.Hour), To: base()},
	} {
		if _, err := s.Usage(context.Background(), q); !errors.Is(err, ledger.ErrInvalidQuery) {
			t.Errorf("Usage(%+v) = %v, want ErrInvalidQuery", q, err)
		}
	}
}

// ReferenceUsage computes Usage over settlements in Go: the executable
// definition every store is held to. Rows are ordered by their group values
// in GroupBy order.
func ReferenceUsage(seed []ledger.Settlement, q ledger.UsageQuery) []ledger.UsageRow {
	type acc struct {
		key []string
		row ledger.UsageRow
	}
	groups := map[string]*acc{}
	var order []*acc
	for i := range seed {
		r := &seed[i].Request
		if !q.From.IsZero() && r.StartedAt.Before(q.From) || !q.To.IsZero() && !r.StartedAt.Before(q.To) {
			continue
		}
		match := true
		for name, v := range q.Filters {
			if dim(r, name) != v {
				match = false
			}
		}
		if !match {
			continue
		}
		key := make([]string, len(q.GroupBy))
		for j, name := range q.GroupBy {
			key[j] = dim(r, name)
		}
		k := fmt.Sprintf("%q", key)
		a := groups[k]
		if a == nil {
			a = &acc{key: key, row: ledger.UsageRow{Group: map[string]string{}}}
			for j, name := range q.GroupBy {
				a.row.Group[name] = key[j]
			}
			groups[k] = a
			order = append(order, a)
		}
		u := &a.row
		u.Requests++
		if r.Succeeded() {
			u.Succeeded++
		}
		if r.Failed() {
			u.Failed++
		}
		if r.FailedOver() {
			u.FailedOver++
		}
		u.Attempts += int64(r.Attempts)
		u.InputTokens += int64(r.InputTokens)
		u.OutputTokens += int64(r.OutputTokens)
		u.CachedTokens += int64(r.CachedTokens)
		u.CostMicroUSD += r.CostMicroUSD
	}
	if len(q.GroupBy) == 0 && len(order) == 0 { // one total row, even of nothing
		order = append(order, &acc{row: ledger.UsageRow{Group: map[string]string{}}})
	}
	sort.SliceStable(order, func(i, j int) bool { return slices.Compare(order[i].key, order[j].key) < 0 })
	out := make([]ledger.UsageRow, len(order))
	for i, a := range order {
		out[i] = a.row
	}
	return out
}

func dim(r *ledger.Request, name string) string {
	switch name {
	case ledger.DimOrg:
		return r.Org
	case ledger.DimTeam:
		return r.Team
	case ledger.DimKey:
		return r.KeyID
	case ledger.DimModel:
		return r.PublicModel
	case ledger.DimDeployment:
		return r.Deployment
	case ledger.DimDay:
		return ledger.DayOf(r.StartedAt)
	}
	panic("unknown dimension " + name)
}

// ReferenceSpends computes Spends over settlements in Go, sorted by scope
// then id.
func ReferenceSpends(seed []ledger.Settlement, dayStart time.Time) []ledger.Spend {
	type k struct{ scope, id string }
	m := map[k]*ledger.Spend{}
	for i := range seed {
		r := &seed[i].Request
		if r.CostMicroUSD == 0 {
			continue
		}
		for _, sc := range []k{{ledger.ScopeOrg, r.Org}, {ledger.ScopeTeam, r.Team}, {ledger.ScopeKey, r.KeyID}, {ledger.ScopeModel, r.PublicModel}} {
			if sc.id == "" {
				continue
			}
			sp := m[sc]
			if sp == nil {
				sp = &ledger.Spend{Scope: sc.scope, ID: sc.id}
				m[sc] = sp
			}
			sp.TotalMicro += r.CostMicroUSD
			if !r.FinishedAt.Before(dayStart) {
				sp.TodayMicro += r.CostMicroUSD
			}
		}
	}
	out := make([]ledger.Spend, 0, len(m))
	for _, sp := range m {
		out = append(out, *sp)
	}
	sortSpends(out)
	return out
}
