package health

import (
	"math"
	"time"
)

// buckets in a rolling window; each covers Window/buckets.
const buckets = 12

// latency histogram: bucket i holds first-token latencies up to
// 1ms * growth^i, so p95 is read to within 25%.
const (
	latBuckets = 64
	growth     = 1.25
)

type bucket struct {
	start    time.Time
	ok, fail int
	lat      [latBuckets]uint32
}

// window is a rolling count of successes and failures with a first-token
// latency histogram. The owner serialises access.
type window struct {
	width time.Duration
	b     [buckets]bucket
}

func newWindow(total time.Duration) window {
	w := window{width: total / buckets}
	if w.width <= 0 {
		w.width = time.Second
	}
	return w
}

func (w *window) slot(now time.Time) *bucket {
	start := now.Truncate(w.width)
	i := int(start.UnixNano()/int64(w.width)) % buckets
	if i < 0 {
		i += buckets
	}
	b := &w.b[i]
	if !b.start.Equal(start) {
		*b = bucket{start: start}
	}
	return b
}

func latIndex(d time.Duration) int {
	ms := float64(d) / float64(time.Millisecond)
	if ms <= 1 {
		return 0
	}
	i := int(math.Ceil(math.Log(ms) / math.Log(growth)))
	if i >= latBuckets {
		i = latBuckets - 1
	}
	return i
}

func latBound(i int) time.Duration {
	return time.Duration(math.Pow(growth, float64(i)) * float64(time.Millisecond))
}

func (w *window) add(now time.Time, ok bool, firstToken time.Duration) {
	b := w.slot(now)
	if ok {
		b.ok++
		if firstToken > 0 {
			b.lat[latIndex(firstToken)]++
		}
	} else {
		b.fail++
	}
}

// stats sums the buckets still inside the window; the latency histogram
// (64 counters a bucket) only withP95, since every finished attempt asks
// for the counts and most policies have no p95 bound.
func (w *window) stats(now time.Time, withP95 bool) (samples int, errRate float64, p95 time.Duration) {
	var ok, fail int
	var lat [latBuckets]uint32
	oldest := now.Truncate(w.width).Add(-w.width * (buckets - 1))
	for i := range w.b {
		b := &w.b[i]
		if b.start.IsZero() || b.start.Before(oldest) || b.start.After(now) {
			continue
		}
		ok += b.ok
		fail += b.fail
		if withP95 {
			for j, n := range b.lat {
				lat[j] += n
			}
		}
	}
	samples = ok + fail
	if samples > 0 {
		errRate = float64(fail) / float64(samples)
	}
	var n uint32
	for _, c := range lat {
		n += c
	}
	if n > 0 {
		target := uint32(math.Ceil(float64(n) * 0.95))
		var seen uint32
		for j, c := range lat {
			seen += c
			if seen >= target {
				p95 = latBound(j)
				break
			}
		}
	}
	return samples, errRate, p95
}
