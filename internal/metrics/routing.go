package metrics

import "github.com/prometheus/client_golang/prometheus"

// routing holds the routing decisions' counters.
type routing struct {
	exercise *prometheus.CounterVec
	dropped  *prometheus.CounterVec
}

func newRouting(reg *prometheus.Registry) routing {
	r := routing{
		exercise: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spillway_exercise_total", Help: "Requests sent to a secondary rung first to keep the failover path exercised, by route (public model) and deployment.",
		}, []string{"route", "deployment"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spillway_rungs_dropped_total", Help: "Rungs a request's plan dropped, by route (public model), deployment and the gate that dropped it (residency, tenant_denied, unsupported, max_output_exceeded, context_too_long, price_unknown, credential_missing, no_adapter, or a health reason).",
		}, []string{"route", "deployment", "reason"}),
	}
	reg.MustRegister(r.exercise, r.dropped)
	return r
}

// ObserveDropped counts one rung a plan dropped, with its reason.
func (m *Metrics) ObserveDropped(route, deployment, reason string) {
	m.routing.dropped.WithLabelValues(route, deployment, reason).Inc()
}

// ObserveExercise counts one request sent to a secondary rung first.
func (m *Metrics) ObserveExercise(route, deployment string) {
	m.routing.exercise.WithLabelValues(route, deployment).Inc()
}
