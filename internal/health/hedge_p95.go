package health

import (
	"math"
	"time"
)

// FirstTokenP95 is deployment id's observed first-token p95 over its
// rolling window (read to within 25%, as the window's histogram allows),
// and how many successful attempts it rests on; 0 and 0 for an unknown
// deployment or one with no success in the window. It is what a route's
// hedge reads (after: p95). Read-only: it changes no state.
func (t *Tracker) FirstTokenP95(id string) (time.Duration, int) {
	d := t.get(id)
	if d == nil {
		return 0, 0
	}
	now := t.clock.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.win.firstTokenP95(now)
}

// firstTokenP95 is the p95 of the first-token latencies in the window and
// their count.
func (w *window) firstTokenP95(now time.Time) (time.Duration, int) {
	return w.firstTokenQuantile(now, 0.95)
}

// firstTokenQuantile is the q-quantile (0 < q ≤ 1) of the first-token
// latencies in the window, as the bound of the histogram bucket it falls
// in, and their count; 0 and 0 when there are none.
func (w *window) firstTokenQuantile(now time.Time, q float64) (time.Duration, int) {
	var lat [latBuckets]uint32
	var n uint32
	oldest := now.Truncate(w.width).Add(-w.width * (buckets - 1))
	for i := range w.b {
		b := &w.b[i]
		if b.start.IsZero() || b.start.Before(oldest) || b.start.After(now) {
			continue
		}
		for j, c := range b.lat {
			lat[j] += c
			n += c
		}
	}
	if n == 0 {
		return 0, 0
	}
	target := max(uint32(math.Ceil(float64(n)*q)), 1)
	var seen uint32
	for j, c := range lat {
		if seen += c; seen >= target {
			return latBound(j), int(n)
		}
	}
	return latBound(latBuckets - 1), int(n)
}
