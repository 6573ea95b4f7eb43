package route

import (
	"reflect"
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/catalog"
)

// fakeHealth refuses the deployments in down (with its reason) and
// chooses the first of them for a last resort unless spent.
type fakeHealth struct {
	down  map[string]string
	spent bool
}

func (h *fakeHealth) Check(id string) (bool, string) {
	if r := h.down[id]; r != "" {
		return false, r
	}
	return true, ""
}

func (h *fakeHealth) ChooseLastResort(ids []string) (string, bool) {
	if h.spent || len(ids) == 0 {
		return "", false
	}
	return ids[0], true
}

// fakeReady has no credential for the deployments in missing and cannot
// express tools on those in noTools.
type fakeReady struct {
	missing map[string]bool
	noTools map[string]bool
}

func (r *fakeReady) Missing(d *catalog.Deployment) (string, string) {
	if r.missing[d.ID] {
		return ReasonCredentialMissing, "credential environment variable X is not set"
	}
	return "", ""
}

func (r *fakeReady) Unsupported(d *catalog.Deployment, req *canonical.Request) string {
	if r.noTools[d.ID] && len(req.Tools) > 0 {
		return "tools"
	}
	return ""
}

const planConfig = `
deployments:
  - {id: us, provider: openai, base_url: "https://us.example", model: m, residency: us, price: {input_per_mtok: 1, output_per_mtok: 2}, max_output_tokens: 4096, context_window: 100000}
  - {id: eu, provider: openai, base_url: "https://eu.example", model: m, residency: eu, price: {input_per_mtok: 1, output_per_mtok: 2}, max_output_tokens: 8192, context_window: 100000}
  - {id: small, provider: openai, base_url: "https://s.example", model: m, price: {input_per_mtok: 1, output_per_mtok: 2}, max_output_tokens: 1024, context_window: 2000, capabilities: {images: false}}
  - {id: acme-only, provider: anthropic, base_url: "https://a.example", model: m, price: {input_per_mtok: 1, output_per_mtok: 2}, max_output_tokens: 4096, tenants: {allow: [acme]}}
  - {id: not-globex, provider: anthropic, base_url: "https://g.example", model: m, price: {input_per_mtok: 1, output_per_mtok: 2}, max_output_tokens: 4096, tenants: {deny: [globex]}}
  - {id: unpriced, provider: openai, base_url: "https://u.example", model: m, max_output_tokens: 4096}
pools:
  - {id: all, model: m, deployments: [us, eu, small, acme-only, not-globex, unpriced], equivalence: {by: t, date: "2026-01-01", evidence: e}}
  - {id: eu-only, model: m, deployments: [eu], equivalence: {by: t, date: "2026-01-01", evidence: e}}
  - {id: extract, model: m, deployments: [us]}
routes:
  - {model: frontier, match: {workload: extraction}, pool: extract}
  - {model: frontier, match: {residency: eu}, pool: eu-only}
  - {model: frontier, pool: all}
  - {model: strict, match: {team: search}, pool: all}
`

func planSnap(t testing.TB) *catalog.Snapshot {
	t.Helper()
	cfg, err := catalog.Parse([]byte(planConfig), "plan.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := catalog.Build(cfg, "plan.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPlan is the routing table's behaviour, one case per rule: match
// (first wins), every gate with its reason, order, last resort.
func TestPlan(t *testing.T) {
	snap := planSnap(t)
	text := func() *canonical.Request {
		return &canonical.Request{Model: "frontier", MaxTokens: 100, Messages: []canonical.Message{{Role: canonical.RoleUser, Content: []canonical.Part{{Type: canonical.PartText, Text: "hi"}}}}}
	}
	withImage := text()
	withImage.Messages[0].Content = append(withImage.Messages[0].Content, canonical.Part{Type: canonical.PartImage, ImageURL: "https://x/i.png"})
	withTools := text()
	withTools.Tools = []canonical.Tool{{Name: "f"}}
	long := text()
	long.MaxTokens = 2000
	huge := text()
	huge.MaxTokens = 9000
	tests := []struct {
		name    string
		req     *canonical.Request
		attrs   catalog.Attributes
		input   int
		health  *fakeHealth
		ready   *fakeReady
		verdict Verdict
		route   int // matched route index; -1 for none
		order   []string
		reasons map[string]string // deployment -> reason
	}{
		{name: "unknown model", req: &canonical.Request{Model: "nope"}, attrs: catalog.Attributes{Model: "nope"},
			verdict: UnknownModel, route: -1},
		{name: "no matching route", req: &canonical.Request{Model: "strict"}, attrs: catalog.Attributes{Model: "strict", Team: "ads"},
			verdict: NoMatchingRoute, route: -1},
		{name: "workload match wins first", req: text(), attrs: catalog.Attributes{Model: "frontier", Workload: "extraction", Team: "x"},
			verdict: Planned, route: 0, order: []string{"us"}},
		{name: "residency gates whatever route matched", req: text(), attrs: catalog.Attributes{Model: "frontier", Workload: "extraction", Residency: "eu"},
			verdict: NoRungs, route: 0, reasons: map[string]string{"us": ReasonResidency}},
		{name: "residency route", req: text(), attrs: catalog.Attributes{Model: "frontier", Residency: "eu"},
			verdict: Planned, route: 1, order: []string{"eu"}},
		{name: "catch-all, org acme: every priced rung", req: text(), attrs: catalog.Attributes{Model: "frontier", Org: "acme"},
			verdict: Planned, route: 2, order: []string{"us", "eu", "small", "acme-only", "not-globex"},
			reasons: map[string]string{"unpriced": ReasonPriceUnknown}},
		{name: "tenant lists", req: text(), attrs: catalog.Attributes{Model: "frontier", Org: "globex"},
			verdict: Planned, route: 2, order: []string{"us", "eu", "small"},
			reasons: map[string]string{"acme-only": ReasonTenant, "not-globex": ReasonTenant, "unpriced": ReasonPriceUnknown}},
		{name: "declared capability", req: withImage, attrs: catalog.Attributes{Model: "frontier", Org: "acme"},
			verdict: Planned, route: 2, order: []string{"us", "eu", "acme-only", "not-globex"},
			reasons: map[string]string{"small": ReasonUnsupported, "unpriced": ReasonPriceUnknown}},
		{name: "adapter capability", req: withTools, attrs: catalog.Attributes{Model: "frontier", Org: "acme"}, ready: &fakeReady{noTools: map[string]bool{"us": true}},
			verdict: Planned, route: 2, order: []string{"eu", "small", "acme-only", "not-globex"},
			reasons: map[string]string{"us": ReasonUnsupported, "unpriced": ReasonPriceUnknown}},
		{name: "output cap", req: long, attrs: catalog.Attributes{Model: "frontier", Org: "acme"},
			verdict: Planned, route: 2, order: []string{"us", "eu", "acme-only", "not-globex"},
			reasons: map[string]string{"small": ReasonMaxOutput, "unpriced": ReasonPriceUnknown}},
		{name: "context window", req: text(), input: 1950, attrs: catalog.Attributes{Model: "frontier", Org: "acme"},
			verdict: Planned, route: 2, order: []string{"us", "eu", "acme-only", "not-globex"},
			reasons: map[string]string{"small": ReasonContext, "unpriced": ReasonPriceUnknown}},
		{name: "credential missing", req: text(), attrs: catalog.Attributes{Model: "frontier", Org: "acme"}, ready: &fakeReady{missing: map[string]bool{"us": true}},
			verdict: Planned, route: 2, order: []string{"eu", "small", "acme-only", "not-globex"},
			reasons: map[string]string{"us": ReasonCredentialMissing, "unpriced": ReasonPriceUnknown}},
		{name: "health skips, order kept", req: text(), attrs: catalog.Attributes{Model: "frontier", Org: "acme"}, health: &fakeHealth{down: map[string]string{"us": "circuit_open"}},
			verdict: Planned, route: 2, order: []string{"eu", "small", "acme-only", "not-globex"},
			reasons: map[string]string{"us": "circuit_open", "unpriced": ReasonPriceUnknown}},
		{name: "last resort among health skips only", req: text(), attrs: catalog.Attributes{Model: "frontier", Residency: "eu"}, health: &fakeHealth{down: map[string]string{"eu": "circuit_open"}},
			verdict: LastResort, route: 1, order: []string{"eu"}, reasons: map[string]string{"eu": "circuit_open"}},
		{name: "last resort already spent", req: text(), attrs: catalog.Attributes{Model: "frontier", Residency: "eu"}, health: &fakeHealth{down: map[string]string{"eu": "throttled"}, spent: true},
			verdict: NoRungs, route: 1, reasons: map[string]string{"eu": "throttled"}},
		{name: "every rung gated: no last resort", req: huge, attrs: catalog.Attributes{Model: "frontier", Residency: "eu"},
			verdict: NoRungs, route: 1, reasons: map[string]string{"eu": ReasonMaxOutput}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, r := tt.health, tt.ready
			if h == nil {
				h = &fakeHealth{}
			}
			if r == nil {
				r = &fakeReady{}
			}
			p := Make(snap, &Input{Req: tt.req, Attrs: tt.attrs, InputTokens: tt.input}, h, r)
			if p.Verdict != tt.verdict {
				t.Fatalf("verdict %v, want %v", p.Verdict, tt.verdict)
			}
			if tt.route < 0 {
				if p.Route != nil {
					t.Fatalf("matched route %d, want none", p.Route.Index)
				}
				return
			}
			if p.Route == nil || p.Route.Index != tt.route {
				t.Fatalf("matched %+v, want route %d", p.Route, tt.route)
			}
			var order []string
			for _, d := range p.Order {
				order = append(order, d.ID)
			}
			if !reflect.DeepEqual(order, tt.order) {
				t.Errorf("order %v, want %v", order, tt.order)
			}
			for _, c := range p.Candidates {
				want := tt.reasons[c.Deployment.ID]
				if c.Reason != want || c.Kept != (want == "") {
					t.Errorf("%s: kept %v reason %q (%s), want %q", c.Deployment.ID, c.Kept, c.Reason, c.Detail, want)
				}
				if c.Reason != "" && c.Detail == "" {
					t.Errorf("%s: dropped as %s without a detail", c.Deployment.ID, c.Reason)
				}
			}
		})
	}
}

// A gate's detail is what the caller may read: it names the constraint,
// never a credential.
func TestPlanDetails(t *testing.T) {
	snap := planSnap(t)
	req := &canonical.Request{Model: "frontier", MaxTokens: 9000}
	p := Make(snap, &Input{Req: req, Attrs: catalog.Attributes{Model: "frontier", Residency: "eu"}}, &fakeHealth{}, &fakeReady{})
	if got := p.Detail(ReasonMaxOutput); got != "max_tokens 9000 exceeds this deployment's output cap of 8192" {
		t.Errorf("detail %q", got)
	}
	p = Make(snap, &Input{Req: &canonical.Request{Model: "frontier"}, Attrs: catalog.Attributes{Model: "frontier", Org: "globex"}}, &fakeHealth{}, &fakeReady{missing: map[string]bool{"us": true}})
	for _, c := range p.Candidates {
		if c.Reason == ReasonCredentialMissing && strings.Contains(p.Detail(ReasonTenant), "credential") {
			t.Errorf("a tenant detail mentions a credential: %q", p.Detail(ReasonTenant))
		}
	}
	if got := p.Reasons(); !reflect.DeepEqual(got, []string{ReasonCredentialMissing, ReasonTenant, ReasonPriceUnknown}) {
		t.Errorf("reasons %v", got)
	}
}
