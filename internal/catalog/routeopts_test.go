package catalog

import (
	"strings"
	"testing"
)

// optsBase has a route pool p (exact model m, deployments a and b) and a
// pool o of another exact model (deployment c); line numbers below refer
// to it.
const optsBase = `deployments:
  - {id: a, provider: openai, base_url: "https://a.example", model: m, price: {input_per_mtok: 1, output_per_mtok: 2}}
  - {id: b, provider: openai, base_url: "https://b.example", model: m, price: {input_per_mtok: 1, output_per_mtok: 2}}
  - {id: c, provider: openai, base_url: "https://c.example", model: o, price: {input_per_mtok: 1, output_per_mtok: 2}}
  - {id: e, provider: openai, base_url: "https://e.example", model: e, price: {input_per_mtok: 1, output_per_mtok: 2}}
pools:
  - {id: p, model: m, deployments: [a, b], equivalence: {by: me, date: "2025-01-02", evidence: e}}
  - {id: o, model: other-model, deployments: [c]}
  - {id: same, model: m, deployments: [c]}
  - {id: emb, model: embed-1, kind: embeddings, deployments: [e]}
routes:
  - model: m
    pool: p
`

func optsEdit(t *testing.T, route string, pairs ...string) string {
	t.Helper()
	s := optsBase + route
	for i := 0; i+1 < len(pairs); i += 2 {
		if strings.Count(s, pairs[i]) != 1 {
			t.Fatalf("%q is not in the config exactly once", pairs[i])
		}
		s = strings.Replace(s, pairs[i], pairs[i+1], 1)
	}
	return s
}

// Unhappy paths first: every way a fallback, an exercise share, a shed rule
// or a quota is refused, each naming its field.
func TestRouteOptionRefusals(t *testing.T) {
	tests := []struct {
		name  string
		route string
		edits []string
		wants []want
	}{
		{"fallback without consent", "    fallback: {pool: o}\n", nil,
			[]want{{14, "routes[0].fallback.allow_model_change", "write allow_model_change: true"}}},
		{"fallback with consent false", "    fallback: {pool: o, allow_model_change: false}\n", nil,
			[]want{{14, "routes[0].fallback.allow_model_change", "never implied"}}},
		{"consent without a pool", "    fallback: {allow_model_change: true}\n", nil,
			[]want{{14, "routes[0].fallback.pool", "required with allow_model_change"}}},
		{"unknown fallback pool", "    fallback: {pool: nope, allow_model_change: true}\n", nil,
			[]want{{14, "routes[0].fallback.pool", `unknown pool "nope"`}}},
		{"fallback to the route's own pool", "    fallback: {pool: p, allow_model_change: true}\n", nil,
			[]want{{14, "routes[0].fallback.pool", `serves the route's own exact model "m"`}}},
		{"fallback pool of the same exact model", "    fallback: {pool: same, allow_model_change: true}\n", nil,
			[]want{{14, "routes[0].fallback.pool", `add its deployments to pool "p" instead`}}},
		{"fallback of another kind", "    fallback: {pool: emb, allow_model_change: true}\n", nil,
			[]want{{14, "routes[0].fallback.pool", "serves embeddings"}}},
		{"fallback sharing a deployment", "    fallback: {pool: o, allow_model_change: true}\n", []string{"deployments: [c]}\n  - {id: same", "deployments: [c, b]}\n  - {id: same"},
			[]want{{14, "routes[0].fallback.pool", `deployment "b" is in both`}}},
		{"exercise negative", "    exercise: -0.01\n", nil, []want{{14, "routes[0].exercise", "not a share between 0 and 0.2"}}},
		{"exercise too large", "    exercise: 0.5\n", nil, []want{{14, "routes[0].exercise", "not a share"}}},
		{"exercise not a number", "    exercise: .nan\n", nil, []want{{14, "routes[0].exercise", "not a share"}}},
		{"shed without at", "    shed: {below: high}\n", nil, []want{{14, "routes[0].shed.at", "required"}}},
		{"shed at past the quota", "    shed: {at: 1.5}\n", nil, []want{{14, "routes[0].shed.at", "0 < at ≤ 1"}}},
		{"shed below unknown", "    shed: {at: 0.8, below: urgent}\n", nil, []want{{14, "routes[0].shed.below", `"urgent" is not a priority`}}},
		{"shed below low", "    shed: {at: 0.8, below: low}\n", nil, []want{{14, "routes[0].shed.below", "sheds nothing"}}},
		{"negative quota", "", []string{`a.example", model: m, price`, `a.example", model: m, quota: {rpm: -1}, price`}, []want{{2, "deployments[0].quota", "must not be negative"}}},
		{"priority header", "routing: {priority_header: \"bad header\"}\n", nil, []want{{14, "routing.priority_header", "not an HTTP header name"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			requireProblems(t, parseProblems(t, optsEdit(t, tc.route, tc.edits...)), tc.wants...)
		})
	}
}

// A valid route with every option resolves: the fallback pool and its
// deployments, the share, the shed rule with its default protected
// priority; the priority header has its default.
func TestRouteOptionsResolve(t *testing.T) {
	src := optsEdit(t, "    fallback: {pool: o, allow_model_change: true}\n    exercise: 0.02\n    shed: {at: 0.8}\n",
		`a.example", model: m, price`, `a.example", model: m, quota: {rpm: 100, tpm: 50000}, price`)
	c, err := Parse([]byte(src), "opts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Build(c, "opts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rr, _ := s.Match(&Attributes{Model: "m"})
	if rr.Fallback == nil || rr.Fallback.Model != "other-model" || len(rr.FallbackDeployments) != 1 || rr.FallbackDeployments[0].ID != "c" {
		t.Fatalf("fallback = %+v %v", rr.Fallback, rr.FallbackDeployments)
	}
	if rr.Exercise != 0.02 || !rr.Shed.On() || rr.Shed.Below != "high" || rr.ShedBelow != PriorityHigh {
		t.Errorf("options = %v %+v %v", rr.Exercise, rr.Shed, rr.ShedBelow)
	}
	if got := rr.ModelOf(rr.Deployments[1]); got != "m" {
		t.Errorf("ModelOf(b) = %q", got)
	}
	if got := rr.ModelOfID("c"); got != "other-model" {
		t.Errorf("ModelOfID(c) = %q", got)
	}
	if q := rr.Deployments[0].Quota; q.RPM != 100 || q.TPM != 50000 {
		t.Errorf("quota = %+v", q)
	}
	if h := s.Config().Routing.PriorityHeader; h != DefaultPriorityHeader {
		t.Errorf("priority header = %q", h)
	}
	// The fallback pool is used: no "never used" warning for it.
	for _, w := range c.Warnings("opts.yaml") {
		if strings.Contains(w.Msg, `"o"`) {
			t.Errorf("warning about the fallback pool: %v", w)
		}
	}
}

// Allowed but doing nothing: a shed rule with no quota on any rung, and
// exercise on a pool of one.
func TestRouteOptionWarnings(t *testing.T) {
	src := optsEdit(t, "    shed: {at: 0.8}\n  - model: o\n    pool: o\n    exercise: 0.1\n")
	c, errs, warns := Check([]byte(src), "w.yaml")
	if len(errs) != 0 || c == nil {
		t.Fatalf("errors: %v", errs)
	}
	requireProblems(t, warns,
		want{14, "routes[0].shed", "no deployment of the route declares a quota"},
		want{17, "routes[1].exercise", "no secondary rung to exercise"},
	)
}

func TestParsePriority(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Priority
		ok   bool
	}{{"", PriorityNormal, true}, {"low", PriorityLow, true}, {"normal", PriorityNormal, true}, {"high", PriorityHigh, true},
		{"critical", PriorityCritical, true}, {"High", 0, false}, {"urgent", 0, false}} {
		if got, ok := ParsePriority(tc.in); got != tc.want || ok != tc.ok {
			t.Errorf("ParsePriority(%q) = %v, %v", tc.in, got, ok)
		}
	}
	if PriorityLow >= PriorityNormal || PriorityHigh >= PriorityCritical || Priority(0).String() != "none" || PriorityHigh.String() != "high" {
		t.Error("priorities are out of order")
	}
}
