package ledger

import (
	"errors"
	"math"
	"reflect"
	"testing"
	"time"
)

// TestPlanUsage: a query's range is split into whole days (aggregates) and
// partial days (raw rows); partial days before the pruning horizon are
// refused.
func TestPlanUsage(t *testing.T) {
	d := func(n int) time.Time { return time.Date(2026, 3, 1+n, 0, 0, 0, 0, time.UTC) }
	dn := func(n int) int64 { return DayNumber(d(n).UnixMicro()) }
	us := func(t time.Time) int64 { return t.UnixMicro() }
	h := time.Hour
	cases := []struct {
		name   string
		q      UsageQuery
		kept   int64     // raw_kept_from
		now    time.Time // zero: long after every day here
		want   UsagePlan
		pruned bool
	}{
		{name: "partial day inside the pruned range", q: UsageQuery{From: d(1).Add(h)}, kept: us(d(3)), pruned: true},
		{name: "to inside the pruned range", q: UsageQuery{To: d(1).Add(h)}, kept: us(d(3)), pruned: true},
		{name: "within one pruned day", q: UsageQuery{From: d(1).Add(h), To: d(1).Add(2 * h)}, kept: us(d(2)), pruned: true},
		{name: "unbounded", q: UsageQuery{}, kept: math.MinInt64, want: UsagePlan{Aggregates: true, FromDay: 1, ToDay: math.MaxInt64}},
		{name: "unbounded, pruned", q: UsageQuery{}, kept: us(d(5)), want: UsagePlan{Aggregates: true, FromDay: 1, ToDay: math.MaxInt64}},
		{name: "whole days", q: UsageQuery{From: d(1), To: d(4)}, kept: us(d(9)),
			want: UsagePlan{Aggregates: true, HasFromDay: true, HasToDay: true, FromDay: dn(1), ToDay: dn(4)}},
		{name: "day filter", q: UsageQuery{Filters: map[string]string{"day": "2026-03-02"}}, kept: us(d(9)),
			want: UsagePlan{Aggregates: true, HasFromDay: true, HasToDay: true, FromDay: dn(1), ToDay: dn(2)}},
		{name: "day filter and a partial from", q: UsageQuery{From: d(1).Add(h), Filters: map[string]string{"day": "2026-03-02"}},
			kept: math.MinInt64, want: UsagePlan{Days: []int64{dn(1)}, Less: []RawSpan{{us(d(1)), us(d(1).Add(h))}}}},
		{name: "partial ends", q: UsageQuery{From: d(1).Add(h), To: d(4).Add(h)}, kept: us(d(1).Add(h)),
			want: UsagePlan{Aggregates: true, HasFromDay: true, HasToDay: true, FromDay: dn(2), ToDay: dn(4),
				Raw: []RawSpan{{us(d(1).Add(h)), us(d(2))}, {us(d(4)), us(d(4).Add(h))}}}},
		{name: "across one midnight", q: UsageQuery{From: d(1).Add(h), To: d(2).Add(h)}, kept: math.MinInt64,
			want: UsagePlan{Days: []int64{dn(1)}, Less: []RawSpan{{us(d(1)), us(d(1).Add(h))}},
				Raw: []RawSpan{{us(d(2)), us(d(2).Add(h))}}}},
		{name: "a late partial day: the day less its first hours", q: UsageQuery{From: d(1).Add(3 * h), To: d(3)}, kept: math.MinInt64,
			want: UsagePlan{Aggregates: true, HasFromDay: true, HasToDay: true, FromDay: dn(2), ToDay: dn(3),
				Days: []int64{dn(1)}, Less: []RawSpan{{us(d(1)), us(d(1).Add(3 * h))}}}},
		{name: "today up to now: today less what started after now", q: UsageQuery{From: d(1), To: d(3).Add(2 * h)},
			kept: math.MinInt64, now: d(3).Add(90 * time.Minute),
			want: UsagePlan{Aggregates: true, HasFromDay: true, HasToDay: true, FromDay: dn(1), ToDay: dn(3),
				Days: []int64{dn(3)}, Less: []RawSpan{{us(d(3).Add(2 * h)), us(d(4))}}}},
		{name: "a partial pruned day, either way", q: UsageQuery{From: d(1).Add(20 * h), To: d(3)}, kept: us(d(2)), pruned: true},
		{name: "the cheaper way is pruned: the other", q: UsageQuery{From: d(1).Add(2 * h), To: d(3)}, kept: us(d(1).Add(h)),
			want: UsagePlan{Aggregates: true, HasFromDay: true, HasToDay: true, FromDay: dn(2), ToDay: dn(3),
				Raw: []RawSpan{{us(d(1).Add(2 * h)), us(d(2))}}}},
		{name: "empty range", q: UsageQuery{From: d(1), To: d(1)}, kept: us(d(5)),
			want: UsagePlan{Raw: []RawSpan{{us(d(1)), us(d(1))}}}},
		{name: "before 1970-01-02", q: UsageQuery{From: time.Unix(-5, 0), To: d(0)}, kept: math.MinInt64,
			want: UsagePlan{Aggregates: true, HasFromDay: true, HasToDay: true, FromDay: 1, ToDay: dn(0),
				Raw: []RawSpan{{-5_000_000, MicrosPerDay}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			now := c.now
			if now.IsZero() {
				now = d(400)
			}
			got, err := PlanUsage(&c.q, c.kept, now.UnixMicro())
			if c.pruned {
				var pe *PrunedError
				if !errors.Is(err, ErrInvalidQuery) || !errors.As(err, &pe) || pe.KeptFrom.UnixMicro() != c.kept {
					t.Fatalf("PlanUsage = %+v, %v; want a *PrunedError", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("PlanUsage:\n got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// TestBounded: aggregates count a figure out of bounds as Repair rewrites
// it.
func TestBounded(t *testing.T) {
	cases := []struct {
		name                  string
		r                     Request
		in, out, cached, cost int64
		repair                bool
	}{
		{name: "negative and huge counts", r: Request{InputTokens: -1, OutputTokens: MaxTokens + 1, CachedTokens: 3, CostMicroUSD: 7},
			in: 0, out: 0, cached: 3, cost: 7, repair: true},
		{name: "cost out of bounds: the reservation", r: Request{CostMicroUSD: -1, ReservedMicroUSD: 900}, cost: 900, repair: true},
		{name: "both out of bounds: 0", r: Request{CostMicroUSD: MaxCostMicro + 1, ReservedMicroUSD: -3}, cost: 0, repair: true},
		{name: "reservation alone out of bounds", r: Request{CostMicroUSD: 5, ReservedMicroUSD: -3}, cost: 5, repair: true},
		{name: "fine", r: Request{InputTokens: 10, OutputTokens: 20, CachedTokens: 1, CostMicroUSD: 30, ReservedMicroUSD: 90},
			in: 10, out: 20, cached: 1, cost: 30},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in, out, cached, cost := c.r.Bounded()
			if in != c.in || out != c.out || cached != c.cached || cost != c.cost {
				t.Errorf("Bounded = %d %d %d %d, want %d %d %d %d", in, out, cached, cost, c.in, c.out, c.cached, c.cost)
			}
			s := Settlement{Request: c.r}
			if s.NeedsRepair() != c.repair {
				t.Errorf("NeedsRepair = %v, want %v", !c.repair, c.repair)
			}
		})
	}
	s := Settlement{Attempts: []Attempt{{OutputTokens: -1}}}
	if !s.NeedsRepair() {
		t.Error("an attempt out of bounds needs no repair")
	}
}
