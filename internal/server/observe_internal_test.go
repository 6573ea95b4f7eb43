package server

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/dialect/openaichat"
	"github.com/spillway-gw/spillway/internal/engine"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/metrics"
)

// Tracing off costs a request nothing: the hooks allocate nothing, and
// the failover and served counters, once their series exist, neither.
func TestObserveAllocatesNothing(t *testing.T) {
	s := &Server{opts: Options{Metrics: metrics.New(nil)}}
	w := httptest.NewRecorder()
	r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	now := time.Now()
	d1, d2 := &catalog.Deployment{ID: "primary"}, &catalog.Deployment{ID: "secondary"}
	p := &engine.Plan{Rungs: []engine.Rung{{Deployment: d1}, {Deployment: d2}}}
	res := &engine.Result{Served: 1, Attempts: []engine.Attempt{
		{Rung: 0, Deployment: "primary", Start: now, Duration: time.Millisecond, Err: &failure.Error{Class: failure.ProviderUnavailable}},
		{Rung: 1, Deployment: "secondary", Start: now.Add(time.Millisecond), Duration: time.Millisecond},
	}}
	c := &call{start: now, d: openaichat.New(), route: &catalog.ResolvedRoute{Public: "m"}}
	allocs := testing.AllocsPerRun(200, func() {
		s.startTrace(w, r, c)
		c.ran(p, res)
		s.observe(c, now)
	})
	if allocs != 0 || c.span != nil {
		t.Errorf("tracing off: %v allocations per request (span %v)", allocs, c.span)
	}
}
