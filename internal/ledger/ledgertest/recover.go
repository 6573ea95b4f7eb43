package ledgertest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/ledger"
)

// testRecoverOwn: several replicas share one store. A replica starting up
// releases the reservations it wrote itself (Batch.Owner), those of no
// owner (written before owners existed) and those older than
// ledger.OrphanAfter (a replica gone for good), never another replica's
// in flight; that one is closed by its own settlement later, and its
// replica's own recovery would release it.
func testRecoverOwn(t *testing.T, open Open) {
	ctx := context.Background()
	s := mustOpen(t, open)
	// Made now (the stores' clock): the suite's usual base() is months old.
	recent := func(id string, amount int64) ledger.Reservation {
		r := reservation(id, amount)
		r.CreatedAt = time.Now().UTC().Truncate(time.Microsecond)
		return r
	}
	gone := recent("gone1", 40)
	gone.CreatedAt = gone.CreatedAt.Add(-ledger.OrphanAfter - time.Hour)
	for _, b := range []*ledger.Batch{
		{Owner: "replica-a", Reservations: []ledger.Reservation{recent("a1", 10), recent("a2", 10)}},
		{Owner: "replica-b", Reservations: []ledger.Reservation{recent("b1", 20), recent("b2", 20)}},
		{Reservations: []ledger.Reservation{recent("legacy", 30)}},
		{Owner: "replica-gone", Reservations: []ledger.Reservation{gone}},
		// A settles a2; a repeated reservation with another owner changes
		// nothing (the first write's owner stays).
		{Owner: "replica-a", Settlements: []ledger.Settlement{Settlement("a2", 1, 1)}},
		{Owner: "replica-a", Reservations: []ledger.Reservation{recent("b2", 20)}},
	} {
		if err := s.WriteBatch(ctx, b); err != nil {
			t.Fatalf("WriteBatch(owner %q): %v", b.Owner, err)
		}
	}
	released := func(owner string) []string {
		t.Helper()
		rel, err := s.RecoverOpen(ctx, owner)
		if err != nil {
			t.Fatalf("RecoverOpen(%q): %v", owner, err)
		}
		var ids []string
		for _, r := range rel {
			ids = append(ids, r.RequestID)
		}
		slices.Sort(ids)
		return ids
	}
	if got := released("replica-a"); !slices.Equal(got, []string{"a1", "gone1", "legacy"}) {
		t.Errorf("replica-a's recovery released %v, want [a1 gone1 legacy]: its own, the unowned and the orphaned, not replica-b's", got)
	}
	if got := released("replica-c"); len(got) != 0 {
		t.Errorf("a new replica's recovery released %v, want nothing", got)
	}
	st, err := s.ReservationStates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Open != 2 || st.Released != 3 || st.Settled != 1 {
		t.Errorf("after replica-a's recovery: %+v, want b1 and b2 open, 3 released, 1 settled", st)
	}
	// replica-b, still running, settles b1; its own restart releases b2.
	if err := s.WriteBatch(ctx, &ledger.Batch{Owner: "replica-b", Settlements: []ledger.Settlement{Settlement("b1", 2, 1)}}); err != nil {
		t.Fatal(err)
	}
	if got := released("replica-b"); !slices.Equal(got, []string{"b2"}) {
		t.Errorf("replica-b's recovery released %v, want [b2]", got)
	}
	if st, err := s.ReservationStates(ctx); err != nil || st.Open != 0 || st.Released != 4 || st.Settled != 2 {
		t.Errorf("at the end: %+v, %v; want none open, 4 released, 2 settled", st, err)
	}
}
