package ledgertest

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/ledger"
)

// aggregateQueries are the usage queries whose answers must survive
// pruning: whole days only (from, to and day filters at UTC midnights).
func aggregateQueries() map[string]ledger.UsageQuery {
	return map[string]ledger.UsageQuery{
		"total":            {},
		"by day":           {GroupBy: []string{"day"}},
		"all dimensions":   {GroupBy: []string{"day", "deployment", "model", "key", "team", "org"}},
		"by org and model": {GroupBy: []string{"org", "model"}},
		"one key":          {Filters: map[string]string{"key": "key_a"}},
		"day 0 by key":     {GroupBy: []string{"key"}, Filters: map[string]string{"day": "2026-03-01"}},
		"days 1 to 2":      {From: day(1), To: day(3), GroupBy: []string{"deployment"}},
		"from day 1":       {From: day(1), GroupBy: []string{"team"}},
		"to day 2":         {To: day(2)},
		"org on day 1":     {Filters: map[string]string{"org": "acme", "day": "2026-03-02"}},
	}
}

// testPruneKeepsTotals: pruning raw rows, a day or every day at a time,
// in batches of any size, leaves every whole-day usage answer and every
// budget spend exactly what it was (and what the reference computes); a
// query needing a pruned partial day is refused with ErrPruned instead of
// answered short; a partial day still kept answers as before; and a replay
// of kept settlements counts nothing twice.
func testPruneKeepsTotals(t *testing.T, open Open) {
	cases := []struct {
		name       string
		before     time.Time // pruned: raw rows that started before its day
		limit      int
		wantPruned int // requests deleted in all
	}{
		{name: "nothing older", before: day(0), limit: 100, wantPruned: 0},
		{name: "day 0", before: day(1), limit: 100, wantPruned: 4},
		{name: "days 0 and 1, one row per batch", before: day(2), limit: 1, wantPruned: 9},
		{name: "days 0 and 1, a time within day 2", before: day(2).Add(13 * time.Hour), limit: 3, wantPruned: 9},
		{name: "everything", before: day(30), limit: 5, wantPruned: 12},
	}
	ctx := context.Background()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := seeded(t, open)
			p, ok := s.(ledger.Pruner)
			if !ok {
				t.Fatalf("%T does not prune (ledger.Pruner)", s)
			}
			queries := aggregateQueries()
			before := map[string][]ledger.UsageRow{}
			for name, q := range queries {
				got, err := s.Usage(ctx, q)
				if err != nil {
					t.Fatalf("%s before pruning: %v", name, err)
				}
				if ref := ReferenceUsage(Seed(), q); !usageEqual(got, ref) {
					t.Fatalf("%s before pruning:\n got %+v\nwant %+v", name, got, ref)
				}
				before[name] = got
			}
			spendDays := []time.Time{day(0), day(1), day(2), day(3)}
			spends := map[time.Time][]ledger.Spend{}
			for _, d := range spendDays {
				sp, err := s.Spends(ctx, d)
				if err != nil {
					t.Fatal(err)
				}
				sortSpends(sp)
				spends[d] = sp
			}
			pruned := 0
			for i := 0; ; i++ {
				n, err := p.Prune(ctx, c.before, c.limit)
				if err != nil {
					t.Fatalf("Prune: %v", err)
				}
				if n > c.limit {
					t.Fatalf("Prune deleted %d requests, more than its limit %d", n, c.limit)
				}
				if n == 0 {
					break
				}
				if i > 100 {
					t.Fatal("Prune never finished")
				}
				pruned += n
			}
			if pruned != c.wantPruned {
				t.Errorf("pruned %d requests, want %d", pruned, c.wantPruned)
			}
			// A replay of the whole seed: the pruned settlements come back
			// as raw rows (the store cannot know them), the kept ones are
			// skipped; neither may move a whole-day total... except the
			// pruned ones, which are counted again. So replay only what
			// was kept.
			var kept []ledger.Settlement
			for _, st := range Seed() {
				if !st.Request.StartedAt.Before(c.before.UTC().Truncate(24 * time.Hour)) {
					kept = append(kept, st)
				}
			}
			if len(kept) > 0 {
				if err := s.WriteBatch(ctx, &ledger.Batch{Settlements: kept}); err != nil {
					t.Fatalf("replay: %v", err)
				}
			}
			for name, q := range queries {
				got, err := s.Usage(ctx, q)
				if err != nil {
					t.Errorf("%s after pruning: %v", name, err)
					continue
				}
				if !usageEqual(got, before[name]) {
					t.Errorf("%s after pruning:\n got %+v\nwant %+v", name, got, before[name])
				}
			}
			for _, d := range spendDays {
				sp, err := s.Spends(ctx, d)
				if err != nil {
					t.Fatal(err)
				}
				sortSpends(sp)
				if !reflect.DeepEqual(sp, spends[d]) {
					t.Errorf("Spends(%s) after pruning:\n got %+v\nwant %+v", d.Format(ledger.DayLayout), sp, spends[d])
				}
			}
			cut := c.before.UTC().Truncate(24 * time.Hour)
			// A partial day: refused inside the pruned range, answered
			// (as the reference does) where raw rows are kept.
			for _, d := range []time.Time{day(0), day(1), day(2)} {
				q := ledger.UsageQuery{From: d.Add(11 * time.Hour), To: d.Add(30 * time.Hour), GroupBy: []string{"key"}}
				got, err := s.Usage(ctx, q)
				if c.wantPruned > 0 && q.From.Before(cut) {
					var pe *ledger.PrunedError
					if !errors.Is(err, ledger.ErrPruned) || !errors.Is(err, ledger.ErrInvalidQuery) || !errors.As(err, &pe) ||
						!pe.KeptFrom.Equal(cut) {
						t.Errorf("partial day %s inside the pruned range: %v, want a *PrunedError keeping from %s",
							d.Format(ledger.DayLayout), err, cut.Format(ledger.DayLayout))
					}
					continue
				}
				if err != nil {
					t.Errorf("partial day %s (kept): %v", d.Format(ledger.DayLayout), err)
					continue
				}
				if ref := ReferenceUsage(Seed(), q); !usageEqual(got, ref) {
					t.Errorf("partial day %s (kept):\n got %+v\nwant %+v", d.Format(ledger.DayLayout), got, ref)
				}
			}
		})
	}
}

// testAggregatesReplay: a settlement written again, in a later batch or
// twice in one, is counted once in usage and spend, whichever way the
// store writes it.
func testAggregatesReplay(t *testing.T, open Open) {
	ctx := context.Background()
	s := seeded(t, open)
	seed := Seed()
	for _, b := range [][]ledger.Settlement{seed, {seed[0], seed[0], seed[3]}, append(append([]ledger.Settlement{}, seed[5:]...), seed[5:]...)} {
		if err := s.WriteBatch(ctx, &ledger.Batch{Settlements: b}); err != nil {
			t.Fatalf("replay: %v", err)
		}
	}
	for name, q := range aggregateQueries() {
		got, err := s.Usage(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if ref := ReferenceUsage(seed, q); !usageEqual(got, ref) {
			t.Errorf("%s after replays:\n got %+v\nwant %+v", name, got, ref)
		}
	}
	for _, d := range []time.Time{day(0), day(2)} {
		got, err := s.Spends(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		sortSpends(got)
		if ref := ReferenceSpends(seed, d); !reflect.DeepEqual(got, ref) {
			t.Errorf("Spends(%s) after replays:\n got %+v\nwant %+v", d.Format(ledger.DayLayout), got, ref)
		}
	}
}
