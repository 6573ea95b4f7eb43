package route

import (
	"reflect"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/sticky"
)

// fakeSticky identifies every request as conversation key (when ok) and
// pins it to pin; it counts lookups.
type fakeSticky struct {
	key     sticky.Key
	ok      bool
	pin     string
	lookups int
}

func (f *fakeSticky) Key(model, header string, req *canonical.Request) (sticky.Key, bool) {
	if header != "" {
		return sticky.Key(len(header)), true
	}
	return f.key, f.ok
}

func (f *fakeSticky) Pinned(k sticky.Key) (string, bool) {
	f.lookups++
	if f.pin == "" || k != f.key && int(k) != len("conv-1") {
		return "", false
	}
	return f.pin, true
}

// latencyHealth is fakeHealth with observed first-token medians.
type latencyHealth struct {
	fakeHealth
	p50 map[string]time.Duration
}

func (h *latencyHealth) FirstTokenP50(id string) (time.Duration, bool) {
	d, ok := h.p50[id]
	return d, ok
}

const orderConfig = `
deployments:
  - {id: dear, provider: anthropic, base_url: "https://d.example", model: m, price: {input_per_mtok: 3, output_per_mtok: 15, cached_input_per_mtok: 0.3}, max_output_tokens: 4096, tenants: {deny: [globex]}}
  - {id: cheap, provider: openai, base_url: "https://c.example", model: m, price: {input_per_mtok: 1, output_per_mtok: 2}, max_output_tokens: 4096}
  - {id: cheap2, provider: openai, base_url: "https://c2.example", model: m, price: {input_per_mtok: 1, output_per_mtok: 2}, max_output_tokens: 4096}
  - {id: byok, provider: openai, base_url: "https://b.example", model: m, funding: byok, max_output_tokens: 4096}
pools:
  - {id: all, model: m, deployments: [dear, cheap, cheap2, byok], equivalence: {by: t, date: "2026-01-01", evidence: e}}
  - {id: solo, model: m, deployments: [cheap]}
routes:
  - {model: configured, pool: all}
  - {model: ranked, pool: all, rank: cost_latency}
  - {model: cache, pool: all, rank: cost_latency, sticky: {enabled: false}}
  - {model: unpinned, pool: all, sticky: {enabled: false}}
  - {model: solo, pool: solo, rank: cost_latency}
`

// TestOrder is stickiness and ranking, one case per rule: the pinned
// rung first while kept, never a dropped one, never for a first turn
// known only by its prompt; ranking by cache-adjusted cost, then
// latency, ties in pool order; stickiness over ranking.
func TestOrder(t *testing.T) {
	cfg, err := catalog.Parse([]byte(orderConfig), "order.yaml")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := catalog.Build(cfg, "order.yaml")
	if err != nil {
		t.Fatal(err)
	}
	first := func() *canonical.Request {
		return &canonical.Request{MaxTokens: 100, System: "s", Messages: []canonical.Message{{Role: canonical.RoleUser, Content: []canonical.Part{canonical.TextPart("q1")}}}}
	}
	later := first()
	later.Messages = append(later.Messages, canonical.Message{Role: canonical.RoleAssistant, Content: []canonical.Part{canonical.TextPart("a1")}},
		canonical.Message{Role: canonical.RoleUser, Content: []canonical.Part{canonical.TextPart("q2")}})
	const bigPrompt = 100_000 // tokens: the cache discount outweighs the list price
	tests := []struct {
		name   string
		model  string
		req    *canonical.Request
		header string
		input  int
		org    string
		sticky *fakeSticky
		health *latencyHealth
		order  []string
		pin    string // Plan.Pin
		stuck  string // Plan.Sticky
		keyed  bool
		costs  map[string]int64 // ranked rungs' costs
	}{
		// Stickiness: unhappy paths first.
		{name: "no pin: pool order", model: "configured", req: later, sticky: &fakeSticky{key: 7, ok: true},
			order: []string{"dear", "cheap", "cheap2", "byok"}, keyed: true},
		{name: "nothing identifies the conversation", model: "configured", req: later, sticky: &fakeSticky{pin: "cheap2"},
			order: []string{"dear", "cheap", "cheap2", "byok"}},
		{name: "a first turn known by its prompt is not moved", model: "configured", req: first(), sticky: &fakeSticky{key: 7, ok: true, pin: "cheap2"},
			order: []string{"dear", "cheap", "cheap2", "byok"}, pin: "cheap2", keyed: true},
		{name: "pinned rung dropped by health", model: "configured", req: later, sticky: &fakeSticky{key: 7, ok: true, pin: "cheap2"},
			health: &latencyHealth{fakeHealth: fakeHealth{down: map[string]string{"cheap2": "circuit_open"}}},
			order:  []string{"dear", "cheap", "byok"}, pin: "cheap2", keyed: true},
		{name: "pinned rung dropped by a gate", model: "configured", req: later, org: "globex", sticky: &fakeSticky{key: 7, ok: true, pin: "dear"},
			order: []string{"cheap", "cheap2", "byok"}, pin: "dear", keyed: true},
		{name: "stickiness off: no lookup", model: "unpinned", req: later, sticky: &fakeSticky{key: 7, ok: true, pin: "cheap2"},
			order: []string{"dear", "cheap", "cheap2", "byok"}},
		{name: "one rung: no lookup", model: "solo", req: later, sticky: &fakeSticky{key: 7, ok: true, pin: "cheap"},
			order: []string{"cheap"}},
		{name: "pinned rung first, the rest in order", model: "configured", req: later, sticky: &fakeSticky{key: 7, ok: true, pin: "cheap2"},
			order: []string{"cheap2", "dear", "cheap", "byok"}, pin: "cheap2", stuck: "cheap2", keyed: true},
		{name: "a header's conversation moves its first turn", model: "configured", req: first(), header: "conv-1", sticky: &fakeSticky{pin: "byok"},
			order: []string{"byok", "dear", "cheap", "cheap2"}, pin: "byok", stuck: "byok", keyed: true},
		// Ranking.
		{name: "configured order is the default", model: "configured", req: first(), health: &latencyHealth{p50: map[string]time.Duration{"byok": time.Millisecond}},
			order: []string{"dear", "cheap", "cheap2", "byok"}},
		{name: "cheapest first, unpriced last, ties in pool order", model: "ranked", req: first(),
			order: []string{"cheap", "cheap2", "dear", "byok"}, costs: map[string]int64{"dear": 1500, "cheap": 200, "cheap2": 200, "byok": -1}},
		{name: "at equal cost the faster", model: "ranked", req: first(),
			health: &latencyHealth{p50: map[string]time.Duration{"cheap": 300 * time.Millisecond, "cheap2": 100 * time.Millisecond, "dear": time.Millisecond}},
			order:  []string{"cheap2", "cheap", "dear", "byok"}},
		{name: "an unmeasured rung ranks as the fastest", model: "ranked", req: first(),
			health: &latencyHealth{p50: map[string]time.Duration{"cheap": 300 * time.Millisecond}},
			order:  []string{"cheap2", "cheap", "dear", "byok"}},
		{name: "the cache holder at its cached price", model: "cache", req: first(), input: bigPrompt, sticky: &fakeSticky{key: 7, ok: true, pin: "dear"},
			order: []string{"dear", "cheap", "cheap2", "byok"}, pin: "dear", keyed: true,
			costs: map[string]int64{"dear": 31500, "cheap": 100200, "cheap2": 100200, "byok": -1}},
		{name: "without the cache, list prices", model: "cache", req: first(), input: bigPrompt, sticky: &fakeSticky{key: 7, ok: true},
			order: []string{"cheap", "cheap2", "dear", "byok"}, keyed: true,
			costs: map[string]int64{"dear": 301500, "cheap": 100200, "cheap2": 100200, "byok": -1}},
		{name: "stickiness overrides ranking", model: "ranked", req: later, sticky: &fakeSticky{key: 7, ok: true, pin: "byok"},
			order: []string{"byok", "cheap", "cheap2", "dear"}, pin: "byok", stuck: "byok", keyed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.health
			if h == nil {
				h = &latencyHealth{}
			}
			req := *tt.req
			req.Model = tt.model
			in := &Input{Req: &req, Attrs: catalog.Attributes{Model: tt.model, Org: tt.org}, InputTokens: tt.input, Conversation: tt.header}
			if tt.sticky != nil {
				in.Sticky = tt.sticky
			}
			p := Make(snap, in, h, &fakeReady{})
			var order []string
			for _, d := range p.Order {
				order = append(order, d.ID)
			}
			if !reflect.DeepEqual(order, tt.order) {
				t.Errorf("order %v, want %v", order, tt.order)
			}
			if p.Pin != tt.pin || p.Sticky != tt.stuck || p.Keyed != tt.keyed {
				t.Errorf("pin %q sticky %q keyed %v, want %q %q %v", p.Pin, p.Sticky, p.Keyed, tt.pin, tt.stuck, tt.keyed)
			}
			if tt.sticky != nil && !tt.keyed && tt.sticky.lookups > 0 {
				t.Errorf("%d pin lookups for a request without a key", tt.sticky.lookups)
			}
			for _, c := range p.Candidates {
				rk, ranked := p.RankOf(c.Deployment.ID)
				if want, ok := tt.costs[c.Deployment.ID]; ok && (!ranked || rk.CostMicroUSD != want) {
					t.Errorf("%s: ranking %+v, want cost %d", c.Deployment.ID, rk, want)
				}
				if rk.CachedInput != (ranked && c.Deployment.ID == tt.pin) {
					t.Errorf("%s: cached input %v", c.Deployment.ID, rk.CachedInput)
				}
			}
			if ranked := len(p.Ranking) > 0; ranked != (snap.Config().Routes[p.Route.Index].Rank == catalog.RankCostLatency && len(p.Order) > 1) {
				t.Errorf("ranked %v", ranked)
			}
		})
	}
}

// TestOrderLastResort: a pin never resurrects a rung health refused;
// the last-resort rule is health's alone.
func TestOrderLastResort(t *testing.T) {
	snap := planSnap(t)
	req := &canonical.Request{Model: "frontier", MaxTokens: 100, System: "s", Messages: []canonical.Message{{Role: canonical.RoleUser, Content: []canonical.Part{canonical.TextPart("q")}}}}
	down := map[string]string{"us": "circuit_open", "eu": "circuit_open", "small": "circuit_open", "acme-only": "circuit_open", "not-globex": "circuit_open"}
	p := Make(snap, &Input{Req: req, Attrs: catalog.Attributes{Model: "frontier", Org: "acme"}, Conversation: "conv-1", Sticky: &fakeSticky{pin: "small"}},
		&fakeHealth{down: down}, &fakeReady{})
	if p.Verdict != LastResort || len(p.Order) != 1 || p.Order[0].ID != "us" || p.Sticky != "" || !p.Keyed {
		t.Errorf("verdict %v order %v sticky %q keyed %v", p.Verdict, p.Order, p.Sticky, p.Keyed)
	}
}
