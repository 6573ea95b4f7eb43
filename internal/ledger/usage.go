package ledger

import (
	"fmt"
	"time"
)

// Request statuses (Request.Status).
const (
	StatusOK          = "ok"
	StatusInterrupted = "interrupted"
	StatusFailed      = "failed"
	StatusCancelled   = "cancelled"
	StatusRefused     = "refused"
)

// Cost statuses (Request.CostStatus).
const (
	CostPriced   = "priced"
	CostUnpriced = "unpriced"
	CostNone     = "none"
)

// Usage dimensions: the only names a UsageQuery may group by or filter on.
const (
	DimOrg        = "org"
	DimTeam       = "team"
	DimKey        = "key"        // Request.KeyID
	DimModel      = "model"      // Request.PublicModel, the name the caller asked for
	DimDeployment = "deployment" // Request.Deployment, the rung that served ("" = none)
	DimDay        = "day"        // the UTC day of Request.StartedAt, as DayLayout
)

// DayLayout is how a "day" group is reported and a "day" filter written.
const DayLayout = "2006-01-02"

// Dimensions lists the usage dimensions in their canonical order.
func Dimensions() []string { return append([]string(nil), dimensions[:]...) }

// dimensions are the usage dimensions in their order of report; never
// modified (Dimensions hands out copies).
var dimensions = [...]string{DimOrg, DimTeam, DimKey, DimModel, DimDeployment, DimDay}

// IsDimension reports whether name may be grouped by or filtered on.
func IsDimension(name string) bool { return dimIndex(name) >= 0 }

// DayOf returns t's UTC day as DayLayout.
func DayOf(t time.Time) string { return t.UTC().Format(DayLayout) }

// ParseDay parses a "day" filter value: the start of that UTC day.
func ParseDay(s string) (time.Time, error) {
	d, err := time.Parse(DayLayout, s)
	if err != nil || d.Format(DayLayout) != s {
		return time.Time{}, fmt.Errorf("%w: day %q is not YYYY-MM-DD", ErrInvalidQuery, s)
	}
	return d, nil
}

// Validate reports the first problem with q: an unknown or repeated
// group-by name, an unknown filter name, a malformed day, or To before From.
// The error wraps ErrInvalidQuery and never echoes more than the offending
// name.
func (q *UsageQuery) Validate() error {
	var seen [6]bool
	for _, g := range q.GroupBy {
		i := dimIndex(g)
		if i < 0 {
			return fmt.Errorf("%w: unknown group-by %q", ErrInvalidQuery, clip(g))
		}
		if seen[i] {
			return fmt.Errorf("%w: group-by %q repeated", ErrInvalidQuery, g)
		}
		seen[i] = true
	}
	for name, v := range q.Filters {
		if !IsDimension(name) {
			return fmt.Errorf("%w: unknown filter %q", ErrInvalidQuery, clip(name))
		}
		if name == DimDay {
			if _, err := ParseDay(v); err != nil {
				return err
			}
		}
	}
	if !q.From.IsZero() && !q.To.IsZero() && q.To.Before(q.From) {
		return fmt.Errorf("%w: to is before from", ErrInvalidQuery)
	}
	return nil
}

func dimIndex(name string) int {
	for i, d := range dimensions {
		if d == name {
			return i
		}
	}
	return -1
}

// clip keeps error messages short when a caller sends a long name.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// Served reports whether some rung served r (RouteDepth >= 0), whatever
// happened afterwards.
func (r *Request) Served() bool { return r.RouteDepth >= 0 }

// Succeeded reports whether r counts as succeeded in usage: status ok.
func (r *Request) Succeeded() bool { return r.Status == StatusOK }

// Failed reports whether r counts as failed in usage: status failed (no rung
// served) or interrupted (a rung served and broke after commit). Cancelled
// (the caller left) and refused (a gate said no) are neither succeeded nor
// failed.
func (r *Request) Failed() bool {
	return r.Status == StatusFailed || r.Status == StatusInterrupted
}

// FailedOver reports whether r counts as failed over in usage: a rung served
// it (RouteDepth >= 0) and either it was not the pool's primary
// (RouteDepth > 0, whether the primary failed or was skipped by health) or
// the serving attempt was not the first dispatch (Attempts > 1, a same-rung
// retry included).
func (r *Request) FailedOver() bool {
	return r.RouteDepth >= 0 && (r.RouteDepth > 0 || r.Attempts > 1)
}
