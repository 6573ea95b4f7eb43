package quality

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/spillway-gw/spillway/internal/catalog"
)

// testSnapshot is one pool of two deployments, primary first.
func testSnapshot(t testing.TB, quality string) *catalog.Snapshot {
	t.Helper()
	return mustSnapshot(t, `
deployments:
  - {id: primary, provider: openai, base_url: "http://127.0.0.1:1/v1", model: m, funding: byok}
  - {id: secondary, provider: openai, base_url: "http://127.0.0.1:2/v1", model: m, funding: byok}
pools:
  - id: pool
    model: m
    deployments: [primary, secondary]
    equivalence: {by: ops, date: "2026-01-01", evidence: "eval:1"}
`+quality+`
routes:
  - {model: m, pool: pool}
`)
}

func mustSnapshot(t testing.TB, y string) *catalog.Snapshot {
	t.Helper()
	c, err := catalog.Parse([]byte(y), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := catalog.Build(c, "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// answerModel is a synthetic deployment: the rate of each signal of a
// structured extraction workload with tools offered on half the requests.
type answerModel struct {
	fields              []float64 // population rate per field path
	refusal, empty, cut float64
	toolCall, toolValid float64
	jsonValid           float64
	lengthMu            float64 // log-normal answer length
	// tools is the share of requests that offer tools (the rest ask for
	// structured output).
	tools float64
}

var fieldNames = []string{"insured", "coverage", "coverage.effective_date", "coverage.limit", "notes", "flags"}

func baseModel() answerModel {
	return answerModel{fields: []float64{1, 1, 1, 0.99, 0.9, 0.5}, refusal: 0.01, empty: 0.005, cut: 0.02,
		toolCall: 0.3, toolValid: 0.99, jsonValid: 0.995, lengthMu: 6, tools: 0.3}
}

// extraction is seed 004's lab workload: every request asks for
// structured output.
func extraction() answerModel {
	am := baseModel()
	am.tools = 0
	return am
}

// sample draws one answer's signals.
func (am *answerModel) sample(rng *rand.Rand, s *Sample) {
	*s = Sample{Fields: s.Fields[:0]}
	s.Refusal = rng.Float64() < am.refusal
	s.Empty = rng.Float64() < am.empty
	s.Truncated = rng.Float64() < am.cut
	s.Length = int(math.Exp(am.lengthMu + 0.5*rng.NormFloat64()))
	if rng.Float64() < am.tools {
		s.ToolsOffered = true
		if s.ToolCall = rng.Float64() < am.toolCall; s.ToolCall {
			s.ToolArgsChecked, s.ToolArgsValid = true, rng.Float64() < am.toolValid
		}
		return
	}
	s.Structured, s.Measured, s.Schema = true, true, true
	s.JSONValid = rng.Float64() < am.jsonValid
	s.SchemaValid = s.JSONValid
	if !s.JSONValid {
		return
	}
	for i, r := range am.fields {
		s.Fields = append(s.Fields, Field{Path: fieldNames[i], Populated: rng.Float64() < r})
	}
}

// run feeds warm primary answers, then secondary answers (with perSec
// primary answers alongside each: 0 is a failover, the primary silent)
// until the first alert or limit. It returns the secondary answers read
// and the first alert (nil: none).
func run(snap *catalog.Snapshot, seed uint64, prim, sec answerModel, warm, perSec, limit int) (int, *Alert) {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	m := NewMonitor(nil, nil)
	var s Sample
	for range warm {
		prim.sample(rng, &s)
		m.Observe(snap, "primary", &s)
	}
	for i := 1; i <= limit; i++ {
		for range perSec {
			prim.sample(rng, &s)
			m.Observe(snap, "primary", &s)
		}
		sec.sample(rng, &s)
		m.Observe(snap, "secondary", &s)
		if p := m.pairs[pairKey{"pool", "secondary"}]; len(p.alerts) > 0 {
			return i, &p.alerts[0]
		}
	}
	return limit, nil
}

// TestDetectionDelayAndFalseAlarms measures the detector on seeded
// synthetic answer streams at the default settings (false_alarm 0.01 over
// 5,000 answers, shift 0.03), against seed 004's targets: a 3-point drop
// of one field's population rate found within 200-300 answers of the
// secondary, and under 1% false alarms over 5,000 answers of identical
// deployments. -short and -race run fewer seeds.
func TestDetectionDelayAndFalseAlarms(t *testing.T) {
	snap := testSnapshot(t, "")
	detectRuns, faRuns := 200, 300
	switch {
	case raceEnabled: // one goroutine: the race detector only slows it
		detectRuns, faRuns = 10, 12
	case testing.Short():
		detectRuns, faRuns = 50, 80
	}
	// Detection: coverage.effective_date drops from 1.00 to 0.97 on the
	// secondary; the primary served 2,000 answers before, then either
	// fails over (silent) or keeps 95% of traffic (exercise at 5%).
	for _, sc := range []struct {
		name   string
		perSec int
	}{{"failover", 0}, {"exercise_5pct", 19}} {
		var delays []int
		missed, wrong := 0, 0
		for seed := range detectRuns {
			sec := extraction()
			sec.fields = slices.Clone(sec.fields)
			sec.fields[2] = 0.97
			n, a := run(snap, uint64(seed), extraction(), sec, 2000, sc.perSec, 2000)
			switch {
			case a == nil:
				missed++
				n = math.MaxInt32
			case a.Field != "coverage.effective_date" || a.Direction != "lower":
				wrong++
			}
			delays = append(delays, n)
		}
		slices.Sort(delays)
		p50, p90 := delays[len(delays)/2], delays[len(delays)*9/10]
		t.Logf("detection (%s): median %d answers, p90 %d, min %d, missed within 2000: %d/%d, first alert on another signal: %d",
			sc.name, p50, p90, delays[0], missed, detectRuns, wrong)
		if p50 > 300 {
			t.Errorf("%s: median detection delay %d answers, want at most 300", sc.name, p50)
		}
		if p90 > 600 || missed > 0 {
			t.Errorf("%s: p90 %d answers (want at most 600), %d runs missed", sc.name, p90, missed)
		}
		if wrong > detectRuns/50 {
			t.Errorf("%s: %d runs alerted on another signal first", sc.name, wrong)
		}
	}
	// False alarms: identical deployments, 5,000 secondary answers after a
	// failover (the hardest case: the baseline never improves).
	alarms := 0
	var first *Alert
	for seed := range faRuns {
		am := baseModel() // structured output, tools on 30% of requests
		if seed%2 == 1 {
			am = extraction()
		}
		_, a := run(snap, uint64(1_000_000+seed), am, am, 2000, 0, 5000)
		if a != nil {
			alarms++
			first = a
		}
	}
	rate := float64(alarms) / float64(faRuns)
	t.Logf("false alarms: %d of %d runs of 5,000 answers of identical deployments (%.2f%%)", alarms, faRuns, 100*rate)
	if rate >= 0.01 {
		t.Errorf("false-alarm rate %.2f%% (last: %+v), want under 1%%", 100*rate, first)
	}
}

// TestThresholdIsLordenBound: the threshold is ln(horizon·tests/α).
func TestThresholdIsLordenBound(t *testing.T) {
	p := Params{FalseAlarm: 0.01, Horizon: 5000, Shift: 0.03}
	if got, want := p.threshold(64), math.Log(5000*64/0.01); math.Abs(got-want) > 1e-9 {
		t.Fatalf("threshold %v, want %v", got, want)
	}
}

// TestNoTestWithoutBaseline: a primary with too few answers arms nothing.
func TestNoTestWithoutBaseline(t *testing.T) {
	var b Baseline
	for range MinBaseline - 1 {
		b.Add(true)
	}
	var c CUSUM
	for range 10000 {
		if c.Step(&b, false, 0.03, 5) != None {
			t.Fatal("alarm without a baseline")
		}
	}
	if c.N != 0 {
		t.Fatalf("tested %d answers without a baseline", c.N)
	}
}

func BenchmarkObserve(b *testing.B) {
	snap := testSnapshot(b, "")
	m := NewMonitor(nil, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	am := baseModel()
	var s Sample
	for range 3000 {
		am.sample(rng, &s)
		m.Observe(snap, "primary", &s)
	}
	samples := make([]Sample, 64)
	for i := range samples {
		am.sample(rng, &samples[i])
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		m.Observe(snap, "secondary", &samples[i%len(samples)])
	}
}
