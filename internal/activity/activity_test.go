package activity

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/engine"
	"github.com/spillway-gw/spillway/internal/failure"
)

// clock is a fake clock the tests move by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// ok and bad are attempts on rung, dispatched one after the other: rung
// n starts at t0+2n s and runs a second.
func ok(dep string, rung int) engine.Attempt {
	return engine.Attempt{Rung: rung, Deployment: dep, Start: t0.Add(time.Duration(2*rung) * time.Second), Duration: time.Second}
}

func bad(dep string, rung int, class failure.Class, status int) engine.Attempt {
	a := ok(dep, rung)
	a.Err = &failure.Error{Class: class, Status: status}
	return a
}

func result(served int, as ...engine.Attempt) *engine.Result {
	return &engine.Result{Attempts: as, Served: served}
}

func TestRecord(t *testing.T) {
	for _, tc := range []struct {
		name      string
		res       *engine.Result
		counts    []DeploymentCount
		failovers []Failover
		trail     []string // deployment=verdict/status>served_by, newest first
	}{
		{name: "no result", res: nil, counts: []DeploymentCount{}, failovers: []Failover{}},
		{name: "no attempt (every rung skipped)", res: result(-1), counts: []DeploymentCount{}, failovers: []Failover{}},
		{name: "every rung failed: a failover, nobody served",
			res:       result(-1, bad("a", 0, failure.ProviderUnavailable, 503), bad("b", 1, failure.Throttled, 429)),
			counts:    []DeploymentCount{{"a", 0, 1}, {"b", 0, 1}},
			failovers: []Failover{{"r", "a", "b", 1}},
			trail:     []string{"b=throttled/429>", "a=provider_unavailable/503>"}},
		{name: "caller's own error: a failed attempt, no failover",
			res:       result(-1, bad("a", 0, failure.InvalidRequest, 400)),
			counts:    []DeploymentCount{{"a", 0, 1}},
			failovers: []Failover{},
			trail:     []string{"a=invalid_request/400>"}},
		{name: "a lost hedge and a caller who left count for nobody",
			res:       result(1, bad("a", 0, failure.HedgedLost, 0), ok("b", 1), bad("c", 2, failure.ClientCancelled, 0)),
			counts:    []DeploymentCount{{"b", 1, 0}},
			failovers: []Failover{}},
		{name: "a retried blip on the same rung is no failover",
			res:       result(0, engine.Attempt{Deployment: "a", Duration: time.Second, Err: &failure.Error{Class: failure.ProviderUnavailable}}, ok("a", 0)),
			counts:    []DeploymentCount{{"a", 1, 1}},
			failovers: []Failover{},
			trail:     []string{"a=provider_unavailable/0>a"}},
		{name: "a broken stream after commit: failed, nobody served",
			res:       result(0, bad("a", 0, failure.ProviderUnavailable, 0)),
			counts:    []DeploymentCount{{"a", 0, 1}},
			failovers: []Failover{},
			trail:     []string{"a=provider_unavailable/0>"}},
		{name: "each hop down the chain is a failover",
			res:       result(2, bad("a", 0, failure.ProviderUnavailable, 529), bad("b", 1, failure.ProviderAuthentication, 401), ok("c", 2)),
			counts:    []DeploymentCount{{"a", 0, 1}, {"b", 0, 1}, {"c", 1, 0}},
			failovers: []Failover{{"r", "a", "b", 1}, {"r", "b", "c", 1}},
			trail:     []string{"b=provider_authentication/401>c", "a=provider_unavailable/529>c"}},
		{name: "refusal failover is a failover",
			res:       result(1, bad("a", 0, failure.Refused, 200), ok("b", 1)),
			counts:    []DeploymentCount{{"a", 0, 1}, {"b", 1, 0}},
			failovers: []Failover{{"r", "a", "b", 1}},
			trail:     []string{"a=refused/200>b"}},
		{name: "a hedge that won the race is no failover",
			res: result(1, engine.Attempt{Rung: 1, Deployment: "b", Start: t0.Add(time.Second), Duration: time.Second},
				engine.Attempt{Rung: 0, Deployment: "a", Start: t0, Duration: 3 * time.Second, Err: &failure.Error{Class: failure.HedgedLost}}),
			counts:    []DeploymentCount{{"b", 1, 0}},
			failovers: []Failover{}},
		{name: "a plain success",
			res:       result(0, ok("a", 0)),
			counts:    []DeploymentCount{{"a", 1, 0}},
			failovers: []Failover{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &clock{now: t0}
			r := New(Options{Now: c.Now})
			r.Record("req1", "r", tc.res)
			tr := r.Traffic()
			if !reflect.DeepEqual(tr.Deployments, tc.counts) {
				t.Errorf("counts %+v, want %+v", tr.Deployments, tc.counts)
			}
			if !reflect.DeepEqual(tr.Failovers, tc.failovers) {
				t.Errorf("failovers %+v, want %+v", tr.Failovers, tc.failovers)
			}
			var got []string
			for _, f := range r.Failures(0).Failures {
				if f.RequestID != "req1" || f.Route != "r" {
					t.Errorf("failure %+v: wrong request or route", f)
				}
				if f.DurationMS != 1000 {
					t.Errorf("failure %+v: duration %d ms, want 1000", f, f.DurationMS)
				}
				got = append(got, fmt.Sprintf("%s=%s/%d>%s", f.Deployment, f.Verdict, f.HTTPStatus, f.ServedBy))
			}
			if !reflect.DeepEqual(got, tc.trail) {
				t.Errorf("trail %q, want %q", got, tc.trail)
			}
		})
	}
}

func TestBuckets(t *testing.T) {
	c := &clock{now: t0}
	r := New(Options{Now: c.Now, Bucket: 10 * time.Second, Buckets: 3})
	failover := result(1, bad("a", 0, failure.ProviderUnavailable, 503), ok("b", 1))
	r.Record("1", "r", failover)
	c.Advance(10 * time.Second)
	r.Record("2", "r", result(0, ok("a", 0)))
	r.Record("3", "r", result(0, ok("a", 0)))

	tr := r.Traffic()
	if tr.BucketSeconds != 10 || len(tr.Buckets) != 3 {
		t.Fatalf("%d buckets of %d s, want 3 of 10", len(tr.Buckets), tr.BucketSeconds)
	}
	if !tr.Buckets[2].Start.Equal(t0.Add(10*time.Second)) || !tr.Buckets[0].Start.Equal(t0.Add(-10*time.Second)) {
		t.Errorf("bucket starts %v .. %v", tr.Buckets[0].Start, tr.Buckets[2].Start)
	}
	if len(tr.Buckets[0].Deployments) != 0 {
		t.Errorf("the bucket before anything happened counts %+v", tr.Buckets[0].Deployments)
	}
	if want := []Failover{{"r", "a", "b", 1}}; !reflect.DeepEqual(tr.Buckets[1].Failovers, want) {
		t.Errorf("first bucket's failovers %+v, want %+v", tr.Buckets[1].Failovers, want)
	}
	if want := []DeploymentCount{{"a", 2, 0}}; !reflect.DeepEqual(tr.Buckets[2].Deployments, want) {
		t.Errorf("second bucket %+v, want %+v", tr.Buckets[2].Deployments, want)
	}
	if want := []DeploymentCount{{"a", 2, 1}, {"b", 1, 0}}; !reflect.DeepEqual(tr.Deployments, want) {
		t.Errorf("window totals %+v, want %+v", tr.Deployments, want)
	}

	// A clock stepped back past the window drops the record's counts
	// (the trail still has it); a later bucket that reuses a ring slot
	// starts empty.
	c.Advance(-time.Minute)
	r.Record("4", "r", failover)
	c.Advance(time.Minute + 20*time.Second) // the first bucket's slot again
	tr = r.Traffic()
	if want := []DeploymentCount{{"a", 2, 0}}; !reflect.DeepEqual(tr.Deployments, want) {
		t.Errorf("after the window moved: %+v, want %+v", tr.Deployments, want)
	}
	if len(tr.Failovers) != 0 {
		t.Errorf("a failover outside the window is still counted: %+v", tr.Failovers)
	}
	if n := r.Failures(0).Total; n != 2 {
		t.Errorf("trail total %d, want 2", n)
	}
}

func TestBounds(t *testing.T) {
	c := &clock{now: t0}
	r := New(Options{Now: c.Now, Trail: 3, MaxDeployments: 2, MaxFailovers: 1})
	for i := range 5 {
		dep := fmt.Sprintf("d%d", i)
		r.Record(fmt.Sprint(i), "r", result(1, bad(dep, 0, failure.ProviderUnavailable, 503), ok("z", 1)))
	}
	tr := r.Traffic()
	// d0 and z fill the bucket's two places; d1..d4 overflow, and four of
	// the five failover pairs.
	if want := []DeploymentCount{{"d0", 0, 1}, {"z", 5, 0}}; !reflect.DeepEqual(tr.Deployments, want) {
		t.Errorf("counts %+v, want %+v", tr.Deployments, want)
	}
	if tr.Overflow != 4+4 {
		t.Errorf("overflow %d, want 8", tr.Overflow)
	}
	fs := r.Failures(0)
	if fs.Capacity != 3 || fs.Total != 5 || len(fs.Failures) != 3 {
		t.Fatalf("trail %+v: want 3 of 5 kept", fs)
	}
	for i, want := range []string{"d4", "d3", "d2"} {
		if fs.Failures[i].Deployment != want {
			t.Errorf("trail[%d] = %s, want %s (newest first)", i, fs.Failures[i].Deployment, want)
		}
	}
	if got := r.Failures(1).Failures; len(got) != 1 || got[0].Deployment != "d4" {
		t.Errorf("limit 1: %+v", got)
	}
}

// Record on a warm recorder allocates nothing: it runs once per request.
func TestRecordAllocs(t *testing.T) {
	r := New(Options{})
	res := result(1, bad("a", 0, failure.ProviderUnavailable, 503), ok("b", 1))
	r.Record("1", "r", res)
	if n := testing.AllocsPerRun(100, func() { r.Record("1", "r", res) }); n != 0 {
		t.Errorf("Record allocates %v times per request", n)
	}
}

func TestConcurrent(t *testing.T) {
	r := New(Options{Trail: 10})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 200 {
				r.Record(fmt.Sprint(i, j), "r", result(1, bad("a", 0, failure.ProviderUnavailable, 503), ok("b", 1)))
				if j%50 == 0 {
					_ = r.Traffic()
					_ = r.Failures(5)
				}
			}
		})
	}
	wg.Wait()
	var served int64
	for _, d := range r.Traffic().Deployments {
		served += d.Served
	}
	// Everything landed within the window (a real clock, 1,600 records).
	if served != 1600 || r.Failures(0).Total != 1600 {
		t.Errorf("served %d, failures %d; want 1600 each", served, r.Failures(0).Total)
	}
}

// BenchmarkRecord is the cost settle pays per request: a failover (two
// attempts, one failed) on a warm recorder, from all cores at once.
func BenchmarkRecord(b *testing.B) {
	r := New(Options{})
	res := result(1, bad("a", 0, failure.ProviderUnavailable, 503), ok("b", 1))
	r.Record("1", "r", res)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r.Record("1", "r", res)
		}
	})
}
