package drill

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/ledger/sqlite"
)

// TestCheckStore: the check reads any ledger.Store through its Auditor
// (here the SQLite store itself, open for writing as a gateway holds it),
// with the same verdicts as the read-only file; pages smaller than the
// ledger are stitched together.
func TestCheckStore(t *testing.T) {
	ctx := context.Background()
	f := newFixture()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.WriteBatch(ctx, &f.batch); err != nil {
		t.Fatal(err)
	}
	for _, page := range []int{1, 2, auditPage} {
		rows, err := readRequests(ctx, pager{st, page})
		if err != nil || len(rows) != 3 {
			t.Fatalf("page %d: %d request rows, %v", page, len(rows), err)
		}
		atts, n, err := readAttempts(ctx, pager{st, page})
		if err != nil || n != 6 || len(atts["C"]) != 3 || atts["C"][2].class != "throttled" {
			t.Fatalf("page %d: %d attempt rows (%v), %v", page, n, atts, err)
		}
	}
	rep, err := CheckStore(ctx, st, testModel, testRungs(), f.expect)
	if err != nil {
		t.Fatal(err)
	}
	for _, inv := range rep.Invariants {
		if !inv.Pass {
			t.Errorf("%s broken: %v", inv.Name, inv.Examples)
		}
	}
	if rep.Requests != 3 || rep.Attempts != 6 || rep.OpenReservations != 0 {
		t.Errorf("report %+v", rep)
	}
}

// pager reads through an Auditor in pages of at most n rows.
type pager struct {
	ledger.Auditor
	n int
}

func (p pager) RequestRows(ctx context.Context, after string, limit int) ([]ledger.Request, error) {
	return p.Auditor.RequestRows(ctx, after, min(limit, p.n))
}

func (p pager) AttemptRows(ctx context.Context, after ledger.AttemptKey, limit int) ([]ledger.Attempt, error) {
	return p.Auditor.AttemptRows(ctx, after, min(limit, p.n))
}
