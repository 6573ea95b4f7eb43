package health

import "time"

// FirstTokenP50 is deployment id's median first-token latency over its
// rolling window (read to within 25%, the histogram's resolution); ok is
// false when the window holds no successful attempt, or id is unknown.
// It only reads: a route's cost_latency rank calls it for each kept rung
// (route.FirstTokens).
func (t *Tracker) FirstTokenP50(id string) (p50 time.Duration, ok bool) {
	d := t.get(id)
	if d == nil {
		return 0, false
	}
	now := t.clock.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	p50, n := d.win.firstTokenQuantile(now, 0.5)
	return p50, n > 0
}
