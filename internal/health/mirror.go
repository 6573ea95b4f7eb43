package health

import "time"

// Mirror shares health transitions with the other replicas of a gateway
// (internal/redisstate implements it over Redis). A tracker without one
// (the default) keeps everything in this process, and pays nothing for the
// hooks: each is one nil check, on transitions and half-open probes only.
//
// Every method must return promptly whatever the shared store does: a
// request never waits on another replica.
type Mirror interface {
	// Publish hands a local transition to the other replicas. It must not
	// block (queue it, drop it when the queue is full).
	Publish(Transition)
	// AcquireProbe claims deployment id's one half-open probe across
	// replicas. False: another replica holds it. When the shared store
	// cannot answer (in its bounded time), it returns true: each replica
	// then probes for itself (fail-open to local health).
	AcquireProbe(id string) bool
	// ReleaseProbe gives the claimed probe back once it ended, after its
	// outcome was published. It must not block.
	ReleaseProbe(id string)
}

// TransitionKind is what changed.
type TransitionKind uint8

const (
	// TransitionOpen: the circuit opened (Cause Open, Suppressed or
	// Cooldown) until Until.
	TransitionOpen TransitionKind = iota + 1
	// TransitionThrottle: a throttle window (a 429, its Retry-After) until
	// Until.
	TransitionThrottle
	// TransitionClose: a probe succeeded; the circuit closed and any
	// throttle window ended.
	TransitionClose
	// TransitionProbe: another replica probes until Until (its lease);
	// the others skip the deployment meanwhile.
	TransitionProbe
	// TransitionProbeEnd: that probe ended.
	TransitionProbeEnd
)

// Transition is one change of a deployment's health, as another replica
// adopts it. Times are wall-clock instants, so a late joiner reading it
// from the shared store sees how long it still holds.
type Transition struct {
	Deployment string
	Kind       TransitionKind
	// Cause and Detail say why a circuit opened (TransitionOpen).
	Cause  State
	Detail string
	// Until is when the open circuit may be probed, the throttle window
	// ends or the probe's lease runs out.
	Until time.Time
	// Since is when the circuit opened.
	Since time.Time
}

// SetMirror shares this tracker's transitions through m and adopts the
// other replicas' (nil: none). Call it before serving.
func (t *Tracker) SetMirror(m Mirror) { t.mirror = m }

// throttlePublishStep bounds how often a 429 storm publishes: a throttle
// window is published again only when it moved this much further.
const throttlePublishStep = 250 * time.Millisecond

// changed returns the transition d went through since prev, if any.
// Caller holds d.mu.
func (d *dep) changed(prev depMark, now time.Time) (Transition, bool) {
	switch {
	case d.circuit == open && (prev.circuit != open || !d.retryAt.Equal(prev.retryAt) || d.cause != prev.cause):
		return Transition{Deployment: d.id, Kind: TransitionOpen, Cause: d.cause, Detail: d.detail, Until: d.retryAt, Since: d.since}, true
	case d.circuit == closed && prev.circuit != closed:
		return Transition{Deployment: d.id, Kind: TransitionClose}, true
	case d.throttledUntil.After(now) && d.throttledUntil.Sub(d.pubThrottle) >= throttlePublishStep:
		d.pubThrottle = d.throttledUntil
		return Transition{Deployment: d.id, Kind: TransitionThrottle, Until: d.throttledUntil}, true
	}
	return Transition{}, false
}

// depMark is what changed compares against.
type depMark struct {
	circuit circuit
	cause   State
	retryAt time.Time
}

func (d *dep) mark() depMark { return depMark{d.circuit, d.cause, d.retryAt} }

// maxPending bounds the transitions kept for deployments not synced yet.
const maxPending = 4096

// Adopt applies another replica's transition; adopting never publishes. A
// deployment this tracker does not know yet (a replica that has not built
// its first snapshot) keeps the transition until Sync adds it; one Sync
// never adds is dropped then.
func (t *Tracker) Adopt(tr Transition) {
	d := t.get(tr.Deployment)
	if d == nil {
		t.keepPending(tr)
		return
	}
	now := t.clock.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	switch tr.Kind {
	case TransitionOpen:
		if !tr.Until.After(now) {
			return // already over: every replica moves to half-open itself
		}
		if d.circuit == open && d.cause == tr.Cause && d.retryAt.After(tr.Until) {
			return
		}
		if d.circuit == closed || d.cause != tr.Cause {
			d.since = now
			if !tr.Since.IsZero() && !tr.Since.After(now) {
				d.since = tr.Since
			}
		}
		d.circuit, d.cause, d.detail, d.retryAt, d.probeOK = open, tr.Cause, tr.Detail, tr.Until, 0
		d.remoteProbe = time.Time{}
	case TransitionThrottle:
		if tr.Until.After(d.throttledUntil) {
			d.throttledUntil = tr.Until
			d.pubThrottle = tr.Until // known to all: no need to publish it back
		}
	case TransitionClose:
		d.throttledUntil, d.remoteProbe = time.Time{}, time.Time{}
		if d.circuit != closed {
			d.setClosed(now)
		}
	case TransitionProbe:
		d.remoteProbe = tr.Until
	case TransitionProbeEnd:
		d.remoteProbe = time.Time{}
	}
}

// Transitions lists what is in force now, as transitions (open circuits
// and throttle windows): what a replica republishes when the shared store
// returns after an outage, so that every replica converges.
func (t *Tracker) Transitions() []Transition {
	now := t.clock.Now()
	t.mu.RLock()
	ds := make([]*dep, 0, len(t.deps))
	for _, d := range t.deps {
		ds = append(ds, d)
	}
	t.mu.RUnlock()
	var out []Transition
	for _, d := range ds {
		d.mu.Lock()
		if d.circuit == open && d.retryAt.After(now) {
			out = append(out, Transition{Deployment: d.id, Kind: TransitionOpen, Cause: d.cause, Detail: d.detail, Until: d.retryAt, Since: d.since})
		}
		if d.throttledUntil.After(now) {
			out = append(out, Transition{Deployment: d.id, Kind: TransitionThrottle, Until: d.throttledUntil})
		}
		d.mu.Unlock()
	}
	return out
}

// keepPending keeps tr for a deployment Sync has not added yet: the latest
// transition per deployment, at most maxPending deployments.
func (t *Tracker) keepPending(tr Transition) {
	if tr.Kind != TransitionOpen && tr.Kind != TransitionThrottle && tr.Kind != TransitionClose {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.synced {
		return // a deployment this replica does not serve
	}
	if t.pending == nil {
		t.pending = map[string][]Transition{}
	}
	if tr.Kind == TransitionClose {
		delete(t.pending, tr.Deployment)
		return
	}
	if _, ok := t.pending[tr.Deployment]; !ok && len(t.pending) >= maxPending {
		return
	}
	t.pending[tr.Deployment] = append(t.pending[tr.Deployment][:min(len(t.pending[tr.Deployment]), 3)], tr)
}

// adoptPending applies what was kept for deployments before the first
// Sync.
func (t *Tracker) adoptPending(pending map[string][]Transition) {
	for _, trs := range pending {
		for _, tr := range trs {
			t.Adopt(tr)
		}
	}
}
