package route

import (
	"testing"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/catalog"
)

// fakeQuality ejects the listed pool/deployment pairs.
type fakeQuality map[[2]string]bool

func (q fakeQuality) Ejected(pool, dep string) bool { return q[[2]string{pool, dep}] }

const qualityConfig = `
deployments:
  - {id: a, provider: openai, base_url: "https://a.example", model: m, funding: byok}
  - {id: b, provider: openai, base_url: "https://b.example", model: m, funding: byok}
  - {id: c, provider: openai, base_url: "https://c.example", model: m, funding: byok}
pools:
  - id: p
    model: m
    deployments: [a, b, c]
    equivalence: {by: ops, date: "2026-01-01", evidence: "eval:1"}
  - id: q
    model: m
    deployments: [c, b]
    equivalence: {by: ops, date: "2026-01-01", evidence: "eval:1"}
routes:
  - {model: m, pool: p}
  - {model: n, pool: q}
`

func TestQualityGate(t *testing.T) {
	c, err := catalog.Parse([]byte(qualityConfig), "q.yaml")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := catalog.Build(c, "q.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ej := fakeQuality{{"p", "b"}: true}
	tests := []struct {
		name    string
		model   string
		health  *fakeHealth
		q       Quality
		verdict Verdict
		order   []string
		dropped map[string]string
	}{
		{name: "ejected in its pool is dropped with its reason", model: "m", health: &fakeHealth{}, q: ej,
			verdict: Planned, order: []string{"a", "c"}, dropped: map[string]string{"b": ReasonQualityDiverged}},
		{name: "ejection is per pool", model: "n", health: &fakeHealth{}, q: ej, verdict: Planned, order: []string{"c", "b"}},
		{name: "never a last resort", model: "m", health: &fakeHealth{down: map[string]string{"a": "open", "c": "open"}}, q: ej,
			verdict: LastResort, order: []string{"a"}, dropped: map[string]string{"a": "open", "b": ReasonQualityDiverged, "c": "open"}},
		{name: "nil quality ejects nothing", model: "m", health: &fakeHealth{}, verdict: Planned, order: []string{"a", "b", "c"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := &Input{Req: &canonical.Request{Model: tc.model}, Attrs: catalog.Attributes{Model: tc.model}, Quality: tc.q}
			p := Make(snap, in, tc.health, nil)
			if p.Verdict != tc.verdict {
				t.Fatalf("verdict %v, want %v", p.Verdict, tc.verdict)
			}
			var order []string
			for _, d := range p.Order {
				order = append(order, d.ID)
			}
			if len(order) != len(tc.order) || (len(order) > 0 && order[0] != tc.order[0]) || (len(order) > 1 && order[1] != tc.order[1]) {
				t.Fatalf("order %v, want %v", order, tc.order)
			}
			for _, c := range p.Candidates {
				if want := tc.dropped[c.Deployment.ID]; c.Reason != want {
					t.Errorf("%s: reason %q, want %q", c.Deployment.ID, c.Reason, want)
				}
			}
		})
	}
}
