// Package metrics exposes the gateway's Prometheus metrics: requests by
// dialect, model and outcome, attempts by deployment and verdict, latency,
// spend, and each deployment's health. Labels are bounded sets (configured
// names and fixed codes); nothing here ever carries content.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/engine"
	"github.com/spillway-gw/spillway/internal/health"
	"github.com/spillway-gw/spillway/internal/ledger"
)

// Metrics holds the collectors of one gateway.
type Metrics struct {
	reg        *prometheus.Registry
	requests   *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	attempts   *prometheus.CounterVec
	firstToken *prometheus.HistogramVec
	cost       *prometheus.CounterVec
	routing    routing
	hedges     *prometheus.CounterVec
	incident   incident
}

var latencyBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}

// New registers the gateway's metrics; health, when not nil, is read at
// scrape time for per-deployment state.
func New(h *health.Tracker) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spillway_requests_total", Help: "Customer requests by caller dialect, public model and outcome.",
		}, []string{"dialect", "model", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "spillway_request_duration_seconds", Help: "Customer request duration, first byte in to last byte out.", Buckets: latencyBuckets,
		}, []string{"dialect", "stream"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spillway_attempts_total", Help: "Physical attempts by deployment and verdict (ok or the failure class).",
		}, []string{"deployment", "verdict"}),
		firstToken: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "spillway_first_token_seconds", Help: "Time from dispatch to the first token, per deployment, for served attempts.", Buckets: latencyBuckets,
		}, []string{"deployment"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spillway_cost_micro_usd_total", Help: "Settled spend in micro-USD by serving deployment.",
		}, []string{"deployment"}),
	}
	m.reg.MustRegister(m.requests, m.duration, m.attempts, m.firstToken, m.cost,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.routing = newRouting(m.reg)
	m.hedges = newHedges(m.reg)
	m.incident = newIncident(m.reg)
	if h != nil {
		m.reg.MustRegister(&healthCollector{h: h})
	}
	return m
}

// WatchLedger exports the ledger writer's counters, read at scrape time:
// how much waits to be written, how the group commits batch, how long a
// response's final byte waits for its settlement, and anything lost.
func (m *Metrics) WatchLedger(stats func() ledger.WriterStats) {
	m.reg.MustRegister(&ledgerCollector{stats: stats})
}

// Handler serves the metrics in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// ObserveAttempt counts one finished attempt (an engine.Observer).
func (m *Metrics) ObserveAttempt(d *catalog.Deployment, a *engine.Attempt) {
	m.attempts.WithLabelValues(d.ID, a.Outcome()).Inc()
	if a.Err == nil && a.FirstToken > 0 {
		m.firstToken.WithLabelValues(d.ID).Observe(a.FirstToken.Seconds())
	}
}

// ObserveRequest counts one finished customer request.
func (m *Metrics) ObserveRequest(dialect, model, outcome string, stream bool, d time.Duration, deployment string, costMicro int64) {
	m.requests.WithLabelValues(dialect, model, outcome).Inc()
	m.duration.WithLabelValues(dialect, strconv.FormatBool(stream)).Observe(d.Seconds())
	if deployment != "" && costMicro > 0 {
		m.cost.WithLabelValues(deployment).Add(float64(costMicro))
	}
}

// healthCollector reports each deployment's health at scrape time.
type healthCollector struct{ h *health.Tracker }

var (
	healthyDesc = prometheus.NewDesc("spillway_deployment_healthy", "1 when the deployment would be tried now, else 0.", []string{"deployment", "state"}, nil)
	errRateDesc = prometheus.NewDesc("spillway_deployment_error_rate", "Rolling error rate over the health window.", []string{"deployment"}, nil)
)

func (c *healthCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- healthyDesc
	ch <- errRateDesc
}

func (c *healthCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.h.Statuses() {
		v := 0.0
		if s.Healthy {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(healthyDesc, prometheus.GaugeValue, v, s.Deployment, string(s.State))
		ch <- prometheus.MustNewConstMetric(errRateDesc, prometheus.GaugeValue, s.ErrorRate, s.Deployment)
	}
}

type ledgerCollector struct{ stats func() ledger.WriterStats }

var (
	ledgerCounters = []struct {
		desc *prometheus.Desc
		get  func(*ledger.WriterStats) int64
	}{
		{prometheus.NewDesc("spillway_ledger_batches_total", "Group commits (journal appends, or store transactions without a journal).", nil, nil), func(s *ledger.WriterStats) int64 { return s.Batches }},
		{prometheus.NewDesc("spillway_ledger_reservations_total", "Reservations committed.", nil, nil), func(s *ledger.WriterStats) int64 { return s.Reservations }},
		{prometheus.NewDesc("spillway_ledger_settlements_total", "Settlements committed.", nil, nil), func(s *ledger.WriterStats) int64 { return s.Settlements }},
		{prometheus.NewDesc("spillway_ledger_retries_total", "Failed store writes that were retried.", nil, nil), func(s *ledger.WriterStats) int64 { return s.Retries }},
		{prometheus.NewDesc("spillway_ledger_lost_total", "Ledger items whose write finally failed: any value above 0 needs an operator.", nil, nil), func(s *ledger.WriterStats) int64 { return s.Lost }},
		{prometheus.NewDesc("spillway_ledger_journal_failures_total", "Group commits whose journal append failed (their answers were withheld, uncharged).", nil, nil), func(s *ledger.WriterStats) int64 { return s.JournalFailures }},
		{prometheus.NewDesc("spillway_ledger_ingests_total", "Journal ingests into the store.", nil, nil), func(s *ledger.WriterStats) int64 { return s.Ingests }},
		{prometheus.NewDesc("spillway_ledger_ingested_total", "Journal records ingested into the store.", nil, nil), func(s *ledger.WriterStats) int64 { return s.Ingested }},
	}
	ledgerQueuedDesc  = prometheus.NewDesc("spillway_ledger_queued", "Items waiting for the ledger writer.", nil, nil)
	ledgerPendingDesc = prometheus.NewDesc("spillway_ledger_pending", "Journal records not yet in the store.", nil, nil)
	ledgerAvailDesc   = prometheus.NewDesc("spillway_ledger_available", "1 while the ledger can make rows durable; 0 while billable requests are refused (503 ledger_unavailable), with the reason label saying why.", []string{"reason"}, nil)
	ledgerLagDesc     = prometheus.NewDesc("spillway_ledger_lag_seconds", "Age of the oldest ledger record accepted and not yet in the store (queued, being committed, or in the journal awaiting ingestion); 0 when the store has everything. Grows while the store is down or slower than the traffic.", nil, nil)
	ledgerWaitDesc    = prometheus.NewDesc("spillway_ledger_settle_wait_seconds", "How long a response's final byte waited for its settlement to be committed (approximate quantile).", []string{"quantile"}, nil)
)

func (c *ledgerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, lc := range ledgerCounters {
		ch <- lc.desc
	}
	ch <- ledgerQueuedDesc
	ch <- ledgerPendingDesc
	ch <- ledgerWaitDesc
	ch <- ledgerAvailDesc
	ch <- ledgerLagDesc
}

func (c *ledgerCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	for _, lc := range ledgerCounters {
		ch <- prometheus.MustNewConstMetric(lc.desc, prometheus.CounterValue, float64(lc.get(&s)))
	}
	ch <- prometheus.MustNewConstMetric(ledgerQueuedDesc, prometheus.GaugeValue, float64(s.Queued))
	ch <- prometheus.MustNewConstMetric(ledgerPendingDesc, prometheus.GaugeValue, float64(s.Pending))
	ch <- prometheus.MustNewConstMetric(ledgerLagDesc, prometheus.GaugeValue, s.Lag.Seconds())
	ch <- prometheus.MustNewConstMetric(ledgerWaitDesc, prometheus.GaugeValue, s.SettleP50.Seconds(), "0.5")
	ch <- prometheus.MustNewConstMetric(ledgerWaitDesc, prometheus.GaugeValue, s.SettleP99.Seconds(), "0.99")
	avail := 1.0
	if s.Unavailable != "" {
		avail = 0
	}
	ch <- prometheus.MustNewConstMetric(ledgerAvailDesc, prometheus.GaugeValue, avail, s.Unavailable)
}
