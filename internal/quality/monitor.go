package quality

import (
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spillway-gw/spillway/internal/catalog"
)

// Signal is one of the fixed, per-answer Bernoulli signals a deployment is
// measured and compared on. Field population is the other kind: one
// signal per declared field path.
type Signal uint8

const (
	SigJSONValid Signal = iota
	SigSchemaValid
	SigRefusal
	SigTruncated
	SigEmpty
	SigToolCall
	SigToolArgsValid
	// SigLong: the answer is longer than the pool primary's median. It is
	// tested, not reported per deployment (length_bytes says more).
	SigLong
	numFixed
)

// SigField names the field-population signal in alerts and metrics.
const SigField = "field_populated"

var signalNames = [numFixed]string{"json_valid", "schema_valid", "refusal", "truncated", "empty", "tool_call", "tool_args_valid", "long"}

func (s Signal) String() string { return signalNames[s] }

// Bounds of what a Monitor keeps.
const (
	// MaxFieldsPerDeployment bounds the field paths tracked per
	// deployment (the first seen are kept; later ones are counted in
	// fields_dropped).
	MaxFieldsPerDeployment = 24
	// testsPerPair is how many one-sided tests one secondary may run: the
	// Bonferroni count in the threshold, fixed so that it does not move
	// as fields appear.
	testsPerPair = 2 * (int(numFixed) + MaxFieldsPerDeployment)
	// maxFinishReasons bounds the distinct stop reasons counted per
	// deployment; others count as "other".
	maxFinishReasons = 12
)

// Monitor measures each deployment's answers and compares each secondary
// of a pool with the pool's primary. Its state is in this process only:
// with several replicas, each measures and alerts on its own traffic.
// Safe for concurrent use.
type Monitor struct {
	log *slog.Logger
	now func() time.Time
	// schemas keeps compiled request schemas for Extract.
	schemas *schemaCache

	mu   sync.Mutex
	snap *catalog.Snapshot
	deps map[string]*depStats
	// pairs are the (pool, secondary) comparisons; bySecondary indexes
	// them by the secondary's id.
	pairs       map[pairKey]*pair
	bySecondary map[string][]*pair
	pools       []poolConf
	// fired counts alerts raised since start, by pool, deployment and
	// signal (the metric spillway_quality_alerts_total).
	fired map[alertKey]int64

	// ejected is the set of (pool, deployment) made ineligible, replaced
	// whole on change: planning reads it without a lock.
	ejected atomic.Pointer[map[pairKey]struct{}]
}

type pairKey struct{ pool, dep string }

type alertKey struct{ pool, dep, signal string }

type poolConf struct {
	id, primary string
	deps        []string
	params      Params
	eject       bool
}

// depStats is one deployment's aggregates: counts only.
type depStats struct {
	answers int64
	// n, x: answers the signal applied to, and those with the event.
	n, x [numFixed]int64
	// base: the same, decayed, for use as a primary's baseline.
	base          [numFixed]Baseline
	fields        []fieldStats
	fieldsDropped int64
	unmeasured    int64
	finish        []finishCount
	lengths       Lengths
}

type fieldStats struct {
	path string
	n, x int64
	base Baseline
}

type finishCount struct {
	reason string
	n      int64
}

// pair compares one secondary with its pool's primary.
type pair struct {
	conf   *poolConf
	dep    string
	h      float64
	fixed  [numFixed]CUSUM
	fields map[string]*CUSUM
	tested int64
	// alerts are the active alerts, one per signal (and field) at most.
	alerts  []Alert
	ejected bool
}

// Alert is one deployment found diverging from its pool's primary on one
// signal. It stays until an operator clears it.
type Alert struct {
	Pool       string `json:"pool"`
	Deployment string `json:"deployment"`
	Primary    string `json:"primary"`
	// Signal is a signal name (json_valid, ..., long) or field_populated
	// with Field the path.
	Signal string `json:"signal"`
	Field  string `json:"field,omitempty"`
	// Direction is "lower" or "higher": the deployment's rate against
	// the primary's.
	Direction      string  `json:"direction"`
	PrimaryRate    float64 `json:"primary_rate"`
	DeploymentRate float64 `json:"deployment_rate"`
	// Answers is how many of the deployment's answers the test had read
	// when it fired.
	Answers int64     `json:"answers"`
	Since   time.Time `json:"since"`
	// Ejected: the pool's quality.eject made the deployment ineligible.
	Ejected bool `json:"ejected"`
}

// NewMonitor returns an empty Monitor logging alerts to log (nil: none)
// and reading the time from now (nil: time.Now).
func NewMonitor(log *slog.Logger, now func() time.Time) *Monitor {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if now == nil {
		now = time.Now
	}
	m := &Monitor{log: log, now: now, schemas: newSchemaCache(), deps: map[string]*depStats{}, pairs: map[pairKey]*pair{},
		bySecondary: map[string][]*pair{}, fired: map[alertKey]int64{}}
	m.ejected.Store(&map[pairKey]struct{}{})
	return m
}

// Ejected reports whether the deployment is ineligible in the pool until
// an operator clears it (route.Quality). It reads without a lock and
// allocates nothing.
func (m *Monitor) Ejected(pool, deployment string) bool {
	set := *m.ejected.Load()
	if len(set) == 0 {
		return false
	}
	_, ok := set[pairKey{pool, deployment}]
	return ok
}

// Observe counts one answer served by deployment under the snapshot's
// pools, and steps every test comparing it with a primary.
func (m *Monitor) Observe(snap *catalog.Snapshot, deployment string, s *Sample) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if snap != nil && snap != m.snap {
		m.configure(snap)
	}
	d := m.deps[deployment]
	if d == nil {
		if snap == nil {
			return // no config seen yet: no deployment is known
		}
		if _, known := snap.Deployment(deployment); !known {
			return // not a configured deployment: nothing is kept for it
		}
		d = &depStats{}
		m.deps[deployment] = d
	}
	for _, p := range m.bySecondary[deployment] {
		m.step(p, s)
	}
	d.add(s)
}

// events lists each fixed signal's applicability and event in s.
func events(s *Sample) (applies, event [numFixed]bool) {
	applies[SigJSONValid], event[SigJSONValid] = s.Structured && s.Measured, s.JSONValid
	applies[SigSchemaValid], event[SigSchemaValid] = s.Structured && s.Measured && s.Schema, s.SchemaValid
	applies[SigRefusal], event[SigRefusal] = true, s.Refusal
	applies[SigTruncated], event[SigTruncated] = true, s.Truncated
	applies[SigEmpty], event[SigEmpty] = true, s.Empty
	applies[SigToolCall], event[SigToolCall] = s.ToolsOffered, s.ToolCall
	applies[SigToolArgsValid], event[SigToolArgsValid] = s.ToolArgsChecked, s.ToolArgsValid
	return applies, event
}

func (d *depStats) add(s *Sample) {
	d.answers++
	applies, event := events(s)
	for i := range SigLong {
		if applies[i] {
			d.n[i]++
			d.base[i].Add(event[i])
			if event[i] {
				d.x[i]++
			}
		}
	}
	if s.Structured && !s.Measured {
		d.unmeasured++
	}
	for _, f := range s.Fields {
		fs := d.field(f.Path, true)
		if fs == nil {
			continue
		}
		fs.n++
		fs.base.Add(f.Populated)
		if f.Populated {
			fs.x++
		}
	}
	d.lengths.Add(s.Length)
	d.countFinish(string(s.Stop))
}

// field finds a tracked path, adding it when add and there is room.
func (d *depStats) field(path string, add bool) *fieldStats {
	for i := range d.fields {
		if d.fields[i].path == path {
			return &d.fields[i]
		}
	}
	if !add {
		return nil
	}
	if len(d.fields) >= MaxFieldsPerDeployment {
		d.fieldsDropped++
		return nil
	}
	d.fields = append(d.fields, fieldStats{path: path})
	return &d.fields[len(d.fields)-1]
}

func (d *depStats) countFinish(reason string) {
	if reason == "" {
		reason = "unknown"
	}
	for i := range d.finish {
		if d.finish[i].reason == reason {
			d.finish[i].n++
			return
		}
	}
	if len(d.finish) >= maxFinishReasons-1 {
		reason = "other"
		for i := range d.finish {
			if d.finish[i].reason == reason {
				d.finish[i].n++
				return
			}
		}
	}
	d.finish = append(d.finish, finishCount{reason: reason, n: 1})
}

// step feeds one secondary answer to the pair's tests.
func (m *Monitor) step(p *pair, s *Sample) {
	prim := m.deps[p.conf.primary]
	if prim == nil {
		return
	}
	p.tested++
	shift := p.conf.params.Shift
	applies, event := events(s)
	for i := range SigLong {
		if applies[i] && !p.alerted(signalNames[i], "") {
			b := &prim.base[i]
			if dir := p.fixed[i].Step(b, event[i], shift, p.h); dir != None {
				m.raise(p, signalNames[i], "", dir, b.Rate(), p.fixed[i].Rate())
			}
		}
	}
	if !p.alerted(SigLong.String(), "") {
		b, median := prim.lengths.longBaseline()
		if dir := p.fixed[SigLong].Step(b, bucket(s.Length) > median, max(shift, LengthShift), p.h); dir != None {
			m.raise(p, SigLong.String(), "", dir, b.Rate(), p.fixed[SigLong].Rate())
		}
	}
	for _, f := range s.Fields {
		fs := prim.field(f.Path, false)
		if fs == nil || p.alerted(SigField, f.Path) {
			continue
		}
		c := p.fields[f.Path]
		if c == nil {
			if len(p.fields) >= MaxFieldsPerDeployment {
				continue
			}
			c = &CUSUM{}
			p.fields[f.Path] = c
		}
		if dir := c.Step(&fs.base, f.Populated, shift, p.h); dir != None {
			m.raise(p, SigField, f.Path, dir, fs.base.Rate(), c.Rate())
		}
	}
}

func (p *pair) alerted(signal, field string) bool {
	for i := range p.alerts {
		if p.alerts[i].Signal == signal && p.alerts[i].Field == field {
			return true
		}
	}
	return false
}

// raise records an alert: the active list, the counter, a log line and,
// with eject, the deployment's ineligibility.
func (m *Monitor) raise(p *pair, signal, field string, dir Direction, primRate, depRate float64) {
	a := Alert{Pool: p.conf.id, Deployment: p.dep, Primary: p.conf.primary, Signal: signal, Field: field,
		Direction: dir.String(), PrimaryRate: primRate, DeploymentRate: depRate, Answers: p.tested,
		Since: m.now().UTC(), Ejected: p.conf.eject}
	p.alerts = append(p.alerts, a)
	m.fired[alertKey{p.conf.id, p.dep, signal}]++
	m.log.Warn("quality divergence", "pool", a.Pool, "deployment", a.Deployment, "primary", a.Primary,
		"signal", signal, "field", field, "direction", a.Direction, "primary_rate", primRate,
		"deployment_rate", depRate, "answers", a.Answers, "ejected", a.Ejected)
	if p.conf.eject && !p.ejected {
		p.ejected = true
		m.publishEjected()
	}
}

// publishEjected replaces the lock-free ejected set.
func (m *Monitor) publishEjected() {
	set := map[pairKey]struct{}{}
	for k, p := range m.pairs {
		if p.ejected && p.conf.eject {
			set[k] = struct{}{}
		}
	}
	m.ejected.Store(&set)
}

// Clear ends the pair's alerts, restarts its tests and lifts its
// ejection. ok is false when the deployment is not a secondary of the
// pool; n is how many alerts were cleared.
func (m *Monitor) Clear(pool, deployment string) (n int, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.pairs[pairKey{pool, deployment}]
	if p == nil {
		return 0, false
	}
	n = len(p.alerts)
	p.reset()
	m.publishEjected()
	m.log.Info("quality alerts cleared", "pool", pool, "deployment", deployment, "alerts", n)
	return n, true
}

func (p *pair) reset() {
	p.alerts, p.ejected, p.tested = nil, false, 0
	for i := range p.fixed {
		p.fixed[i].Reset()
	}
	clear(p.fields)
}

// configure rebuilds the pools from a new snapshot. A pair whose pool,
// secondary and primary are unchanged keeps its tests and alerts.
func (m *Monitor) configure(snap *catalog.Snapshot) {
	m.snap = snap
	cfg := snap.Config()
	// A fresh slice: the pairs kept from before point into the old one.
	m.pools = make([]poolConf, 0, len(cfg.Pools))
	for i := range cfg.Pools {
		pl := &cfg.Pools[i]
		if len(pl.Deployments) == 0 {
			continue
		}
		q := pl.Quality
		q.ApplyDefaults() // a config built without them still tests
		m.pools = append(m.pools, poolConf{id: pl.ID, primary: pl.Deployments[0], deps: slices.Clone(pl.Deployments),
			params: Params{FalseAlarm: q.FalseAlarm, Horizon: q.Horizon, Shift: q.Shift}, eject: q.Eject})
	}
	old := m.pairs
	m.pairs = map[pairKey]*pair{}
	clear(m.bySecondary)
	for i := range m.pools {
		pc := &m.pools[i]
		for _, dep := range pc.deps[1:] {
			k := pairKey{pc.id, dep}
			p := old[k]
			if p == nil || p.conf.primary != pc.primary {
				p = &pair{dep: dep, fields: map[string]*CUSUM{}}
			}
			p.conf = pc
			p.h = pc.params.threshold(testsPerPair)
			for j := range p.alerts {
				p.alerts[j].Ejected = p.ejected && pc.eject
			}
			m.pairs[k] = p
			m.bySecondary[dep] = append(m.bySecondary[dep], p)
		}
	}
	for id := range m.deps {
		if _, ok := snap.Deployment(id); !ok {
			delete(m.deps, id) // bounded by the configured deployments
		}
	}
	m.publishEjected()
}
