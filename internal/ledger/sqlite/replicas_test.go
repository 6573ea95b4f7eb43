package sqlite

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/ledger"
)

// Two replicas on one ledger, each with its own journal: a replica that
// restarts releases the reservation it left open, never the one the
// other still has in flight. A journal keeps its identity across
// reopening and no two journals share one.
func TestRecoverReleasesOnlyItsOwn(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTemp(t)
	at := time.Now().UTC() // recent: an older reservation is released by anyone (ledger.OrphanAfter)
	ids := map[string]string{}
	for _, name := range []string{"a", "b"} {
		j, err := ledger.OpenJournal(filepath.Join(dir, name+".journal"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := j.Recover(ctx, s); err != nil {
			t.Fatal(err)
		}
		ids[name] = j.ID()
		w := ledger.NewWriter(s, ledger.WriterOptions{Journal: j, MinFreeBytes: -1})
		r, st := crashSettlement("settled-"+name, at)
		w.Reserve(r)
		if err := w.Settle(ctx, st); err != nil {
			t.Fatal(err)
		}
		r, _ = crashSettlement("inflight-"+name, at)
		w.Reserve(r) // never settled: the replica "dies" with it open
		if err := w.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if len(ids["a"]) != 32 || ids["a"] == ids["b"] {
		t.Fatalf("journal ids %q and %q: want two distinct 32-digit ids", ids["a"], ids["b"])
	}
	// a restarts (b is still running, its reservation in flight).
	j, err := ledger.OpenJournal(filepath.Join(dir, "a.journal"))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if j.ID() != ids["a"] {
		t.Errorf("a's journal reopened with id %q, was %q", j.ID(), ids["a"])
	}
	rec, err := j.Recover(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rec.Released {
		got = append(got, r.RequestID)
	}
	if !slices.Equal(got, []string{"inflight-a"}) {
		t.Errorf("a's restart released %v, want [inflight-a] alone (not b's request in flight)", got)
	}
	st, err := s.ReservationStates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Open != 1 || !slices.Equal(st.OpenIDs, []string{"inflight-b"}) || st.Released != 1 {
		t.Errorf("reservations after a's restart: %+v; want inflight-b open, inflight-a released", st)
	}
}
