package ledger

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"
)

// Daily aggregates: every store keeps, beside the raw request and attempt
// rows, one row per (UTC day the request started, UTC day it finished,
// org, team, key, public model, deployment) with the usage counters, and
// one all-time spend total per budget scope. Both are updated in the
// settling transaction from exactly the settlements it inserted (a replay
// is never counted twice) and are never pruned, so usage over whole days
// and budget spend survive the raw rows' retention, and start-up reads
// spend from a few rows instead of scanning history.

// MicrosPerDay is one UTC day in the stores' time unit.
const MicrosPerDay = int64(24 * time.Hour / time.Microsecond)

// DayNumber is the stores' day bucket of a stored time: micros divided by
// MicrosPerDay, truncated toward zero as SQL's integer division is (the
// "day" dimension's expression). For any time from 1970-01-02 on, bucket d
// holds exactly [d, d+1) days since the epoch.
func DayNumber(micros int64) int64 { return micros / MicrosPerDay }

// ErrPruned is returned (wrapping ErrInvalidQuery) for a usage query that
// needs raw rows the retention has pruned: a from or to that is not a UTC
// midnight, inside a pruned day. Whole days are answered from the daily
// aggregates however old.
var ErrPruned = fmt.Errorf("%w: raw rows pruned", ErrInvalidQuery)

// PrunedError says from when raw rows are kept.
type PrunedError struct {
	KeptFrom time.Time // the first UTC day whose raw rows are kept
}

func (e *PrunedError) Error() string {
	return fmt.Sprintf("ledger: invalid usage query: request rows before %s are pruned (ledger.retention); "+
		"from and to must be UTC midnights (whole days) before then", e.KeptFrom.Format(DayLayout))
}

// Unwrap makes a PrunedError an ErrPruned (and so an ErrInvalidQuery).
func (e *PrunedError) Unwrap() error { return ErrPruned }

// Bounded returns r's figures as Repair leaves them: a token count out of
// [0, MaxTokens] is 0; a cost out of [0, MaxCostMicro] is the reservation,
// or 0 when that is out of bounds too. Aggregates count these, so that a
// row an older gateway stored from a hostile provider never overflows a
// sum, and they agree with the raw rows once Repair has run.
func (r *Request) Bounded() (in, out, cached, cost int64) {
	tok := func(n int) int64 {
		if n < 0 || n > MaxTokens {
			return 0
		}
		return int64(n)
	}
	cost = r.CostMicroUSD
	if !SaneCost(cost) {
		cost = 0
		if SaneCost(r.ReservedMicroUSD) {
			cost = r.ReservedMicroUSD
		}
	}
	return tok(r.InputTokens), tok(r.OutputTokens), tok(r.CachedTokens), cost
}

// NeedsRepair reports whether Repair would rewrite some row of s: a
// request or attempt figure out of bounds. Stores note such settlements
// when they write them, so Repair looks at those rows only, never scanning
// the ledger.
func (s *Settlement) NeedsRepair() bool {
	r := &s.Request
	tok := func(n int) bool { return n < 0 || n > MaxTokens }
	if tok(r.InputTokens) || tok(r.OutputTokens) || tok(r.CachedTokens) ||
		!SaneCost(r.CostMicroUSD) || !SaneCost(r.ReservedMicroUSD) {
		return true
	}
	for i := range s.Attempts {
		a := &s.Attempts[i]
		if tok(a.InputTokens) || tok(a.OutputTokens) || !SaneCost(a.CostMicroUSD) {
			return true
		}
	}
	return false
}

// DayGroup keys one daily aggregate row.
type DayGroup struct {
	Day, FinishedDay                          int64 // DayNumber of StartedAt and FinishedAt
	Org, Team, KeyID, PublicModel, Deployment string
}

// DayTotals are one daily aggregate row's counters, counted as Usage
// counts them.
type DayTotals struct {
	Requests, Succeeded, Failed, FailedOver, Attempts int64
	InputTokens, OutputTokens, CachedTokens           int64
	CostMicroUSD                                      int64
}

// ScopeID names a budget scope.
type ScopeID struct{ Scope, ID string }

// Aggregates accumulates, in memory, what a batch of inserted settlements
// adds to the daily aggregates and the spend totals; a store writes the
// result in the same transaction. The zero value is empty and ready; Reset
// keeps its maps for the next batch.
type Aggregates struct {
	Days   map[DayGroup]*DayTotals
	Spend  map[ScopeID]int64
	Repair []string // request ids whose rows Repair must look at
	free   []DayTotals
}

// Reset empties a for reuse.
func (a *Aggregates) Reset() {
	clear(a.Days)
	clear(a.Spend)
	a.Repair = a.Repair[:0]
	a.free = a.free[:0]
}

// Add counts one inserted settlement.
func (a *Aggregates) Add(s *Settlement) {
	if a.Days == nil {
		a.Days = map[DayGroup]*DayTotals{}
		a.Spend = map[ScopeID]int64{}
	}
	r := &s.Request
	g := DayGroup{Day: DayNumber(r.StartedAt.UnixMicro()), FinishedDay: DayNumber(r.FinishedAt.UnixMicro()),
		Org: r.Org, Team: r.Team, KeyID: r.KeyID, PublicModel: r.PublicModel, Deployment: r.Deployment}
	t := a.Days[g]
	if t == nil {
		if len(a.free) == cap(a.free) {
			a.free = make([]DayTotals, 0, max(16, 2*cap(a.free)))
		}
		a.free = append(a.free, DayTotals{})
		t = &a.free[len(a.free)-1]
		a.Days[g] = t
	}
	in, out, cached, cost := r.Bounded()
	t.Requests++
	if r.Succeeded() {
		t.Succeeded++
	}
	if r.Failed() {
		t.Failed++
	}
	if r.FailedOver() {
		t.FailedOver++
	}
	t.Attempts += int64(r.Attempts)
	t.InputTokens += in
	t.OutputTokens += out
	t.CachedTokens += cached
	t.CostMicroUSD += cost
	if cost != 0 {
		for _, sc := range [...]ScopeID{{ScopeOrg, r.Org}, {ScopeTeam, r.Team}, {ScopeKey, r.KeyID}, {ScopeModel, r.PublicModel}} {
			if sc.ID != "" {
				a.Spend[sc] += cost
			}
		}
	}
	if s.NeedsRepair() {
		a.Repair = append(a.Repair, r.RequestID)
	}
}

// SortedDays returns the day groups in a fixed order (day, finished day,
// then the names), so that concurrent writers lock aggregate rows in the
// same order.
func (a *Aggregates) SortedDays() []DayGroup {
	gs := make([]DayGroup, 0, len(a.Days))
	for g := range a.Days {
		gs = append(gs, g)
	}
	slices.SortFunc(gs, func(x, y DayGroup) int {
		return cmp.Or(cmp.Compare(x.Day, y.Day), cmp.Compare(x.FinishedDay, y.FinishedDay),
			cmp.Compare(x.Org, y.Org), cmp.Compare(x.Team, y.Team), cmp.Compare(x.KeyID, y.KeyID),
			cmp.Compare(x.PublicModel, y.PublicModel), cmp.Compare(x.Deployment, y.Deployment))
	})
	return gs
}

// SortedSpend returns the spend scopes in a fixed order.
func (a *Aggregates) SortedSpend() []ScopeID {
	ss := make([]ScopeID, 0, len(a.Spend))
	for s := range a.Spend {
		ss = append(ss, s)
	}
	slices.SortFunc(ss, func(x, y ScopeID) int { return cmp.Or(cmp.Compare(x.Scope, y.Scope), cmp.Compare(x.ID, y.ID)) })
	return ss
}

// UsagePlan splits a usage query's time range into whole days, answered
// from the daily aggregates, and at most two partial stretches, answered
// from raw request rows. Bounds are stored micros.
type UsagePlan struct {
	// Aggregates: whether whole days are read, and their day buckets
	// [FromDay, ToDay); HasFromDay/HasToDay false means unbounded.
	Aggregates           bool
	HasFromDay, HasToDay bool
	FromDay, ToDay       int64
	// Raw are [lo, hi) stretches of started_at read from request rows.
	Raw []RawSpan
	// Days are whole day buckets added from the aggregates, from which
	// the Less stretches' request rows are subtracted: a partial day read
	// as its complement when that holds fewer rows (today up to now is
	// its whole aggregate minus the rows started after now: none).
	Days []int64
	Less []RawSpan
}

// RawSpan is a stretch of started_at [Lo, Hi) read from request rows.
type RawSpan struct{ Lo, Hi int64 }

// PlanUsage splits q's range (From, To and a "day" filter together) for
// the stores; q must be valid. rawFrom is the first stored micro whose raw
// rows are kept (math.MinInt64: nothing pruned): a stretch of raw rows
// needed before it is refused with a *PrunedError. now (stored micros)
// says where rows end, to read a partial day as its aggregate minus its
// complement when that reads fewer rows.
func PlanUsage(q *UsageQuery, rawFrom, now int64) (UsagePlan, error) {
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if !q.From.IsZero() {
		lo = q.From.UnixMicro()
	}
	if !q.To.IsZero() {
		hi = q.To.UnixMicro()
	}
	if v, ok := q.Filters[DimDay]; ok {
		d, err := ParseDay(v)
		if err != nil {
			return UsagePlan{}, err
		}
		lo, hi = max(lo, d.UnixMicro()), min(hi, d.UnixMicro()+MicrosPerDay)
	}
	var p UsagePlan
	// partial plans [a, b), within one day bucket from day 1 on or not.
	partial := func(a, b int64) {
		if a >= b {
			return
		}
		d := floorDiv(a, MicrosPerDay)
		d0, d1 := d*MicrosPerDay, (d+1)*MicrosPerDay
		if d >= 1 && b <= d1 {
			// Rows exist up to now only.
			direct := max(min(b, now)-a, 0)
			other := (a - d0) + max(min(d1, now)-min(b, now), 0)
			// Prefer what is not pruned, then what reads fewer rows.
			if d0 >= rawFrom && (other < direct || a < rawFrom) {
				p.Days = append(p.Days, d)
				if a > d0 {
					p.Less = append(p.Less, RawSpan{d0, a})
				}
				if b < d1 {
					p.Less = append(p.Less, RawSpan{b, d1})
				}
				return
			}
		}
		p.Raw = append(p.Raw, RawSpan{a, b})
	}
	if lo >= hi {
		p.Raw = []RawSpan{{lo, hi}} // empty: counts nothing, still one total row
		return p, nil
	}
	// Whole day buckets from day 1 on hold exactly their day (DayNumber).
	from, to := int64(1), int64(math.MaxInt64)
	p.HasFromDay, p.HasToDay = lo != math.MinInt64, hi != math.MaxInt64
	if p.HasFromDay {
		from = max(ceilDiv(lo, MicrosPerDay), 1)
	}
	if p.HasToDay {
		to = floorDiv(hi, MicrosPerDay)
	}
	switch {
	case from < to:
		p.Aggregates, p.FromDay, p.ToDay = true, from, to
		if p.HasFromDay {
			partial(lo, from*MicrosPerDay)
		}
		if p.HasToDay {
			partial(to*MicrosPerDay, hi)
		}
	case lo >= MicrosPerDay && from == to:
		p.HasFromDay, p.HasToDay = false, false
		partial(lo, from*MicrosPerDay) // across one midnight
		partial(from*MicrosPerDay, hi)
	case lo >= MicrosPerDay && from == to+1:
		p.HasFromDay, p.HasToDay = false, false
		partial(lo, hi) // within one day
	default:
		p.HasFromDay, p.HasToDay = false, false
		p.Raw = append(p.Raw, RawSpan{lo, hi}) // before day 1
	}
	for _, s := range append(p.Raw[:len(p.Raw):len(p.Raw)], p.Less...) {
		if s.Lo < rawFrom && s.Lo < s.Hi {
			return UsagePlan{}, &PrunedError{KeptFrom: time.UnixMicro(rawFrom).UTC()}
		}
	}
	return p, nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a > 0 {
		q++
	}
	return q
}

// Pruner is a store that prunes raw rows (both stores are).
type Pruner interface {
	// Prune deletes at most limit of the oldest request rows that started
	// before before (truncated to its UTC day), with their attempt and
	// reservation rows, in one short transaction, and returns how many
	// requests it deleted (0: nothing older is left). It first records
	// that raw rows before that day are no longer complete, so that usage
	// queries needing them are refused rather than answered short. Daily
	// aggregates and spend totals are never pruned.
	Prune(ctx context.Context, before time.Time, limit int) (int, error)
}
