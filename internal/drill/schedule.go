package drill

import (
	"math/rand/v2"
	"strings"
)

// Phase is one window of the run with a fault script per rung.
type Phase struct {
	Name string `json:"name"`
	// From and To bound the window's request indexes: [From, To).
	From int `json:"from"`
	To   int `json:"to"`
	// Faults are the mock-wide fault scripts, one per rung in pool order
	// ("" = healthy).
	Faults []string `json:"faults"`
}

// Fault scripts of the drill (see package mock for the syntax). Every
// answer is 24 tokens long, so a stream has room to die mid-way and a
// request can ask for fewer (the Responses API's floor is 16); 8 of its
// prompt tokens are read from the cache, so cached input is priced at its
// own rate.
const (
	shape           = "tokens=24;cached=8"
	primaryFailing  = "p=0.38;status=529"
	primaryTimeouts = "p=0.38;stall"
)

// phaseSpec is a phase before it is placed on the run: its share of the
// requests and its faults on the first three rungs (later rungs stay
// healthy). The primary fails 38% of its requests in every phase, with 529
// or with a timeout.
type phaseSpec struct {
	name    string
	weight  int
	primary string
	second  string
	third   string
}

// phaseSpecs are the phases in order. A rung's fault comes in a phase
// right after one that left it healthy, so the fault meets a closed
// circuit at once instead of waiting out an open one.
func phaseSpecs() []phaseSpec {
	return []phaseSpec{
		{name: "baseline: primary 38% 529", weight: 2, primary: primaryFailing},
		{name: "429 storm with Retry-After on rung 2", weight: 2, primary: primaryFailing, second: "status=429;retry_after=1"},
		{name: "rung 2 accepts and goes silent", weight: 2, primary: primaryFailing, second: "stall"},
		{name: "primary 38% timeouts (silent)", weight: 1, primary: primaryTimeouts},
		{name: "credential failure (401) on rung 2", weight: 2, primary: primaryFailing, second: "status=401"},
		{name: "mid-stream deaths after K events", weight: 2, primary: primaryFailing, second: "p=0.3;die_after=3", third: "p=0.05;die_after=7"},
		{name: "malformed events", weight: 2, primary: primaryFailing, second: "p=0.3;malformed_after=2", third: "p=0.05;malformed_after=5"},
		{name: "recovery: primary 38% 529 only", weight: 1, primary: primaryFailing},
	}
}

// Phases places the drill's fault phases on a run of n requests over the
// given number of rungs (at least 3; the first is the primary).
func Phases(n, rungs int) []Phase {
	specs := phaseSpecs()
	total := 0
	for _, s := range specs {
		total += s.weight
	}
	out := make([]Phase, 0, len(specs))
	at, acc := 0, 0
	for _, s := range specs {
		acc += s.weight
		to := n * acc / total
		faults := make([]string, rungs)
		for i := range faults {
			f := ""
			switch i {
			case 0:
				f = s.primary
			case 1:
				f = s.second
			case 2:
				f = s.third
			}
			faults[i] = join(f, shape)
		}
		out = append(out, Phase{Name: s.name, From: at, To: to, Faults: faults})
		at = to
	}
	return out
}

func join(fault, shaping string) string {
	if fault == "" {
		return shaping
	}
	return strings.Join([]string{fault, shaping}, ";")
}

// schedule draws each request's shape from the seed, in request order, so a
// seed always yields the same requests whatever the concurrency.
type schedule struct {
	rng *rand.Rand
}

func newSchedule(seed uint64) *schedule {
	return &schedule{rng: rand.New(rand.NewPCG(seed, 0xd1e11))}
}

// next draws the next request's shape: dialects evenly, half streamed, a
// quarter with tools, 30% cut short by max tokens (16-23 of the answer's
// 24), 3% sent twice under an Idempotency-Key, 1% invalid.
func (s *schedule) next() Shape {
	r := s.rng
	sh := Shape{
		Dialect:   Dialect(r.IntN(int(numDialects))),
		Stream:    r.IntN(2) == 0,
		Tools:     r.IntN(4) == 0,
		MaxTokens: 256,
		Words:     r.IntN(40),
	}
	if r.IntN(10) < 3 {
		sh.MaxTokens = 16 + r.IntN(8)
	}
	switch x := r.IntN(100); {
	case x < 3:
		sh.Idem = true
	case x < 4:
		sh.Invalid = true
	}
	return sh
}
