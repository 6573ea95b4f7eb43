package catalog

import (
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// hedgeBase is a route over a pool of two deployments (p) and one over a
// pool of one (solo); the route options go at line 10.
const hedgeBase = `deployments:
  - {id: a, provider: openai, base_url: "https://a.example", model: m, price: {input_per_mtok: 1, output_per_mtok: 2}}
  - {id: b, provider: openai, base_url: "https://b.example", model: m, price: {input_per_mtok: 1, output_per_mtok: 2}}
pools:
  - {id: p, model: m, deployments: [a, b], equivalence: {by: me, date: "2025-01-02", evidence: e}}
  - {id: solo, model: s, deployments: [a]}
routes:
  - model: m
    pool: p
`

// Unhappy paths first: every way a hedge or a refusal failover is
// refused, each naming its field.
func TestHedgeRefusals(t *testing.T) {
	tests := []struct {
		name  string
		route string
		want  want
	}{
		{"no threshold", "    hedge: {}\n", want{10, "routes[0].hedge.after", "required: a duration from 50ms to 5m0s"}},
		{"a number without unit", "    hedge: {after: 2}\n", want{10, "routes[0].hedge.after", `has no unit`}},
		{"a word that is not p95", "    hedge: {after: p99}\n", want{10, "routes[0].hedge.after", "or p95"}},
		{"too soon", "    hedge: {after: 10ms}\n", want{10, "routes[0].hedge.after", "10ms is not between 50ms and 5m0s"}},
		{"too late", "    hedge: {after: 6m}\n", want{10, "routes[0].hedge.after", "not between"}},
		{"min with a fixed threshold", "    hedge: {after: 1s, min: 100ms}\n", want{10, "routes[0].hedge", "apply to after: p95 only"}},
		{"a p95 floor too low", "    hedge: {after: p95, min: 1ms}\n", want{10, "routes[0].hedge.min", "1ms is not between 50ms"}},
		{"a fallback below the floor", "    hedge: {after: p95, min: 2s, fallback: 1s}\n", want{10, "routes[0].hedge.fallback", "not between min (2s)"}},
		{"an unknown hedge key", "    hedge: {after: 1s, percentile: 99}\n", want{10, "routes[0].hedge.percentile", "unknown"}},
		{"a buffer too large", "    refusal_failover: {buffer_bytes: 65537}\n", want{10, "routes[0].refusal_failover.buffer_bytes", "65537 is not between 1 and 65536"}},
		{"a negative buffer", "    refusal_failover: {buffer_bytes: -1}\n", want{10, "routes[0].refusal_failover.buffer_bytes", "not between 1 and 65536"}},
		{"an unknown refusal key", "    refusal_failover: {bytes: 10}\n", want{10, "routes[0].refusal_failover.bytes", "unknown"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			requireProblems(t, parseProblems(t, hedgeBase+tc.route), tc.want)
		})
	}
}

// Valid settings resolve onto the route, with their defaults; unset, the
// route neither hedges nor fails over on a refusal.
func TestHedgeResolve(t *testing.T) {
	tests := []struct {
		name   string
		route  string
		hedge  string // the resolved hedge, or "" for none
		buffer int
	}{
		{"off by default", "", "", 0},
		{"a fixed threshold", "    hedge: {after: 1500ms}\n", "1.5s", 0},
		{"p95 with its defaults", "    hedge: {after: p95}\n", "p95 min=50ms fallback=2s", 0},
		{"p95 with its own bounds", "    hedge: {after: p95, min: 200ms, fallback: 3s}\n", "p95 min=200ms fallback=3s", 0},
		{"refusal failover with the default buffer", "    refusal_failover: {}\n", "", DefaultRefusalBuffer},
		{"refusal failover with its own buffer", "    refusal_failover: {buffer_bytes: 65536}\n", "", 65536},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(hedgeBase+tc.route), "h.yaml")
			if err != nil {
				t.Fatal(err)
			}
			s, err := Build(c, "h.yaml")
			if err != nil {
				t.Fatal(err)
			}
			rr, _ := s.Match(&Attributes{Model: "m"})
			got := ""
			if h := rr.Hedge; h != nil {
				got = h.After.String()
				if h.After.P95 {
					got += " min=" + h.Min.String() + " fallback=" + h.Fallback.String()
				}
			}
			if got != tc.hedge || rr.RefusalBuffer != tc.buffer {
				t.Errorf("hedge %q buffer %d, want %q %d", got, rr.RefusalBuffer, tc.hedge, tc.buffer)
			}
			// The config as served writes the threshold back as it reads it.
			out, err := yaml.Marshal(s.Config().Routes[0])
			if err != nil {
				t.Fatal(err)
			}
			if tc.hedge != "" && !strings.Contains(string(out), "after: "+strings.Fields(tc.hedge)[0]) {
				t.Errorf("served config:\n%s", out)
			}
		})
	}
	// Defaults are written into the snapshot's copy, never into the config
	// it was built from.
	c, err := Parse([]byte(hedgeBase), "h.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c.Routes[0].Hedge = &Hedge{After: HedgeAfter{P95: true}}
	if _, err := Build(c, "h.yaml"); err != nil {
		t.Fatal(err)
	}
	if h := c.Routes[0].Hedge; h.Min != 0 || h.Fallback != 0 {
		t.Errorf("Build wrote defaults into its input: %+v", h)
	}
	if d := time.Duration(DefaultHedgeMin); d != MinHedgeAfter {
		t.Errorf("the default floor %v is not the least threshold %v", d, MinHedgeAfter)
	}
}

// Allowed but doing nothing: a hedge, or refusal failover, on a route
// with nowhere to go.
func TestHedgeWarnings(t *testing.T) {
	src := hedgeBase + "  - model: s\n    pool: solo\n    hedge: {after: 1s}\n    refusal_failover: {}\n"
	c, errs, warns := Check([]byte(src), "w.yaml")
	if len(errs) != 0 || c == nil {
		t.Fatalf("errors: %v", errs)
	}
	requireProblems(t, warns,
		want{12, "routes[1].hedge", "no rung of the same model to hedge to"},
		want{13, "routes[1].refusal_failover", "nowhere to move on to"},
	)
}
