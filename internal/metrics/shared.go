package metrics

import "github.com/prometheus/client_golang/prometheus"

// SharedStats is the shared-state client's view (internal/redisstate).
type SharedStats struct {
	// Up: replicas share state now; false: each uses its local fallback.
	Up bool
	// Errors counts failed calls to the shared store; Fallbacks the calls
	// answered locally because it was down; Dropped the writes refused by
	// a full queue.
	Errors, Fallbacks, Dropped uint64
	// IdempotencyRefused counts the requests with an Idempotency-Key
	// refused (503 idempotency_unavailable) because their key could not be
	// claimed across replicas; IdempotencyLocal those run with the key
	// owned by one replica alone instead (idempotency_when_down: local).
	IdempotencyRefused, IdempotencyLocal uint64
}

// WatchShared exports the shared-state client's health, read at scrape
// time.
func (m *Metrics) WatchShared(stats func() SharedStats) {
	m.reg.MustRegister(&sharedCollector{stats: stats})
}

type sharedCollector struct{ stats func() SharedStats }

var (
	sharedUpDesc        = prometheus.NewDesc("spillway_shared_state_up", "1 while replicas share state through Redis; 0 while each replica uses its local fallbacks (health local, budgets per shared_state.budgets_when_down).", nil, nil)
	sharedErrorsDesc    = prometheus.NewDesc("spillway_shared_state_errors_total", "Calls to the shared state (Redis) that failed.", nil, nil)
	sharedFallbacksDesc = prometheus.NewDesc("spillway_shared_state_fallbacks_total", "Calls answered locally, without Redis, because it was down.", nil, nil)
	sharedDroppedDesc   = prometheus.NewDesc("spillway_shared_state_dropped_total", "Writes to the shared state dropped because its queue was full.", nil, nil)
	sharedIdemDesc      = prometheus.NewDesc("spillway_shared_state_idempotency_unavailable_total",
		"Requests with an Idempotency-Key whose key could not be claimed across replicas (Redis down or slower than shared_state.timeout), by action: refused (503 idempotency_unavailable, nothing run) or local (run with the key owned by this replica alone, shared_state.idempotency_when_down local).", []string{"action"}, nil)
)

func (c *sharedCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- sharedUpDesc
	ch <- sharedErrorsDesc
	ch <- sharedFallbacksDesc
	ch <- sharedDroppedDesc
	ch <- sharedIdemDesc
}

func (c *sharedCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	up := 0.0
	if s.Up {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(sharedUpDesc, prometheus.GaugeValue, up)
	ch <- prometheus.MustNewConstMetric(sharedErrorsDesc, prometheus.CounterValue, float64(s.Errors))
	ch <- prometheus.MustNewConstMetric(sharedFallbacksDesc, prometheus.CounterValue, float64(s.Fallbacks))
	ch <- prometheus.MustNewConstMetric(sharedDroppedDesc, prometheus.CounterValue, float64(s.Dropped))
	ch <- prometheus.MustNewConstMetric(sharedIdemDesc, prometheus.CounterValue, float64(s.IdempotencyRefused), "refused")
	ch <- prometheus.MustNewConstMetric(sharedIdemDesc, prometheus.CounterValue, float64(s.IdempotencyLocal), "local")
}
