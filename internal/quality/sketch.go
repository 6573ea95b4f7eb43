package quality

import "math/bits"

// Lengths is a bounded log-scale histogram of answer lengths in bytes:
// four buckets per power of two (a bucket's bounds are within 19% of each
// other), 0 to 2^31, in a fixed 1 KiB. Counts are halved past
// 2·BaselineMax, as a Baseline's are, so it follows recent answers.
type Lengths struct {
	counts [lengthBuckets]float64
	total  float64
	// long caches longBaseline until the next Add.
	long       Baseline
	longMedian int
	longValid  bool
}

const lengthBuckets = 4*32 + 1

// bucket is n's bucket: 0 for 0, then four per power of two.
func bucket(n int) int {
	if n <= 0 {
		return 0
	}
	u := uint64(min(n, 1<<31-1))
	e := bits.Len64(u) - 1 // 2^e <= u < 2^(e+1)
	sub := 0
	if e >= 2 {
		sub = int(u>>(e-2)) & 3
	} else if e == 1 {
		sub = int(u&1) * 2
	}
	return 1 + 4*e + sub
}

// upper is the largest length bucket b holds.
func upper(b int) int {
	if b <= 0 {
		return 0
	}
	e, sub := (b-1)/4, (b-1)%4
	if e < 2 {
		return (1 << e) + sub/2 // 1; 2, 3
	}
	return (1 << e) + (sub+1)*(1<<(e-2)) - 1
}

// Add counts one answer of n bytes.
func (l *Lengths) Add(n int) {
	l.longValid = false
	l.counts[bucket(n)]++
	l.total++
	if l.total > 2*BaselineMax {
		l.total = 0
		for i := range l.counts {
			l.counts[i] /= 2
			l.total += l.counts[i]
		}
	}
}

// Total is the (decayed) number of answers counted.
func (l *Lengths) Total() float64 { return l.total }

// Quantile is the upper bound of the bucket holding quantile q (0 when
// empty).
func (l *Lengths) Quantile(q float64) int {
	return upper(l.quantileBucket(q))
}

func (l *Lengths) quantileBucket(q float64) int {
	if l.total == 0 {
		return 0
	}
	want, acc := q*l.total, 0.0
	for i, c := range l.counts {
		acc += c
		if acc >= want && c > 0 {
			return i
		}
	}
	return lengthBuckets - 1
}

// longBaseline is the share of counted answers in buckets above the
// median's, as a Baseline, and that bucket: the length signal tests
// whether another deployment's answers land above it as often.
func (l *Lengths) longBaseline() (*Baseline, int) {
	if !l.longValid {
		m := l.quantileBucket(0.5)
		var above float64
		for i := m + 1; i < lengthBuckets; i++ {
			above += l.counts[i]
		}
		l.long.N, l.long.X, l.longMedian, l.longValid = l.total, above, m, true
	}
	return &l.long, l.longMedian
}
