package ledger

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestUsageQueryValidate(t *testing.T) {
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	bad := []UsageQuery{
		{GroupBy: []string{"prompt"}},
		{GroupBy: []string{""}},
		{GroupBy: []string{"Org"}},
		{GroupBy: []string{"day", "day"}},
		{Filters: map[string]string{"content": "x"}},
		{Filters: map[string]string{"day": ""}},
		{Filters: map[string]string{"day": "2026-02-29"}},
		{Filters: map[string]string{"day": "2026-03-01T00:00:00Z"}},
		{Filters: map[string]string{"day": " 2026-03-01"}},
		{From: at.Add(time.Nanosecond), To: at},
	}
	for _, q := range bad {
		if err := q.Validate(); !errors.Is(err, ErrInvalidQuery) {
			t.Errorf("Validate(%+v) = %v, want ErrInvalidQuery", q, err)
		}
	}
	long := UsageQuery{GroupBy: []string{strings.Repeat("x", 500)}}
	if err := long.Validate(); err == nil || len(err.Error()) > 120 {
		t.Errorf("Validate(long name) = %v: must fail without echoing the whole name", err)
	}
	good := []UsageQuery{
		{},
		{GroupBy: Dimensions(), Filters: map[string]string{"org": "", "team": "x'; --", "day": "2024-02-29"}},
		{From: at, To: at},
		{From: at},
		{To: at},
	}
	for _, q := range good {
		if err := q.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v", q, err)
		}
	}
}

func TestFailedOverRule(t *testing.T) {
	cases := []struct {
		depth, attempts int
		want            bool
	}{
		{-1, 0, false}, // refused: nothing dispatched
		{-1, 3, false}, // every rung failed: not served, so not failed over
		{0, 1, false},  // the primary served at once
		{0, 2, true},   // the primary served on a same-rung retry
		{1, 1, true},   // the primary was skipped (circuit open), the secondary served
		{1, 2, true},   // the primary failed, the secondary served
		{2, 3, true},
	}
	for _, c := range cases {
		r := Request{RouteDepth: c.depth, Attempts: c.attempts}
		if got := r.FailedOver(); got != c.want {
			t.Errorf("RouteDepth %d, Attempts %d: FailedOver = %v, want %v", c.depth, c.attempts, got, c.want)
		}
	}
}

func FuzzUsageQuery(f *testing.F) {
	f.Add("org,day", "day", "2026-03-01", int64(0), int64(0))
	f.Add("model", "key", "key_1", int64(1), int64(2))
	f.Add("prompt", "content", "x", int64(5), int64(1))
	f.Add("day,day", "day", "2026-13-01", int64(0), int64(0))
	f.Fuzz(func(t *testing.T, groups, name, value string, from, to int64) {
		q := UsageQuery{Filters: map[string]string{name: value}}
		if groups != "" {
			q.GroupBy = strings.Split(groups, ",")
		}
		if from != 0 {
			q.From = time.Unix(0, from)
		}
		if to != 0 {
			q.To = time.Unix(0, to)
		}
		err := q.Validate()
		if err != nil {
			if !errors.Is(err, ErrInvalidQuery) {
				t.Fatalf("error %v does not wrap ErrInvalidQuery", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, g := range q.GroupBy {
			if !IsDimension(g) || seen[g] {
				t.Fatalf("accepted group-by %q", g)
			}
			seen[g] = true
		}
		if !IsDimension(name) {
			t.Fatalf("accepted filter %q", name)
		}
		if name == DimDay {
			d, err := ParseDay(value)
			if err != nil || DayOf(d) != value || !d.Equal(d.Truncate(24*time.Hour)) {
				t.Fatalf("accepted day %q: %v %v", value, d, err)
			}
		}
	})
}
