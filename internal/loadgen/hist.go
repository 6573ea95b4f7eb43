package loadgen

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// The histogram is log-linear in microseconds: exact below 2*subBuckets µs,
// then subBuckets linear buckets per power of two, so a bucket is at most
// 1/subBuckets (0.8%) of its value wide. It is a fixed array of atomic
// counters: recording never allocates, locks or loses a sample, and workers
// share one histogram without coordination.
const (
	subBits    = 7
	subBuckets = 1 << subBits
	// maxBits caps recorded values at 2^36 µs (about 19 hours); larger
	// ones land in the last bucket.
	maxBits   = 36
	maxMicros = 1<<maxBits - 1
	nBuckets  = (maxBits - subBits + 1) * subBuckets
)

// Histogram records durations. The zero value is ready to use and safe for
// concurrent use; it must not be copied after first use.
type Histogram struct {
	counts [nBuckets]atomic.Uint64
	n      atomic.Uint64
	sumNS  atomic.Uint64
	maxNS  atomic.Int64
}

// Record adds one sample; negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.counts[bucketOf(uint64(d/time.Microsecond))].Add(1)
	h.n.Add(1)
	h.sumNS.Add(uint64(d))
	for {
		m := h.maxNS.Load()
		if int64(d) <= m || h.maxNS.CompareAndSwap(m, int64(d)) {
			return
		}
	}
}

// Count is the number of samples recorded.
func (h *Histogram) Count() uint64 { return h.n.Load() }

// Quantile returns the value below which a fraction q (0..1) of the samples
// lie, as its bucket's midpoint (never above the largest sample); 0 when
// empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(n)))
	rank = max(rank, 1)
	var cum uint64
	for i := range h.counts {
		cum += h.counts[i].Load()
		if cum >= rank {
			lo, width := bucketRange(i)
			v := time.Duration(lo+width/2) * time.Microsecond
			return min(v, time.Duration(h.maxNS.Load()))
		}
	}
	return time.Duration(h.maxNS.Load())
}

// Mean is the arithmetic mean of the samples; 0 when empty.
func (h *Histogram) Mean() time.Duration {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	return time.Duration(h.sumNS.Load() / n)
}

// Max is the largest sample.
func (h *Histogram) Max() time.Duration { return time.Duration(h.maxNS.Load()) }

// Summary is a histogram's digest, in milliseconds.
type Summary struct {
	Count uint64  `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p99_9"`
	Max   float64 `json:"max"`
}

// Summary digests the histogram.
func (h *Histogram) Summary() Summary {
	return Summary{
		Count: h.Count(),
		Mean:  ms(h.Mean()),
		P50:   ms(h.Quantile(0.50)),
		P90:   ms(h.Quantile(0.90)),
		P99:   ms(h.Quantile(0.99)),
		P999:  ms(h.Quantile(0.999)),
		Max:   ms(h.Max()),
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// bucketOf is the index of the bucket holding v µs.
func bucketOf(v uint64) int {
	v = min(v, maxMicros)
	if v < 2*subBuckets {
		return int(v)
	}
	shift := bits.Len64(v) - subBits - 1 // v>>shift is in [subBuckets, 2*subBuckets)
	return (shift+1)*subBuckets + int(v>>shift) - subBuckets
}

// bucketRange is the lowest value and the width of bucket i, in µs.
func bucketRange(i int) (lo, width uint64) {
	if i < 2*subBuckets {
		return uint64(i), 1
	}
	shift := i/subBuckets - 1
	m := uint64(i%subBuckets + subBuckets)
	return m << shift, 1 << shift
}
