package loadgen

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestHistogramEmpty(t *testing.T) {
	var h Histogram
	if s := h.Summary(); s != (Summary{}) {
		t.Fatalf("empty summary = %+v", s)
	}
}

func TestHistogramClampsOutOfRange(t *testing.T) {
	var h Histogram
	h.Record(-time.Second)
	h.Record(1000 * time.Hour) // beyond the last bucket
	if h.Count() != 2 || h.Quantile(0) != 0 || h.Max() != 1000*time.Hour {
		t.Fatalf("count %d q0 %v max %v", h.Count(), h.Quantile(0), h.Max())
	}
	if q := h.Quantile(1); q < 19*time.Hour {
		t.Errorf("q1 = %v, want the last bucket (about 19 h)", q)
	}
}

// Every value lands in a bucket that holds it, buckets are contiguous and
// no wider than 1/subBuckets of their values.
func TestBucketsCoverEveryValue(t *testing.T) {
	prev := -1
	check := func(v uint64) {
		i := bucketOf(v)
		lo, w := bucketRange(i)
		if v < lo || v >= lo+w || i < prev || i >= nBuckets {
			t.Fatalf("v=%d: bucket %d [%d,%d) (previous bucket %d)", v, i, lo, lo+w, prev)
		}
		if v >= 2*subBuckets && w*subBuckets > lo {
			t.Fatalf("v=%d: bucket %d is %d wide at %d", v, i, w, lo)
		}
		prev = i
	}
	for v := uint64(0); v < 1<<16; v++ {
		check(v)
	}
	for v := uint64(1 << 16); v < maxMicros; v += v / 97 {
		check(v)
	}
	check(maxMicros)
	if bucketOf(maxMicros) != nBuckets-1 || bucketOf(1<<62) != nBuckets-1 {
		t.Fatalf("the largest values are not in the last bucket")
	}
}

// Quantiles agree with the exact order statistics within a bucket's width
// (sub-µs parts are dropped).
func TestHistogramQuantilesMatchSortedSamples(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h Histogram
	samples := make([]time.Duration, 100_000)
	for i := range samples {
		// Log-uniform from 10 µs to 10 s, like real latencies' spread.
		d := time.Duration(float64(10*time.Microsecond) * math.Pow(10, 6*rng.Float64()))
		samples[i] = d
		h.Record(d)
	}
	slices.Sort(samples)
	for _, q := range []float64{0.01, 0.5, 0.9, 0.99, 0.999, 1} {
		exact := samples[max(int(q*float64(len(samples)))-1, 0)]
		got := h.Quantile(q)
		// Buckets are 1 µs wide below 256 µs, then 1/128 of their value.
		tol := max(exact/100, time.Microsecond)
		if diff := got - exact; diff < -tol || diff > tol {
			t.Errorf("q%v = %v, exact %v: more than %v off", q, got, exact, tol)
		}
	}
	var sum time.Duration
	for _, d := range samples {
		sum += d
	}
	if h.Mean() != sum/time.Duration(len(samples)) {
		t.Errorf("mean %v, want %v", h.Mean(), sum/time.Duration(len(samples)))
	}
}

func TestHistogramConcurrent(t *testing.T) {
	var h Histogram
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				h.Record(time.Duration(g*1000+i) * time.Microsecond)
			}
		})
	}
	wg.Wait()
	if h.Count() != 8000 || h.Max() != 7999*time.Microsecond {
		t.Fatalf("count %d max %v", h.Count(), h.Max())
	}
}

func BenchmarkHistogramRecord(b *testing.B) {
	var h Histogram
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		d := 137 * time.Microsecond
		for pb.Next() {
			h.Record(d)
			d += 7 * time.Microsecond
		}
	})
}
