package ledgertest

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/ledger"
)

// testAudit: a store hands back its rows as stored, page by page in byte
// order of request id (then seq), every field intact, and counts its
// reservations by state.
func testAudit(t *testing.T, open Open) {
	ctx := context.Background()
	s := mustOpen(t, open)
	if rs, err := s.RequestRows(ctx, "", 10); err != nil || len(rs) != 0 {
		t.Fatalf("a fresh store's request rows = %v, %v", rs, err)
	}
	if st, err := s.ReservationStates(ctx); err != nil || st.Open+st.Released+st.Settled != 0 {
		t.Fatalf("a fresh store's reservations = %+v, %v", st, err)
	}
	for _, limit := range []int{0, -1, ledger.MaxAuditPage + 1} {
		if _, err := s.RequestRows(ctx, "", limit); !errors.Is(err, ledger.ErrInvalidQuery) {
			t.Errorf("RequestRows(limit %d) = %v, want ErrInvalidQuery", limit, err)
		}
		if _, err := s.AttemptRows(ctx, ledger.AttemptKey{}, limit); !errors.Is(err, ledger.ErrInvalidQuery) {
			t.Errorf("AttemptRows(limit %d) = %v, want ErrInvalidQuery", limit, err)
		}
	}
	// Byte order: "B" sorts before "a" whatever the database's collation.
	ids := []string{"a", "B", "c1", "c10"}
	b := ledger.Batch{}
	var want []ledger.Settlement
	for i, id := range ids {
		b.Reservations = append(b.Reservations, reservation(id, 5000))
		st := Settlement(id, int64(100*(i+1)), i%3+1)
		r := &st.Request
		r.Streamed, r.Exercise = i%2 == 0, i%2 == 1
		r.FirstTokenMS, r.LatencyMS, r.CachedTokens, r.ReservedMicroUSD = 12, 345, 3, 5000
		r.FailureClass = map[bool]string{true: "", false: "provider_unavailable"}[i != 2]
		r.StartedAt = base().Add(time.Duration(i) * time.Microsecond)
		for k := range st.Attempts {
			a := &st.Attempts[k]
			a.InputTokens, a.OutputTokens, a.FirstByteMS, a.DurationMS = 10, 20, 7, 70
			a.StartedAt = base().Add(time.Duration(k) * time.Microsecond)
		}
		want = append(want, st)
	}
	b.Settlements = want
	b.Reservations = append(b.Reservations, reservation("open-2", 1), reservation("open-1", 1))
	b.Reservations[len(b.Reservations)-1].CreatedAt = base().Add(-time.Second) // the oldest
	if err := s.WriteBatch(ctx, &b); err != nil {
		t.Fatalf("WriteBatch: %v", err)
	}
	slices.SortFunc(want, func(x, y ledger.Settlement) int { return stringsCompare(x.Request.RequestID, y.Request.RequestID) })

	// Request rows, two ids a page.
	var got []ledger.Request
	after := ""
	for page := 0; ; page++ {
		rs, err := s.RequestRows(ctx, after, 2)
		if err != nil {
			t.Fatalf("RequestRows(%q): %v", after, err)
		}
		if len(rs) == 0 {
			break
		}
		if len(rs) > 2 || page > len(ids) {
			t.Fatalf("page %d: %d rows", page, len(rs))
		}
		got = append(got, rs...)
		after = rs[len(rs)-1].RequestID
	}
	if len(got) != len(want) {
		t.Fatalf("%d request rows, want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i].Request) {
			t.Errorf("request row %d:\n got %+v\nwant %+v", i, got[i], want[i].Request)
		}
	}

	// Attempt rows, three a page, in (request id, seq) order.
	var gotAtt, wantAtt []ledger.Attempt
	for _, st := range want {
		wantAtt = append(wantAtt, st.Attempts...)
	}
	var key ledger.AttemptKey
	for {
		as, err := s.AttemptRows(ctx, key, 3)
		if err != nil {
			t.Fatalf("AttemptRows(%+v): %v", key, err)
		}
		if len(as) == 0 {
			break
		}
		if len(as) > 3 || len(gotAtt) > len(wantAtt) {
			t.Fatalf("%d attempt rows in a page of 3, %d so far", len(as), len(gotAtt))
		}
		gotAtt = append(gotAtt, as...)
		last := as[len(as)-1]
		key = ledger.AttemptKey{RequestID: last.RequestID, Seq: last.Seq}
	}
	if !reflect.DeepEqual(gotAtt, wantAtt) {
		t.Errorf("attempt rows:\n got %+v\nwant %+v", gotAtt, wantAtt)
	}

	// Reservations: the settled ones, and the open ones oldest first.
	st, err := s.ReservationStates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Open != 2 || st.Settled != len(ids) || st.Released != 0 || !slices.Equal(st.OpenIDs, []string{"open-1", "open-2"}) {
		t.Errorf("reservation states %+v, want 2 open (open-1, open-2), %d settled", st, len(ids))
	}
	if _, err := s.RecoverOpen(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if st, err := s.ReservationStates(ctx); err != nil || st.Open != 0 || st.Released != 2 || len(st.OpenIDs) != 0 {
		t.Errorf("after RecoverOpen: %+v, %v; want 2 released, none open", st, err)
	}
}

// stringsCompare orders strings by their bytes.
func stringsCompare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
