package metrics

import "github.com/prometheus/client_golang/prometheus"

// routing holds the routing decisions' counters.
type routing struct {
	exercise *prometheus.CounterVec
}

func newRouting(reg *prometheus.Registry) routing {
	r := routing{
		exercise: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spillway_exercise_total", Help: "Requests sent to a secondary rung first to keep the failover path exercised, by route (public model) and deployment.",
		}, []string{"route", "deployment"}),
	}
	reg.MustRegister(r.exercise)
	return r
}

// ObserveExercise counts one request sent to a secondary rung first.
func (m *Metrics) ObserveExercise(route, deployment string) {
	m.routing.exercise.WithLabelValues(route, deployment).Inc()
}
