package route

import (
	"reflect"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/catalog"
)

// optsConfig: route "frontier" (pool p: a, b, c of exact model m) falls
// back to pool o (x, y: exact model other); route "plain" has the same pool
// and no fallback; "ex" exercises 2% of its traffic; "shed" sheds below
// high at 80% of b's quota; "one" has a single rung.
const optsConfig = `
deployments:
  - {id: a, provider: openai, base_url: "https://a.example", model: m, price: {input_per_mtok: 1, output_per_mtok: 2}, max_output_tokens: 4096}
  - {id: b, provider: openai, base_url: "https://b.example", model: m, price: {input_per_mtok: 1, output_per_mtok: 2}, max_output_tokens: 4096, quota: {rpm: 10, tpm: 10000}}
  - {id: c, provider: openai, base_url: "https://c.example", model: m, price: {input_per_mtok: 1, output_per_mtok: 2}, max_output_tokens: 4096}
  - {id: x, provider: openai, base_url: "https://x.example", model: o, residency: us, price: {input_per_mtok: 5, output_per_mtok: 9}, max_output_tokens: 4096}
  - {id: y, provider: anthropic, base_url: "https://y.example", model: o, price: {input_per_mtok: 5, output_per_mtok: 9}, max_output_tokens: 4096}
pools:
  - {id: p, model: m, deployments: [a, b, c], equivalence: {by: t, date: "2026-01-01", evidence: e}}
  - {id: o, model: other, deployments: [x, y], equivalence: {by: t, date: "2026-01-01", evidence: e}}
  - {id: one, model: m, deployments: [a]}
routes:
  - {model: frontier, pool: p, fallback: {pool: o, allow_model_change: true}, exercise: 0.2}
  - {model: plain, pool: p}
  - {model: ex, pool: p, exercise: 0.02}
  - {model: shed, pool: p, shed: {at: 0.8}}
  - {model: one, pool: one, exercise: 0.2, fallback: {pool: o, allow_model_change: true}}
  - {model: both, pool: p, exercise: 0.2, shed: {at: 0.8}}
`

func optsSnap(t testing.TB) *catalog.Snapshot {
	t.Helper()
	cfg, err := catalog.Parse([]byte(optsConfig), "opts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := catalog.Build(cfg, "opts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// counter is the server's turn taker: each call takes the next turn.
type counter struct{ n atomic.Uint64 }

func (c *counter) Turn(*catalog.ResolvedRoute) uint64 { return c.n.Add(1) - 1 }

// fixedRates reports fixed rates per deployment.
type fixedRates map[string][2]int

func (r fixedRates) Rate(id string) (int, int) { return r[id][0], r[id][1] }

func optsReq(model string) *Input {
	req := &canonical.Request{Model: model, MaxTokens: 100}
	return &Input{Req: req, Attrs: catalog.Attributes{Model: model}, InputTokens: 50}
}

func ids(ds []*catalog.Deployment) []string {
	out := []string{}
	for _, d := range ds {
		out = append(out, d.ID)
	}
	return out
}

// A fallback pool's rungs come after every rung of the route's own pool,
// gated and health-checked the same way and marked as changing the model;
// a route without a fallback never plans another model's rung.
func TestPlanFallback(t *testing.T) {
	snap := optsSnap(t)
	tests := []struct {
		name      string
		model     string
		residency string
		down      map[string]string
		verdict   Verdict
		order     []string
		changes   []string // candidates marked as changing the model
		reasons   map[string]string
	}{
		{name: "no fallback: every own rung down is never another model", model: "plain", down: map[string]string{"a": "circuit_open", "b": "circuit_open", "c": "circuit_open"},
			verdict: LastResort, order: []string{"a"}, reasons: map[string]string{"a": "circuit_open", "b": "circuit_open", "c": "circuit_open"}},
		{name: "own rungs first, then the fallback's", model: "frontier",
			verdict: Planned, order: []string{"a", "b", "c", "x", "y"}, changes: []string{"x", "y"}},
		{name: "every own rung down: the other model serves", model: "frontier", down: map[string]string{"a": "circuit_open", "b": "throttled", "c": "circuit_open"},
			verdict: Planned, order: []string{"x", "y"}, changes: []string{"x", "y"}, reasons: map[string]string{"a": "circuit_open", "b": "throttled", "c": "circuit_open"}},
		{name: "fallback rungs are gated too", model: "frontier", residency: "us",
			verdict: Planned, order: []string{"x"}, changes: []string{"x", "y"},
			reasons: map[string]string{"a": ReasonResidency, "b": ReasonResidency, "c": ReasonResidency, "y": ReasonResidency}},
		{name: "fallback health-checked too", model: "frontier", down: map[string]string{"x": "circuit_open"},
			verdict: Planned, order: []string{"a", "b", "c", "y"}, changes: []string{"x", "y"}, reasons: map[string]string{"x": "circuit_open"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := optsReq(tt.model)
			in.Attrs.Residency = tt.residency
			p := Make(snap, in, &fakeHealth{down: tt.down}, &fakeReady{})
			if p.Verdict != tt.verdict {
				t.Fatalf("verdict %v, want %v", p.Verdict, tt.verdict)
			}
			if got := ids(p.Order); !reflect.DeepEqual(got, tt.order) {
				t.Errorf("order %v, want %v", got, tt.order)
			}
			var changes []string
			for _, c := range p.Candidates {
				if c.ModelChange {
					changes = append(changes, c.Deployment.ID)
					if p.ModelOf(c.Deployment) != "other" {
						t.Errorf("%s serves %q", c.Deployment.ID, p.ModelOf(c.Deployment))
					}
				} else if p.ModelOf(c.Deployment) != "m" {
					t.Errorf("%s serves %q", c.Deployment.ID, p.ModelOf(c.Deployment))
				}
				if want := tt.reasons[c.Deployment.ID]; c.Reason != want {
					t.Errorf("%s: reason %q, want %q", c.Deployment.ID, c.Reason, want)
				}
			}
			if !reflect.DeepEqual(changes, tt.changes) {
				t.Errorf("model-changing candidates %v, want %v", changes, tt.changes)
			}
		})
	}
}

// The exercise share is exact and spread evenly: over 10,000 eligible
// requests at 2%, 200 go to a secondary first (±1 point allows 100..300),
// in turn through the secondaries, never to the fallback pool; the rest
// keep the configured order.
func TestExerciseShare(t *testing.T) {
	snap := optsSnap(t)
	for _, tt := range []struct {
		model string
		share float64
	}{{"ex", 0.02}, {"frontier", 0.2}} {
		t.Run(tt.model, func(t *testing.T) {
			turns := &counter{}
			const n = 10_000
			by := map[string]int{}
			gap, last := 0, -1
			for i := range n {
				in := optsReq(tt.model)
				in.Turns = turns
				p := Make(snap, in, &fakeHealth{}, &fakeReady{})
				if p.Exercise == nil {
					if p.Order[0].ID != "a" {
						t.Fatalf("request %d: order %v without an exercise", i, ids(p.Order))
					}
					continue
				}
				by[p.Exercise.ID]++
				if p.Order[0] != p.Exercise || p.Order[1].ID != "a" {
					t.Fatalf("request %d: order %v for an exercise of %s", i, ids(p.Order), p.Exercise.ID)
				}
				if last >= 0 {
					gap = max(gap, i-last)
				}
				last = i
			}
			total := by["b"] + by["c"]
			if want := int(float64(n) * tt.share); total != want || by["b"] != by["c"] {
				t.Errorf("exercised %v (%d), want %d split evenly between b and c", by, total, want)
			}
			if share := float64(total) / n; share < tt.share-0.01 || share > tt.share+0.01 {
				t.Errorf("share %.4f outside %.2f±0.01", share, tt.share)
			}
			if want := int(1/tt.share) + 1; gap > want {
				t.Errorf("exercises %d requests apart, want evenly spread (≤ %d)", gap, want)
			}
			t.Logf("%s: exercise %.2f%% of %d requests (%v)", tt.model, 100*float64(total)/n, n, by)
		})
	}
}

// Concurrent planners taking turns from one counter keep the share exact.
func TestExerciseShareConcurrent(t *testing.T) {
	snap := optsSnap(t)
	turns := &counter{}
	var exercised atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1250 {
				in := optsReq("ex")
				in.Turns = turns
				if Make(snap, in, &fakeHealth{}, &fakeReady{}).Exercise != nil {
					exercised.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if got := exercised.Load(); got != 200 {
		t.Errorf("exercised %d of 10000, want 200", got)
	}
}

// Only requests with two own rungs or more are eligible, and only they
// take a turn; explain's peek takes none; a rung past its shed share is
// not exercised.
func TestExerciseEligibility(t *testing.T) {
	snap := optsSnap(t)
	turns := &counter{}
	// One own rung (a fallback pool does not count): no turn taken.
	in := optsReq("one")
	in.Turns = turns
	if p := Make(snap, in, &fakeHealth{}, &fakeReady{}); p.Exercise != nil || turns.n.Load() != 0 {
		t.Errorf("single-rung route exercised %v, turns %d", p.Exercise, turns.n.Load())
	}
	// Two own rungs down of three: one left, no exercise.
	in = optsReq("frontier")
	in.Turns = turns
	if p := Make(snap, in, &fakeHealth{down: map[string]string{"b": "circuit_open", "c": "circuit_open"}}, &fakeReady{}); p.Exercise != nil || turns.n.Load() != 0 {
		t.Errorf("one kept own rung exercised %v, turns %d", p.Exercise, turns.n.Load())
	}
	// No Turns (a caller that does not exercise): nothing.
	if p := Make(snap, optsReq("frontier"), &fakeHealth{}, &fakeReady{}); p.Exercise != nil {
		t.Errorf("exercised without turns")
	}
	// b past its shed share: its exercise turns pass (the request keeps
	// the configured order, and is not shed for it); c's are taken.
	turns = &counter{}
	by := map[string]int{}
	for range 100 {
		in := optsReq("both")
		in.Turns, in.Rates, in.Priority = turns, fixedRates{"b": {9, 0}}, catalog.PriorityLow
		p := Make(snap, in, &fakeHealth{}, &fakeReady{})
		if p.Verdict != Planned {
			t.Fatalf("verdict %v", p.Verdict)
		}
		if p.Exercise != nil {
			by[p.Exercise.ID]++
		} else if p.Order[0].ID != "a" {
			t.Fatalf("order %v", ids(p.Order))
		}
	}
	if by["b"] != 0 || by["c"] != 10 {
		t.Errorf("exercised %v, want c alone, 10 times", by)
	}
	// A pinned conversation keeps its rung first and takes no turn.
	turns = &counter{}
	for range 100 {
		in := optsReq("frontier")
		in.Turns, in.Sticky, in.Conversation = turns, &fakeSticky{pin: "b"}, "conv-1"
		p := Make(snap, in, &fakeHealth{}, &fakeReady{})
		if p.Exercise != nil || p.Order[0].ID != "b" {
			t.Fatalf("pinned conversation: exercised %v, order %v", p.Exercise, ids(p.Order))
		}
	}
	if turns.n.Load() != 0 {
		t.Errorf("pinned conversations took %d exercise turns", turns.n.Load())
	}
}

// Shedding: below the protected priority, a request is refused when the
// rung it would go to is past the share of its quota; the protected
// classes and rungs without a quota never are.
func TestPlanShed(t *testing.T) {
	snap := optsSnap(t)
	// b's quota: 10 rpm, 10000 tpm; share 0.8: 8 requests, 8000 tokens.
	// A request counts 150 tokens (50 prompt + 100 max).
	tests := []struct {
		name     string
		priority catalog.Priority
		down     map[string]string
		rates    fixedRates
		verdict  Verdict
	}{
		{name: "low on b past 8 rpm", priority: catalog.PriorityLow, down: map[string]string{"a": "circuit_open"}, rates: fixedRates{"b": {8, 0}}, verdict: Shed},
		{name: "normal (the default) on b past 8 rpm", down: map[string]string{"a": "circuit_open"}, rates: fixedRates{"b": {8, 0}}, verdict: Shed},
		{name: "normal past the tpm share", priority: catalog.PriorityNormal, down: map[string]string{"a": "circuit_open"}, rates: fixedRates{"b": {0, 7900}}, verdict: Shed},
		{name: "normal within the share", priority: catalog.PriorityNormal, down: map[string]string{"a": "circuit_open"}, rates: fixedRates{"b": {7, 7850}}, verdict: Planned},
		{name: "high is protected", priority: catalog.PriorityHigh, down: map[string]string{"a": "circuit_open"}, rates: fixedRates{"b": {50, 90000}}, verdict: Planned},
		{name: "critical is protected", priority: catalog.PriorityCritical, down: map[string]string{"a": "circuit_open"}, rates: fixedRates{"b": {50, 90000}}, verdict: Planned},
		{name: "the rung it goes to has no quota", priority: catalog.PriorityLow, rates: fixedRates{"b": {50, 90000}}, verdict: Planned},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := optsReq("shed")
			in.Priority, in.Rates = tt.priority, tt.rates
			p := Make(snap, in, &fakeHealth{down: tt.down}, &fakeReady{})
			if p.Verdict != tt.verdict {
				t.Fatalf("verdict %v, want %v (order %v)", p.Verdict, tt.verdict, ids(p.Order))
			}
			if tt.verdict != Shed {
				return
			}
			sh := p.Shedding
			if len(p.Order) != 0 || sh.Deployment.ID != "b" || sh.Below != catalog.PriorityHigh || sh.At != 0.8 || sh.Quota.RPM != 10 || sh.Need != 150 ||
				sh.Requests != tt.rates["b"][0] || sh.Tokens != tt.rates["b"][1] {
				t.Errorf("shed %+v, order %v", sh, ids(p.Order))
			}
		})
	}
	// A route without a shed rule never sheds.
	in := optsReq("plain")
	in.Priority, in.Rates = catalog.PriorityLow, fixedRates{"a": {1000, 1000000}, "b": {1000, 1000000}}
	if p := Make(snap, in, &fakeHealth{}, &fakeReady{}); p.Verdict != Planned {
		t.Errorf("no shed rule: verdict %v", p.Verdict)
	}
}

func TestFits(t *testing.T) {
	q := catalog.Quota{RPM: 10, TPM: 1000}
	for _, tc := range []struct {
		reqs, toks, need int
		want             bool
	}{{0, 0, 0, true}, {7, 0, 0, true}, {8, 0, 0, false}, {0, 700, 100, true}, {0, 700, 101, false}} {
		if got := Fits(q, 0.8, tc.reqs, tc.toks, tc.need); got != tc.want {
			t.Errorf("Fits(%d, %d, %d) = %v", tc.reqs, tc.toks, tc.need, got)
		}
	}
	if !Fits(catalog.Quota{TPM: 100}, 0.5, 1_000_000, 0, 50) {
		t.Error("an rpm of 0 limits no requests")
	}
}

// BenchmarkMakeOptions is one request's selection on a route that falls
// back, exercises and sheds: still nothing allocated.
func BenchmarkMakeOptions(b *testing.B) {
	snap := optsSnap(b)
	turns := &counter{}
	rates := fixedRates{"b": {3, 300}}
	in := optsReq("frontier")
	in.Turns, in.Rates, in.Priority = turns, rates, catalog.PriorityLow
	h, r := &fakeHealth{}, &fakeReady{}
	var p Plan
	b.ReportAllocs()
	for b.Loop() {
		if MakeInto(&p, snap, in, h, r); len(p.Order) != 5 {
			b.Fatal("wrong plan")
		}
	}
}
