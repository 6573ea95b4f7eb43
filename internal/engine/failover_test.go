package engine

import (
	"slices"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/failure"
)

func TestEachFailover(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(dep string, startMS, durMS int, class failure.Class) Attempt {
		a := Attempt{Deployment: dep, Start: t0.Add(time.Duration(startMS) * time.Millisecond), Duration: time.Duration(durMS) * time.Millisecond}
		if class != "" {
			a.Err = &failure.Error{Class: class}
		}
		return a
	}
	const (
		down    = failure.ProviderUnavailable
		lost    = failure.HedgedLost
		refused = failure.Refused
	)
	tests := []struct {
		name     string
		attempts []Attempt
		want     []string
	}{
		{"served first", []Attempt{at("a", 0, 10, "")}, nil},
		{"no attempt", nil, nil},
		{"one failover", []Attempt{at("a", 0, 10, down), at("b", 10, 10, "")}, []string{"a>b"}},
		{"throttled moves on", []Attempt{at("a", 0, 10, failure.Throttled), at("b", 11, 10, "")}, []string{"a>b"}},
		{"two failovers", []Attempt{at("a", 0, 10, down), at("b", 10, 10, failure.ProviderAuthentication), at("c", 20, 5, "")}, []string{"a>b", "b>c"}},
		{"same-rung retry is not one", []Attempt{at("a", 0, 1, down), at("a", 1, 10, "")}, nil},
		{"retry, then a failover", []Attempt{at("a", 0, 1, down), at("a", 1, 5, down), at("b", 6, 10, "")}, []string{"a>b"}},
		{"a caller's error stops", []Attempt{at("a", 0, 10, failure.InvalidRequest)}, nil},
		{"the caller left", []Attempt{at("a", 0, 10, failure.ClientCancelled), at("b", 10, 10, "")}, nil},
		{"refusal failover", []Attempt{at("a", 0, 10, refused), at("b", 10, 10, "")}, []string{"a>b"}},
		// A race is recorded as it finishes: the winner first.
		{"hedge won", []Attempt{at("b", 50, 60, ""), at("a", 0, 115, lost)}, nil},
		{"hedge lost", []Attempt{at("a", 0, 80, ""), at("b", 50, 31, lost)}, nil},
		{"primary failed during the race", []Attempt{at("a", 0, 70, down), at("b", 50, 60, "")}, nil},
		{"race failed, then the next rung", []Attempt{at("a", 0, 100, down), at("b", 50, 70, down), at("c", 120, 10, "")}, []string{"b>c"}},
		{"equal start times keep record order", []Attempt{at("a", 0, 0, down), at("b", 0, 0, down), at("c", 0, 0, "")}, []string{"a>b", "b>c"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			(&Result{Attempts: tc.attempts}).EachFailover(func(from, to *Attempt) { got = append(got, from.Deployment+">"+to.Deployment) })
			if !slices.Equal(got, tc.want) {
				t.Errorf("failovers %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEachFailoverAllocatesNothing(t *testing.T) {
	now := time.Now()
	res := &Result{Attempts: []Attempt{
		{Deployment: "a", Start: now, Duration: time.Millisecond, Err: &failure.Error{Class: failure.ProviderUnavailable}},
		{Deployment: "b", Start: now.Add(time.Millisecond), Duration: time.Millisecond},
	}}
	n := 0
	if allocs := testing.AllocsPerRun(100, func() { res.EachFailover(func(_, _ *Attempt) { n++ }) }); allocs != 0 {
		t.Errorf("%v allocations per call", allocs)
	}
	if n == 0 {
		t.Error("no failover seen")
	}
}
