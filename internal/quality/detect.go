package quality

import "math"

// Divergence detection: each secondary deployment of a pool is compared
// with the pool's primary, signal by signal, by a Bernoulli CUSUM (Page's
// cumulative sum) in each direction.
//
// Why a CUSUM: the question is "has this deployment's rate moved away from
// the primary's, starting at some unknown answer?". The CUSUM is the
// optimal detector of a change at an unknown time (Lorden, Moustakides):
// it accumulates the log-likelihood ratio of "shifted by δ" against "same
// rate" and restarts from zero whenever the evidence favours "same", so a
// long healthy stretch does not slow the detection of a later shift, as it
// would a plain SPRT. Its false alarms are bounded by Lorden's inequality:
// a CUSUM with threshold h runs on average at least e^h observations
// between false alarms, so over n observations P(false alarm) ≤ n·e^-h.
//
// The in-control rate q0 is the primary's, estimated from its recent
// answers (Baseline); the test runs only once that estimate is known to a
// quarter of the shift (its standard error at most δ/4, and at least
// MinBaseline answers for the default shift), and it uses the estimate
// moved z standard errors towards the alternative, so the primary's
// sampling noise does not turn into false alarms. The threshold is
//
//	h = ln(horizon · tests / false_alarm)
//
// where tests is the most one-sided tests one secondary can run
// (Bonferroni over signals, fields and directions: testsPerPair): the chance that identical
// deployments raise any alert within horizon answers is at most
// false_alarm (and in practice far below it; see detect_test.go).

const (
	// MinBaseline is the fewest primary answers a signal's baseline needs
	// before the signal is tested: with fewer, a rate near 0 or 1 is known
	// too roughly (in the seeded simulation, 500 answers of baseline gave
	// identical deployments 1-2% false alarms over 5,000 answers; 1,000
	// gave none in 400 runs).
	MinBaseline = 1000
	// refShift is the shift MinBaseline is for (the default);
	// minBaselineFloor the fewest answers any shift needs.
	refShift         = 0.03
	minBaselineFloor = 50
	// BaselineMax bounds the baseline's memory: past twice this many
	// answers the counts are halved, so the baseline follows the primary's
	// last few tens of thousands of answers.
	BaselineMax = 20000
	// baselineZ is how many standard errors the baseline is moved towards
	// the alternative.
	baselineZ = 1.0
	// seDiv: a signal is tested once its baseline's standard error is at
	// most Shift/seDiv.
	seDiv = 4.0
	// rateFloor keeps rates away from 0 and 1, where a log-likelihood
	// ratio is infinite.
	rateFloor = 1e-4
	// LengthShift is the shift the length signal (share of answers longer
	// than the primary's median, 0.5 when alike) is tested for: lengths
	// vary much more than structural rates.
	LengthShift = 0.10
)

// Params are a pool's detection settings.
type Params struct {
	// FalseAlarm is the chance that identical deployments raise any
	// alert within Horizon answers of the secondary.
	FalseAlarm float64
	// Horizon is the number of secondary answers FalseAlarm is over.
	Horizon int
	// Shift is the rate shift (absolute) each test is tuned for: smaller
	// shifts are found later, larger ones sooner.
	Shift float64
}

// threshold is h for a deployment running tests one-sided tests.
func (p *Params) threshold(tests int) float64 {
	return math.Log(float64(max(p.Horizon, 1)) * float64(max(tests, 1)) / p.FalseAlarm)
}

// Baseline is the primary's count of one signal: n answers, x of them
// with the event. Counts are halved past 2·BaselineMax.
type Baseline struct {
	N, X float64
	// llr caches the log-likelihood ratios derived from N, X and a shift:
	// a baseline changes only with its primary's answers (never during a
	// failover), while every secondary answer reads it.
	llr llrCache
}

// llrCache holds the four ratios of one baseline state and shift.
type llrCache struct {
	n, x, shift float64
	valid, ok   bool
	// up and down: whether each one-sided test runs; hit and miss the
	// ratio an answer with and without the event adds to it.
	up, down                         bool
	upHit, upMiss, downHit, downMiss float64
}

// ratios are the baseline's cached ratios for shift.
func (b *Baseline) ratios(shift float64) *llrCache {
	c := &b.llr
	if c.valid && c.n == b.N && c.x == b.X && c.shift == shift {
		return c
	}
	*c = llrCache{n: b.N, x: b.X, shift: shift, valid: true}
	q, se, ok := b.rate(shift)
	if !ok {
		return c
	}
	c.ok = true
	if q0 := clampRate(q + baselineZ*se); q0+shift < 1-rateFloor {
		c.up, c.upHit, c.upMiss = true, llr(q0, q0+shift, true), llr(q0, q0+shift, false)
	}
	if q0 := clampRate(q - baselineZ*se); q0-shift > rateFloor {
		c.down, c.downHit, c.downMiss = true, llr(q0, q0-shift, true), llr(q0, q0-shift, false)
	}
	return c
}

// Add counts one primary answer.
func (b *Baseline) Add(event bool) {
	b.N++
	if event {
		b.X++
	}
	if b.N > 2*BaselineMax {
		b.N /= 2
		b.X /= 2
	}
}

// rate is the smoothed estimate and its standard error; ok is false while
// the baseline is too small for a test of shift.
func (b *Baseline) rate(shift float64) (q, se float64, ok bool) {
	if b.N < minBaseline(shift) {
		return 0, 0, false
	}
	q = (b.X + 0.5) / (b.N + 1)
	se = math.Sqrt(q * (1 - q) / b.N)
	return q, se, se <= shift/seDiv
}

// minBaseline is MinBaseline for the default shift, scaled for others
// as a rate's standard error is (by the square of the ratio), never below
// minBaselineFloor: a test tuned for a large shift needs a rougher
// baseline.
func minBaseline(shift float64) float64 {
	r := refShift / shift
	return max(minBaselineFloor, MinBaseline*r*r)
}

// Rate is the baseline's observed rate (0 when empty).
func (b *Baseline) Rate() float64 {
	if b.N == 0 {
		return 0
	}
	return b.X / b.N
}

// Direction is which way a secondary's rate moved.
type Direction int8

const (
	None   Direction = 0
	Lower  Direction = -1
	Higher Direction = 1
)

func (d Direction) String() string {
	switch d {
	case Lower:
		return "lower"
	case Higher:
		return "higher"
	}
	return ""
}

// CUSUM is one signal's pair of one-sided tests for one secondary.
type CUSUM struct {
	// Up and Down are the statistics of "higher" and "lower".
	Up, Down float64
	// N and X count the secondary's answers tested since the last reset.
	N, X int64
}

// Step feeds one secondary answer (event or not) against the baseline
// and returns the direction whose statistic reached h (None: no alarm).
// While the baseline is too small nothing is tested.
func (c *CUSUM) Step(b *Baseline, event bool, shift, h float64) Direction {
	r := b.ratios(shift)
	if !r.ok {
		return None
	}
	c.N++
	if event {
		c.X++
	}
	if r.up {
		c.Up = max(0, c.Up+pick(event, r.upHit, r.upMiss))
	}
	if r.down {
		c.Down = max(0, c.Down+pick(event, r.downHit, r.downMiss))
	}
	switch {
	case c.Up >= h:
		return Higher
	case c.Down >= h:
		return Lower
	}
	return None
}

// Reset restarts the tests (after an alert is cleared).
func (c *CUSUM) Reset() { *c = CUSUM{} }

// Rate is the secondary's rate since the last reset.
func (c *CUSUM) Rate() float64 {
	if c.N == 0 {
		return 0
	}
	return float64(c.X) / float64(c.N)
}

func pick(event bool, hit, miss float64) float64 {
	if event {
		return hit
	}
	return miss
}

// llr is the log-likelihood ratio of one Bernoulli outcome under q1
// against q0.
func llr(q0, q1 float64, event bool) float64 {
	if event {
		return math.Log(q1 / q0)
	}
	return math.Log((1 - q1) / (1 - q0))
}

func clampRate(q float64) float64 {
	return min(max(q, rateFloor), 1-rateFloor)
}
