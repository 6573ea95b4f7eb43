package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/spillway-gw/spillway/internal/quality"
)

// WatchQuality exports a quality monitor's aggregates and alerts, read at
// scrape time. Labels are configured ids, fixed signal and stop-reason
// names, and the field paths of request schemas (at most
// quality.MaxFieldsPerDeployment per deployment); never a value.
// Registering a second monitor on one registry is a no-op.
func (m *Metrics) WatchQuality(q *quality.Monitor) {
	_ = m.reg.Register(&qualityCollector{q: q})
}

type qualityCollector struct{ q *quality.Monitor }

var (
	qAnswersDesc = prometheus.NewDesc("spillway_quality_answers_total",
		"Served answers whose quality signals were measured, by deployment.", []string{"deployment"}, nil)
	qSignalAnswersDesc = prometheus.NewDesc("spillway_quality_signal_answers_total",
		"Answers a quality signal applied to (json_valid: structured requests; schema_valid: with a schema; tool_call: tools offered; tool_args_valid: with a call; others: all).", []string{"deployment", "signal"}, nil)
	qSignalEventsDesc = prometheus.NewDesc("spillway_quality_signal_events_total",
		"Answers with the signal's event (valid JSON, conforming, refusal, truncated, empty, a tool call, valid tool arguments).", []string{"deployment", "signal"}, nil)
	qFieldAnswersDesc = prometheus.NewDesc("spillway_quality_field_answers_total",
		"Structured answers that could hold a declared field path.", []string{"deployment", "field"}, nil)
	qFieldPopulatedDesc = prometheus.NewDesc("spillway_quality_field_populated_total",
		"Structured answers that populated a declared field path (present, not null or empty).", []string{"deployment", "field"}, nil)
	qFinishDesc = prometheus.NewDesc("spillway_quality_finish_total",
		"Answers by stop reason.", []string{"deployment", "reason"}, nil)
	qLengthDesc = prometheus.NewDesc("spillway_quality_output_bytes",
		"Answer length in bytes (text, refusal, tool arguments) over recent answers, by quantile.", []string{"deployment", "quantile"}, nil)
	qAlertsDesc = prometheus.NewDesc("spillway_quality_alerts_total",
		"Divergence alerts raised since start: a secondary answering differently from its pool's primary on a signal.", []string{"pool", "deployment", "signal"}, nil)
	qActiveDesc = prometheus.NewDesc("spillway_quality_alerts_active",
		"Divergence alerts not yet cleared, per pool secondary.", []string{"pool", "deployment"}, nil)
	qEjectedDesc = prometheus.NewDesc("spillway_quality_ejected",
		"1 while the secondary is ineligible in the pool for diverging answers (quality.eject), until cleared.", []string{"pool", "deployment"}, nil)
)

func (c *qualityCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{qAnswersDesc, qSignalAnswersDesc, qSignalEventsDesc, qFieldAnswersDesc,
		qFieldPopulatedDesc, qFinishDesc, qLengthDesc, qAlertsDesc, qActiveDesc, qEjectedDesc} {
		ch <- d
	}
}

func (c *qualityCollector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	rep := c.q.Report()
	for _, d := range rep.Deployments {
		counter(qAnswersDesc, d.Answers, d.Deployment)
		for _, s := range d.Signals {
			counter(qSignalAnswersDesc, s.Answers, d.Deployment, s.Signal)
			counter(qSignalEventsDesc, s.Events, d.Deployment, s.Signal)
		}
		for _, f := range d.Fields {
			counter(qFieldAnswersDesc, f.Answers, d.Deployment, f.Path)
			counter(qFieldPopulatedDesc, f.Populated, d.Deployment, f.Path)
		}
		for _, f := range d.FinishReasons {
			counter(qFinishDesc, f.Answers, d.Deployment, f.Reason)
		}
		for _, q := range []struct {
			name string
			v    int
		}{{"0.5", d.LengthBytes.P50}, {"0.9", d.LengthBytes.P90}, {"0.99", d.LengthBytes.P99}} {
			ch <- prometheus.MustNewConstMetric(qLengthDesc, prometheus.GaugeValue, float64(q.v), d.Deployment, q.name)
		}
	}
	for _, p := range rep.Pools {
		for _, sec := range p.Secondaries {
			ch <- prometheus.MustNewConstMetric(qActiveDesc, prometheus.GaugeValue, float64(sec.Alerts), p.Pool, sec.Deployment)
			ej := 0.0
			if sec.Ejected {
				ej = 1
			}
			ch <- prometheus.MustNewConstMetric(qEjectedDesc, prometheus.GaugeValue, ej, p.Pool, sec.Deployment)
		}
	}
	for _, a := range c.q.AlertCounts() {
		counter(qAlertsDesc, a.N, a.Pool, a.Deployment, a.Signal)
	}
}
