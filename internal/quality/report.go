package quality

import (
	"cmp"
	"slices"
)

// Report is the body of GET /v1/admin/quality: every deployment's
// signals, every pool's comparisons, and the active alerts. Its shape is
// stable (the dashboard reads it): lists of objects, snake_case keys, a
// rate always with the count it is over.
type Report struct {
	// Scope is "replica": the figures and alerts are this process's own.
	Scope       string             `json:"scope"`
	Deployments []DeploymentReport `json:"deployments"`
	Pools       []PoolReport       `json:"pools"`
	Alerts      []Alert            `json:"alerts"`
}

// DeploymentReport is one deployment's aggregates since start.
type DeploymentReport struct {
	Deployment string `json:"deployment"`
	Answers    int64  `json:"answers"`
	// Signals are the fixed signals but long: answers is how many
	// answers each applied to, events how many had it.
	Signals []SignalReport `json:"signals"`
	// Fields are the declared field paths seen in structured answers.
	Fields        []FieldReport `json:"fields"`
	FieldsDropped int64         `json:"fields_dropped"`
	// Unmeasured counts structured answers too long to parse.
	Unmeasured    int64          `json:"unmeasured"`
	FinishReasons []FinishReport `json:"finish_reasons"`
	LengthBytes   LengthReport   `json:"length_bytes"`
}

// SignalReport is one signal's rate.
type SignalReport struct {
	Signal  string  `json:"signal"`
	Answers int64   `json:"answers"`
	Events  int64   `json:"events"`
	Rate    float64 `json:"rate"`
}

// FieldReport is one field path's population rate.
type FieldReport struct {
	Path      string  `json:"path"`
	Answers   int64   `json:"answers"`
	Populated int64   `json:"populated"`
	Rate      float64 `json:"rate"`
}

// FinishReport counts one stop reason.
type FinishReport struct {
	Reason  string  `json:"reason"`
	Answers int64   `json:"answers"`
	Rate    float64 `json:"rate"`
}

// LengthReport is the answer length distribution (recent answers), each
// quantile a bucket's upper bound.
type LengthReport struct {
	P50 int `json:"p50"`
	P90 int `json:"p90"`
	P99 int `json:"p99"`
}

// PoolReport is one pool's detection settings and comparisons.
type PoolReport struct {
	Pool        string       `json:"pool"`
	Primary     string       `json:"primary"`
	FalseAlarm  float64      `json:"false_alarm"`
	Horizon     int          `json:"horizon"`
	Shift       float64      `json:"shift"`
	Eject       bool         `json:"eject"`
	Secondaries []PairReport `json:"secondaries"`
}

// PairReport is one secondary's comparison with the primary.
type PairReport struct {
	Deployment string `json:"deployment"`
	// AnswersTested counts the answers its tests read since the last
	// clear.
	AnswersTested int64 `json:"answers_tested"`
	Alerts        int   `json:"alerts"`
	Ejected       bool  `json:"ejected"`
}

// AlertCount is the number of alerts raised since start for one pool,
// deployment and signal (the metric spillway_quality_alerts_total).
type AlertCount struct {
	Pool, Deployment, Signal string
	N                        int64
}

// Report copies the Monitor's state.
func (m *Monitor) Report() Report {
	m.mu.Lock()
	defer m.mu.Unlock()
	rep := Report{Scope: "replica", Deployments: []DeploymentReport{}, Pools: []PoolReport{}, Alerts: []Alert{}}
	for id, d := range m.deps {
		rep.Deployments = append(rep.Deployments, d.report(id))
	}
	slices.SortFunc(rep.Deployments, func(a, b DeploymentReport) int { return cmp.Compare(a.Deployment, b.Deployment) })
	for i := range m.pools {
		pc := &m.pools[i]
		pr := PoolReport{Pool: pc.id, Primary: pc.primary, FalseAlarm: pc.params.FalseAlarm, Horizon: pc.params.Horizon,
			Shift: pc.params.Shift, Eject: pc.eject, Secondaries: []PairReport{}}
		for _, dep := range pc.deps[1:] {
			p := m.pairs[pairKey{pc.id, dep}]
			if p == nil {
				continue
			}
			pr.Secondaries = append(pr.Secondaries, PairReport{Deployment: dep, AnswersTested: p.tested, Alerts: len(p.alerts), Ejected: p.ejected && pc.eject})
			rep.Alerts = append(rep.Alerts, p.alerts...)
		}
		rep.Pools = append(rep.Pools, pr)
	}
	return rep
}

// AlertCounts lists the alerts raised since start.
func (m *Monitor) AlertCounts() []AlertCount {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]AlertCount, 0, len(m.fired))
	for k, n := range m.fired {
		out = append(out, AlertCount{Pool: k.pool, Deployment: k.dep, Signal: k.signal, N: n})
	}
	return out
}

func (d *depStats) report(id string) DeploymentReport {
	r := DeploymentReport{Deployment: id, Answers: d.answers, Signals: make([]SignalReport, 0, SigLong),
		Fields: make([]FieldReport, 0, len(d.fields)), FieldsDropped: d.fieldsDropped, Unmeasured: d.unmeasured,
		FinishReasons: make([]FinishReport, 0, len(d.finish))}
	for i := range SigLong {
		r.Signals = append(r.Signals, SignalReport{Signal: signalNames[i], Answers: d.n[i], Events: d.x[i], Rate: rate(d.x[i], d.n[i])})
	}
	for _, f := range d.fields {
		r.Fields = append(r.Fields, FieldReport{Path: f.path, Answers: f.n, Populated: f.x, Rate: rate(f.x, f.n)})
	}
	for _, f := range d.finish {
		r.FinishReasons = append(r.FinishReasons, FinishReport{Reason: f.reason, Answers: f.n, Rate: rate(f.n, d.answers)})
	}
	r.LengthBytes = LengthReport{P50: d.lengths.Quantile(0.5), P90: d.lengths.Quantile(0.9), P99: d.lengths.Quantile(0.99)}
	return r
}

func rate(x, n int64) float64 {
	if n == 0 {
		return 0
	}
	return float64(x) / float64(n)
}
