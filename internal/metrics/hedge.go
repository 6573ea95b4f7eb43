package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/spillway-gw/spillway/internal/engine"
)

func newHedges(reg *prometheus.Registry) *prometheus.CounterVec {
	h := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "spillway_hedges_total",
		Help: "Hedges fired (a route's hedge started the next rung alongside a slow first attempt), by exact model and outcome: won (the hedge served), lost (the first attempt served), failed (neither).",
	}, []string{"model", "outcome"})
	reg.MustRegister(h)
	return h
}

// ObserveHedge counts one hedge fired, by its outcome (an
// engine.HedgeObserver). The sum over outcomes is the hedges fired.
func (m *Metrics) ObserveHedge(p *engine.Plan, outcome engine.HedgeOutcome) {
	m.hedges.WithLabelValues(p.Model, string(outcome)).Inc()
}

var _ engine.HedgeObserver = (*Metrics)(nil)
