package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/spillway-gw/spillway/internal/engine"
	"github.com/spillway-gw/spillway/internal/route"
)

// incident holds the counters that answer an incident's first questions:
// where did traffic fail over from and to, and which deployment served
// each route's requests. Every label is a configured name (a route's
// public model, a deployment id): bounded by the config, never a caller's
// text.
type incident struct {
	failovers *prometheus.CounterVec
	served    *prometheus.CounterVec
}

func newIncident(reg *prometheus.Registry) incident {
	in := incident{
		failovers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spillway_failovers_total",
			Help: "Failovers by route (public model), from the deployment whose attempt failed to the one dispatched next (a same-rung retry and a hedge are not failovers).",
		}, []string{"route", "from", "to"}),
		served: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spillway_served_total",
			Help: "Requests served by route (public model) and the deployment whose answer reached the caller (a stream cut after it began included). Served share: rate of one deployment over the route's sum.",
		}, []string{"route", "deployment"}),
	}
	reg.MustRegister(in.failovers, in.served)
	return in
}

// ObserveResult counts one request's failovers and the deployment that
// served it, under its route's public model name.
func (m *Metrics) ObserveResult(route string, p *engine.Plan, res *engine.Result) {
	res.EachFailover(func(from, to *engine.Attempt) {
		m.incident.failovers.WithLabelValues(route, from.Deployment, to.Deployment).Inc()
	})
	if res.Served >= 0 && res.Served < len(p.Rungs) {
		m.incident.served.WithLabelValues(route, p.Rungs[res.Served].Deployment.ID).Inc()
	}
}

// WatchRungs exports each route's rungs and how many of them would be
// tried now, read from rungs at scrape time.
func (m *Metrics) WatchRungs(rungs func() []route.RungHealth) {
	m.reg.MustRegister(&rungsCollector{rungs: rungs})
}

type rungsCollector struct{ rungs func() []route.RungHealth }

var (
	rungsDesc = prometheus.NewDesc("spillway_route_rungs",
		"Deployments in each route's pool, by route (public model) and pool.", []string{"route", "pool"}, nil)
	healthyRungsDesc = prometheus.NewDesc("spillway_route_healthy_rungs",
		"Deployments of each route's pool a request would be sent to now (callable, priced, and not refused by health), by route and pool. 0 means the route is down.",
		[]string{"route", "pool"}, nil)
)

func (c *rungsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- rungsDesc
	ch <- healthyRungsDesc
}

func (c *rungsCollector) Collect(ch chan<- prometheus.Metric) {
	for _, rh := range c.rungs() {
		ch <- prometheus.MustNewConstMetric(rungsDesc, prometheus.GaugeValue, float64(rh.Rungs), rh.Route, rh.Pool)
		ch <- prometheus.MustNewConstMetric(healthyRungsDesc, prometheus.GaugeValue, float64(rh.Healthy), rh.Route, rh.Pool)
	}
}
