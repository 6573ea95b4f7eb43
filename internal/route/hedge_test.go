package route

import (
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/catalog"
)

// latHealth is fakeHealth that also reports first-token p95s.
type latHealth struct {
	fakeHealth
	p95     map[string]time.Duration
	samples int
}

func (h *latHealth) FirstTokenP95(id string) (time.Duration, int) {
	if _, ok := h.p95[id]; !ok {
		return 0, 0
	}
	return h.p95[id], h.samples
}

const hedgeConfig = `
deployments:
  - {id: a, provider: openai, base_url: "https://a.example", model: m, max_output_tokens: 4096, price: {input_per_mtok: 1, output_per_mtok: 2}}
  - {id: b, provider: openai, base_url: "https://b.example", model: m, max_output_tokens: 4096, price: {input_per_mtok: 1, output_per_mtok: 2}}
pools:
  - {id: two, model: m, deployments: [a, b], equivalence: {by: t, date: "2026-01-01", evidence: e}}
  - {id: one, model: m, deployments: [a]}
routes:
  - {model: fixed, pool: two, hedge: {after: 2s}, refusal_failover: {buffer_bytes: 1024}}
  - {model: p95, pool: two, hedge: {after: p95, min: 100ms, fallback: 3s}}
  - {model: solo, pool: one, hedge: {after: 2s}}
  - {model: plain, pool: two}
`

// The hedge decision, for a table of routes and health states: the
// threshold the server will use and explain shows, and when none fires.
func TestPlanHedge(t *testing.T) {
	cfg, err := catalog.Parse([]byte(hedgeConfig), "h.yaml")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := catalog.Build(cfg, "h.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		model   string
		health  Health
		want    Hedge
		verdict Verdict
		buffer  int
	}{
		{"no hedge configured", "plain", &fakeHealth{}, Hedge{}, Planned, 0},
		{"a fixed threshold", "fixed", &fakeHealth{}, Hedge{After: 2 * time.Second, Source: HedgeFixed}, Planned, 1024},
		{"one rung: no hedge", "solo", &fakeHealth{}, Hedge{}, Planned, 0},
		{"the second rung down: no hedge", "fixed", &fakeHealth{down: map[string]string{"b": "circuit_open"}}, Hedge{}, Planned, 1024},
		{"every rung down: a last-resort probe is never hedged", "fixed", &fakeHealth{down: map[string]string{"a": "circuit_open", "b": "circuit_open"}}, Hedge{}, LastResort, 0},
		{"p95 without a latency view: the fallback", "p95", &fakeHealth{}, Hedge{After: 3 * time.Second, Source: HedgeFallback}, Planned, 0},
		{"p95 with too few samples: the fallback", "p95",
			&latHealth{p95: map[string]time.Duration{"a": 700 * time.Millisecond}, samples: catalog.HedgeMinSamples - 1},
			Hedge{After: 3 * time.Second, Source: HedgeFallback, P95: 700 * time.Millisecond, Samples: catalog.HedgeMinSamples - 1}, Planned, 0},
		{"p95 of the first rung", "p95",
			&latHealth{p95: map[string]time.Duration{"a": 700 * time.Millisecond, "b": 9 * time.Second}, samples: 50},
			Hedge{After: 700 * time.Millisecond, Source: HedgeP95, P95: 700 * time.Millisecond, Samples: 50}, Planned, 0},
		{"p95 below the floor", "p95",
			&latHealth{p95: map[string]time.Duration{"a": 20 * time.Millisecond}, samples: 50},
			Hedge{After: 100 * time.Millisecond, Source: HedgeP95, P95: 20 * time.Millisecond, Samples: 50}, Planned, 0},
		{"p95 above the ceiling", "p95",
			&latHealth{p95: map[string]time.Duration{"a": time.Hour}, samples: 50},
			Hedge{After: catalog.MaxHedgeAfter, Source: HedgeP95, P95: time.Hour, Samples: 50}, Planned, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Make(snap, &Input{Req: &canonical.Request{}, Attrs: catalog.Attributes{Model: tt.model}}, tt.health, nil)
			if p.Verdict != tt.verdict || p.Hedge != tt.want || p.RefusalBuffer != tt.buffer {
				t.Errorf("verdict %v hedge %+v buffer %d; want %v %+v %d", p.Verdict, p.Hedge, p.RefusalBuffer, tt.verdict, tt.want, tt.buffer)
			}
		})
	}
}

// Deciding the hedge allocates nothing, with a p95 read included.
func TestPlanHedgeAllocates(t *testing.T) {
	cfg, err := catalog.Parse([]byte(hedgeConfig), "h.yaml")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := catalog.Build(cfg, "h.yaml")
	if err != nil {
		t.Fatal(err)
	}
	h := &latHealth{p95: map[string]time.Duration{"a": time.Second}, samples: 50}
	in := &Input{Req: &canonical.Request{}, Attrs: catalog.Attributes{Model: "p95"}}
	var p Plan
	MakeInto(&p, snap, in, h, nil)
	if n := testing.AllocsPerRun(100, func() { MakeInto(&p, snap, in, h, nil) }); n != 0 {
		t.Errorf("%v allocations per plan", n)
	}
}
