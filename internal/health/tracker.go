package health

import (
	"sort"
	"sync"
	"time"

	"github.com/spillway-gw/spillway/internal/clock"
	"github.com/spillway-gw/spillway/internal/failure"
)

// State is a deployment's health state as shown to operators.
type State string

const (
	Healthy    State = "healthy"
	Open       State = "open"       // consecutive failures: skipped until a probe
	HalfOpen   State = "half_open"  // the next request is a probe
	Throttled  State = "throttled"  // inside a 429 window
	Suppressed State = "suppressed" // credential, credit or binding failure
	Cooldown   State = "cooldown"   // error-rate or latency breach
)

// Reasons a rung is skipped, as route explain shows them.
const (
	SkipCircuitOpen   = "circuit_open"
	SkipThrottled     = "throttled"
	SkipSuppressed    = "suppressed"
	SkipCooldown      = "cooldown"
	SkipProbeInFlight = "probe_in_flight"
)

type circuit uint8

const (
	closed circuit = iota
	open
	halfOpen
)

// dep is one deployment's health. Its mutex is held only for a few field
// updates, never across I/O.
type dep struct {
	mu     sync.Mutex
	id     string
	policy Policy

	circuit circuit
	// cause is why the circuit is not closed: Open, Suppressed or Cooldown.
	cause          State
	detail         string
	since          time.Time
	retryAt        time.Time
	throttledUntil time.Time
	consecFail     int
	probing        bool
	probeOK        int
	lastResort     time.Time
	win            window
	// remoteProbe: another replica holds the half-open probe until then
	// (see Mirror); pubThrottle is the throttle window last published.
	remoteProbe, pubThrottle time.Time

	attempts, successes, skipped int64
	failures                     map[failure.Class]int64
}

// Tracker holds every deployment's health.
type Tracker struct {
	clock clock.Passive
	mu    sync.RWMutex
	deps  map[string]*dep
	// mirror shares transitions across replicas (nil: this process only).
	mirror Mirror
	// pending keeps adopted transitions until the first Sync; synced says
	// it ran.
	pending map[string][]Transition
	synced  bool
}

// NewTracker returns an empty tracker on c (nil = the system clock; tests
// pass a clocktest.Clock).
func NewTracker(c clock.Passive) *Tracker {
	if c == nil {
		c = clock.Real{}
	}
	return &Tracker{clock: c, deps: map[string]*dep{}}
}

// Sync makes the tracked set match ids: new deployments start healthy,
// known ones keep their state (and take the new policy), gone ones are
// dropped.
func (t *Tracker) Sync(policies map[string]Policy) {
	t.mu.Lock()
	pending := t.pending
	t.pending, t.synced = nil, true
	t.sync(policies)
	t.mu.Unlock()
	if pending != nil {
		t.adoptPending(pending)
	}
}

func (t *Tracker) sync(policies map[string]Policy) {
	for id := range t.deps {
		if _, ok := policies[id]; !ok {
			delete(t.deps, id)
		}
	}
	now := t.clock.Now()
	for id, p := range policies {
		p = p.withDefaults()
		if d, ok := t.deps[id]; ok {
			d.mu.Lock()
			if d.policy.Window != p.Window {
				d.win = newWindow(p.Window)
			}
			d.policy = p
			d.mu.Unlock()
			continue
		}
		t.deps[id] = &dep{id: id, policy: p, since: now, win: newWindow(p.Window), failures: map[failure.Class]int64{}}
	}
}

func (t *Tracker) get(id string) *dep {
	t.mu.RLock()
	d := t.deps[id]
	t.mu.RUnlock()
	return d
}

// skipReason says why d must be skipped now, "" if it may be tried. It
// moves an open circuit whose time is up to half-open. Caller holds d.mu.
func (d *dep) skipReason(now time.Time) string {
	if now.Before(d.throttledUntil) {
		return SkipThrottled
	}
	switch d.circuit {
	case open:
		if now.Before(d.retryAt) {
			switch d.cause {
			case Suppressed:
				return SkipSuppressed
			case Cooldown:
				return SkipCooldown
			}
			return SkipCircuitOpen
		}
		d.circuit, d.probeOK = halfOpen, 0
		fallthrough
	case halfOpen:
		if d.probing || now.Before(d.remoteProbe) {
			return SkipProbeInFlight
		}
	}
	return ""
}

// Check reports whether deployment id may be tried now, and why not. An
// unknown deployment may be tried.
func (t *Tracker) Check(id string) (ok bool, reason string) {
	d := t.get(id)
	if d == nil {
		return true, ""
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	r := d.skipReason(t.clock.Now())
	return r == "", r
}

// Token is an admitted attempt; pass it to Done exactly once.
type Token struct {
	d     *dep
	probe bool
	// leased: the probe holds the replicas' shared lease (see Mirror).
	leased bool
}

// Begin admits one attempt on id, or says why not. A half-open circuit
// admits exactly one probe at a time. forced admits a last-resort probe
// whatever the state.
func (t *Tracker) Begin(id string, forced bool) (Token, string) {
	d := t.get(id)
	if d == nil {
		return Token{}, ""
	}
	d.mu.Lock()
	if forced {
		d.attempts++
		d.mu.Unlock()
		return Token{d: d, probe: true}, ""
	}
	if r := d.skipReason(t.clock.Now()); r != "" {
		d.skipped++
		d.mu.Unlock()
		return Token{}, r
	}
	d.attempts++
	if d.circuit != halfOpen {
		d.mu.Unlock()
		return Token{d: d}, ""
	}
	d.probing = true
	d.mu.Unlock()
	if t.mirror == nil {
		return Token{d: d, probe: true}, ""
	}
	return t.leaseProbe(d)
}

// leaseProbe claims the shared half-open probe for d, which this replica
// already claimed locally (d.probing); the lease is asked for without
// holding d.mu.
func (t *Tracker) leaseProbe(d *dep) (Token, string) {
	if t.mirror.AcquireProbe(d.id) {
		return Token{d: d, probe: true, leased: true}, ""
	}
	d.mu.Lock()
	d.probing = false
	d.attempts--
	d.skipped++
	d.mu.Unlock()
	return Token{}, SkipProbeInFlight
}

// Wait is how long until id may be tried again (0 if it may now), and
// whether only a throttle window stands in the way.
func (t *Tracker) Wait(id string) (time.Duration, bool) {
	d := t.get(id)
	if d == nil {
		return 0, false
	}
	now := t.clock.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	var wait time.Duration
	if d.circuit == open && now.Before(d.retryAt) {
		wait = d.retryAt.Sub(now)
	}
	throttledOnly := false
	if now.Before(d.throttledUntil) {
		tw := d.throttledUntil.Sub(now)
		throttledOnly = wait == 0
		if tw > wait {
			wait = tw
		}
	}
	return wait, throttledOnly
}

// Outcome is how an admitted attempt ended.
type Outcome struct {
	// Class is "" on success.
	Class failure.Class
	// RetryAfter is the provider's requested delay for a 429.
	RetryAfter time.Duration
	// FirstToken is the time to the first token of a success.
	FirstToken time.Duration
}

// Done records an attempt's outcome. Client cancels and the caller's own
// request errors never count against the deployment.
func (t *Tracker) Done(tok Token, o Outcome) {
	d := tok.d
	if d == nil {
		return
	}
	now := t.clock.Now()
	d.mu.Lock()
	prev := d.mark()
	d.record(now, tok, o)
	var tr Transition
	pub := false
	if t.mirror != nil {
		tr, pub = d.changed(prev, now)
	}
	d.mu.Unlock()
	if pub {
		t.mirror.Publish(tr)
	}
	if tok.leased {
		t.mirror.ReleaseProbe(d.id)
	}
}

// record applies an attempt's outcome to d. Caller holds d.mu.
func (d *dep) record(now time.Time, tok Token, o Outcome) {
	if tok.probe {
		d.probing = false
	}
	switch {
	case o.Class == "":
		d.successes++
		d.consecFail = 0
		d.win.add(now, true, o.FirstToken)
		if tok.probe {
			d.throttledUntil = time.Time{}
			d.probeOK++
			if d.circuit != closed && d.probeOK >= d.policy.RecoverySuccesses {
				d.setClosed(now)
			}
		}
	case o.Class == failure.Throttled:
		// Its own window: a 429 storm never opens the failure circuit.
		d.failures[o.Class]++
		wait := o.RetryAfter
		if wait <= 0 {
			wait = d.policy.ThrottleFor
		}
		if wait > d.policy.MaxThrottle {
			wait = d.policy.MaxThrottle
		}
		if until := now.Add(wait); until.After(d.throttledUntil) {
			d.throttledUntil = until
		}
	case o.Class.Suppresses():
		d.failures[o.Class]++
		d.win.add(now, false, 0)
		d.setOpen(now, Suppressed, string(o.Class), d.policy.SuppressFor)
	case o.Class.CountsAgainstHealth():
		d.failures[o.Class]++
		d.consecFail++
		d.win.add(now, false, 0)
		if tok.probe && d.circuit != closed {
			d.setOpen(now, Open, "probe failed: "+string(o.Class), d.policy.OpenFor)
		} else if d.circuit == closed && d.consecFail >= d.policy.FailureThreshold {
			d.setOpen(now, Open, "consecutive failures", d.policy.OpenFor)
		}
	default:
		// Neutral: the caller's request, a refusal, a cancel. A probe that
		// ends so proves nothing either way; the next request probes again.
		return
	}
	if d.circuit == closed {
		d.checkRolling(now)
	}
}

func (d *dep) setOpen(now time.Time, cause State, detail string, dur time.Duration) {
	if d.circuit == closed || d.cause != cause {
		d.since = now
	}
	d.circuit, d.cause, d.detail = open, cause, detail
	d.retryAt = now.Add(dur)
	d.probeOK = 0
}

func (d *dep) setClosed(now time.Time) {
	d.circuit, d.cause, d.detail = closed, "", ""
	d.since, d.consecFail, d.probeOK = now, 0, 0
	// A fresh start: the failures that opened the circuit are history.
	d.win = newWindow(d.policy.Window)
}

// checkRolling trips a cooldown when the rolling error rate or first-token
// p95 breaches its threshold over enough samples.
func (d *dep) checkRolling(now time.Time) {
	samples, rate, p95 := d.win.stats(now, d.policy.MaxFirstTokenP95 > 0)
	if samples < d.policy.MinSamples {
		return
	}
	if d.policy.MaxErrorRate > 0 && rate > d.policy.MaxErrorRate {
		d.setOpen(now, Cooldown, "error rate above threshold", d.policy.Cooldown)
		return
	}
	if d.policy.MaxFirstTokenP95 > 0 && p95 > d.policy.MaxFirstTokenP95 {
		d.setOpen(now, Cooldown, "first-token p95 above threshold", d.policy.Cooldown)
	}
}

// LastResort picks, among ids (every rung of a route, all skipped), the one
// most likely to have recovered: the one whose wait ends first. At most one
// last-resort probe per deployment per LastResortEvery; ok is false when
// none may be probed now.
func (t *Tracker) LastResort(ids []string) (string, bool) {
	id, ok := t.ChooseLastResort(ids)
	if !ok || !t.ClaimLastResort(id) {
		return "", false
	}
	return id, true
}

// ChooseLastResort is LastResort's choice without spending the probe:
// what route explain shows, by the same rule.
func (t *Tracker) ChooseLastResort(ids []string) (string, bool) {
	now := t.clock.Now()
	best, bestAt := "", time.Time{}
	for _, id := range ids {
		d := t.get(id)
		if d == nil {
			return id, true
		}
		d.mu.Lock()
		at := d.retryAt
		if d.throttledUntil.After(at) {
			at = d.throttledUntil
		}
		eligible := d.lastResort.IsZero() || now.Sub(d.lastResort) >= d.policy.LastResortEvery
		d.mu.Unlock()
		if eligible && (best == "" || at.Before(bestAt)) {
			best, bestAt = id, at
		}
	}
	return best, best != ""
}

// ClaimLastResort spends id's last-resort probe: false when another
// caller spent it since it was chosen.
func (t *Tracker) ClaimLastResort(id string) bool {
	d := t.get(id)
	if d == nil {
		return true
	}
	now := t.clock.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.lastResort.IsZero() && now.Sub(d.lastResort) < d.policy.LastResortEvery {
		return false
	}
	d.lastResort = now
	return true
}

// Status is one deployment's health as operators see it.
type Status struct {
	Deployment     string           `json:"deployment"`
	State          State            `json:"state"`
	Reason         string           `json:"reason,omitempty"`
	Since          time.Time        `json:"since"`
	RetryAt        *time.Time       `json:"retry_at,omitempty"`
	ThrottledUntil *time.Time       `json:"throttled_until,omitempty"`
	Attempts       int64            `json:"attempts"`
	Successes      int64            `json:"successes"`
	Skipped        int64            `json:"skipped"`
	Failures       map[string]int64 `json:"failures"`
	Samples        int              `json:"window_samples"`
	ErrorRate      float64          `json:"error_rate"`
	FirstTokenP95  time.Duration    `json:"-"`
	P95Millis      float64          `json:"first_token_p95_ms"`
	Healthy        bool             `json:"healthy"`
}

// Statuses returns every deployment's status, sorted by id.
func (t *Tracker) Statuses() []Status {
	now := t.clock.Now()
	t.mu.RLock()
	ids := make([]string, 0, len(t.deps))
	for id := range t.deps {
		ids = append(ids, id)
	}
	t.mu.RUnlock()
	sort.Strings(ids)
	out := make([]Status, 0, len(ids))
	for _, id := range ids {
		if s, ok := t.Status(id, now); ok {
			out = append(out, s)
		}
	}
	return out
}

// Status returns one deployment's status at now.
func (t *Tracker) Status(id string, now time.Time) (Status, bool) {
	d := t.get(id)
	if d == nil {
		return Status{}, false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	s := Status{Deployment: id, Since: d.since, Attempts: d.attempts, Successes: d.successes,
		Skipped: d.skipped, Failures: map[string]int64{}}
	for c, n := range d.failures {
		s.Failures[string(c)] = n
	}
	s.Samples, s.ErrorRate, s.FirstTokenP95 = d.win.stats(now, true)
	s.P95Millis = float64(s.FirstTokenP95) / float64(time.Millisecond)
	reason := d.skipReason(now)
	switch {
	case d.circuit == halfOpen:
		s.State, s.Reason = HalfOpen, d.detail
	case d.circuit == open:
		s.State, s.Reason = d.cause, d.detail
		at := d.retryAt
		s.RetryAt = &at
	case reason == SkipThrottled:
		s.State, s.Reason = Throttled, "provider asked to slow down"
	default:
		s.State = Healthy
	}
	if now.Before(d.throttledUntil) {
		tu := d.throttledUntil
		s.ThrottledUntil = &tu
		if s.State == Healthy {
			s.State = Throttled
		}
	}
	s.Healthy = reason == ""
	return s, true
}
