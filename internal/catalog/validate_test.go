package catalog

import (
	"strings"
	"testing"
)

// base is a valid two-deployment config; the line numbers in the
// cases below refer to it.
const base = `deployments:
  - id: a
    provider: openai
    base_url: https://api.openai.com
    model: gpt-4.1
    price: {input_per_mtok: 2, output_per_mtok: 8}
  - id: b
    provider: anthropic
    base_url: https://api.anthropic.com
    model: claude
    price: {input_per_mtok: 3, output_per_mtok: 15}
pools:
  - id: p
    model: m
    deployments: [a, b]
    equivalence: {by: me, date: "2025-01-02", evidence: "sha256:abc"}
routes:
  - model: m
    pool: p
`

// edit returns base with old replaced by new, which must occur exactly once.
func edit(t *testing.T, pairs ...string) string {
	t.Helper()
	s := base
	for i := 0; i+1 < len(pairs); i += 2 {
		if strings.Count(s, pairs[i]) != 1 {
			t.Fatalf("%q is not in base exactly once", pairs[i])
		}
		s = strings.Replace(s, pairs[i], pairs[i+1], 1)
	}
	return s
}

func TestValidateRefusals(t *testing.T) {
	tests := []struct {
		name  string
		edits []string
		wants []want
	}{
		// deployments
		{"id missing", []string{"  - id: a\n    provider: openai", "  - provider: openai"}, []want{{2, "deployments[0].id", "required"}}},
		{"id pattern", []string{"id: a\n", "id: Alpha\n"}, []want{{2, "deployments[0].id", "must match"}}},
		{"id leading dash", []string{"id: a\n", "id: -a\n"}, []want{{2, "deployments[0].id", "must match"}}},
		{"id duplicate", []string{"id: b\n", "id: a\n", "[a, b]", "[a]", "    equivalence: {by: me, date: \"2025-01-02\", evidence: \"sha256:abc\"}\n", ""},
			[]want{{7, "deployments[1].id", `duplicate deployment id "a" (first at line 2)`}}},
		{"provider missing", []string{"    provider: openai\n", ""}, []want{{2, "deployments[0].provider", "required"}}},
		{"provider unknown", []string{"provider: openai", "provider: azure"}, []want{{3, "deployments[0].provider", `unknown provider kind "azure"`}}},
		{"base_url missing", []string{"    base_url: https://api.openai.com\n", ""}, []want{{2, "deployments[0].base_url", "required"}}},
		{"base_url relative", []string{"https://api.openai.com", "api.openai.com/v1"}, []want{{4, "deployments[0].base_url", "absolute http"}}},
		{"base_url scheme", []string{"https://api.openai.com", "ftp://api.openai.com"}, []want{{4, "deployments[0].base_url", "absolute http"}}},
		{"base_url no host", []string{"https://api.openai.com", "https:///v1"}, []want{{4, "deployments[0].base_url", "no host"}}},
		{"base_url query", []string{"https://api.openai.com", "https://api.openai.com/v1?key=x"}, []want{{4, "deployments[0].base_url", "query"}}},
		{"base_url credentials", []string{"https://api.openai.com", "https://u:secret@api.openai.com"}, []want{{4, "deployments[0].base_url", "credential_env"}}},
		{"model missing", []string{"    model: gpt-4.1\n", ""}, []want{{2, "deployments[0].model", "required"}}},
		{"credential_env not a name", []string{"    model: gpt-4.1\n", "    model: gpt-4.1\n    credential_env: sk-live-123\n"}, []want{{6, "deployments[0].credential_env", "not an environment variable name"}}},
		{"funding unknown", []string{"    model: gpt-4.1\n", "    model: gpt-4.1\n    funding: free\n"}, []want{{6, "deployments[0].funding", `"free" must be "host" or "byok"`}}},
		{"price negative", []string{"{input_per_mtok: 2,", "{input_per_mtok: -2,"}, []want{{6, "deployments[0].price.input_per_mtok", "≥ 0"}}},
		{"price NaN", []string{"output_per_mtok: 8}", "output_per_mtok: .nan}"}, []want{{6, "deployments[0].price.output_per_mtok", "finite"}}},
		{"price Inf", []string{"output_per_mtok: 8}", "output_per_mtok: .inf, cached_input_per_mtok: -1}"},
			[]want{{6, "deployments[0].price.output_per_mtok", "finite"}, {6, "deployments[0].price.cached_input_per_mtok", "≥ 0"}}},
		{"aws keys on a non-bedrock deployment", []string{"    model: gpt-4.1\n", "    model: gpt-4.1\n    aws: {}\n"}, []want{{2, "deployments[0].region", "required to sign"}, {6, "deployments[0].aws", "Bedrock requests only"}}},
		{"health negative", []string{"    model: gpt-4.1\n", "    model: gpt-4.1\n    health:\n      open_for: -1s\n"}, []want{{7, "deployments[0].health.open_for", "negative"}}},
		{"health error rate over 1", []string{"    model: gpt-4.1\n", "    model: gpt-4.1\n    health:\n      max_error_rate: 1.5\n"}, []want{{7, "deployments[0].health.max_error_rate", "at most 1"}}},
		{"health unknown key", []string{"    model: gpt-4.1\n", "    model: gpt-4.1\n    health:\n      threshold: 3\n"}, []want{{7, "deployments[0].health.threshold", "unknown key"}}},
		{"context_window negative", []string{"    model: gpt-4.1\n", "    model: gpt-4.1\n    context_window: -1\n"}, []want{{6, "deployments[0].context_window", "negative"}}},
		{"max_output_tokens negative", []string{"    model: gpt-4.1\n", "    model: gpt-4.1\n    max_output_tokens: -1\n"}, []want{{6, "deployments[0].max_output_tokens", "negative"}}},
		{"max_output over window", []string{"    model: gpt-4.1\n", "    model: gpt-4.1\n    context_window: 1000\n    max_output_tokens: 2000\n"},
			[]want{{7, "deployments[0].max_output_tokens", "2000 exceeds context_window 1000"}}},
		{"first_byte over total", []string{"    model: gpt-4.1\n", "    model: gpt-4.1\n    timeouts:\n      first_byte: 2m\n      total: 1m\n"},
			[]want{{7, "deployments[0].timeouts.first_byte", "2m0s exceeds total 1m0s"}}},
		{"idle over total", []string{"    model: gpt-4.1\n", "    model: gpt-4.1\n    timeouts: {idle: 11m}\n"},
			[]want{{6, "deployments[0].timeouts.idle", "exceeds total 10m0s"}}},
		// pools
		{"pool id missing", []string{"  - id: p\n    model: m", "  - model: m"}, []want{{13, "pools[0].id", "required"}}},
		{"pool id duplicate", []string{"routes:", "  - id: p\n    model: m\n    deployments: [a]\nroutes:"}, []want{{17, "pools[1].id", `duplicate pool id "p" (first at line 13)`}}},
		{"pool model missing", []string{"    model: m\n", ""}, []want{{13, "pools[0].model", "required"}}},
		{"pool deployments missing", []string{"    deployments: [a, b]\n", ""}, []want{{13, "pools[0].deployments", "required"}}},
		{"pool deployments empty", []string{"[a, b]", "[]"}, []want{{15, "pools[0].deployments", "required"}}},
		{"pool unknown deployment", []string{"[a, b]", "[a, c]"}, []want{{15, "pools[0].deployments[1]", `unknown deployment "c"`}}},
		{"pool repeats a deployment", []string{"[a, b]", "\n      - a\n      - b\n      - a"},
			[]want{{18, "pools[0].deployments[2]", `deployment "a" is listed twice in the pool (first at line 16)`}}},
		{"pool repeats on one line", []string{"[a, b]", "[a, b, b]"}, []want{{15, "pools[0].deployments[2]", "listed twice"}}},
		{"multi-deployment pool uncertified", []string{"    equivalence: {by: me, date: \"2025-01-02\", evidence: \"sha256:abc\"}\n", ""},
			[]want{{13, "pools[0].equivalence", "a pool of 2 deployments needs an equivalence certification"}}},
		{"certification without by", []string{"by: me, ", ""}, []want{{16, "pools[0].equivalence.by", "required"}}},
		{"certification without date", []string{`date: "2025-01-02", `, ""}, []want{{16, "pools[0].equivalence.date", "required"}}},
		{"certification with bad date", []string{`"2025-01-02"`, `"02/01/2025"`}, []want{{16, "pools[0].equivalence.date", "YYYY-MM-DD"}}},
		{"certification without evidence", []string{`, evidence: "sha256:abc"`, ""}, []want{{16, "pools[0].equivalence.evidence", "required"}}},
		{"certification empty", []string{`{by: me, date: "2025-01-02", evidence: "sha256:abc"}`, "{}"},
			[]want{{16, "pools[0].equivalence.by", "required"}, {16, "pools[0].equivalence.date", "required"}, {16, "pools[0].equivalence.evidence", "required"}}},
		{"certification on a single pool still checked", []string{"[a, b]", "[a]", `"2025-01-02"`, `"soon"`}, []want{{16, "pools[0].equivalence.date", "YYYY-MM-DD"}}},
		// routes
		{"route model missing", []string{"  - model: m\n    pool: p", "  - pool: p"}, []want{{18, "routes[0].model", "required"}}},
		{"route duplicate", []string{"    pool: p\n", "    pool: p\n  - model: m\n    pool: p\n"}, []want{{20, "routes[1].model", `duplicate route "m" (first at line 18)`}}},
		{"route names no pool", []string{"    pool: p\n", ""}, []want{{18, "routes[0].pool", "names no pool"}}},
		{"route names unknown pool", []string{"pool: p\n", "pool: q\n"}, []want{{19, "routes[0].pool", `unknown pool "q"`}}},
		{"no routes", []string{"  - model: m\n    pool: p\n", ""}, []want{{17, "routes", "at least one route"}}},
		// server
		{"negative body bound", []string{"deployments:\n  - id: a", "server: {max_body_bytes: -1}\ndeployments:\n  - id: a"}, []want{{1, "server.max_body_bytes", "negative"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			requireProblems(t, parseProblems(t, edit(t, tc.edits...)), tc.wants...)
		})
	}
}

func TestValidateBaseIsValid(t *testing.T) {
	c, err := Parse([]byte(base), "base.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if ws := c.Warnings("base.yaml"); len(ws) != 0 {
		t.Errorf("warnings:\n%v", ws)
	}
}

// A Config built in code has no lines: problems then carry line 0 and the
// messages must not claim a "first at line 0".
func TestValidateBuiltInCode(t *testing.T) {
	c := &Config{
		Deployments: []Deployment{
			{ID: "a", Provider: KindOpenAI, BaseURL: "https://x.example", Model: "m", Price: &Price{InputPerMTok: -1}, Timeouts: Timeouts{Idle: -1}},
			{ID: "a", Provider: KindOpenAI, BaseURL: "https://x.example", Model: "m", Funding: FundingBYOK},
		},
		Pools:  []Pool{{ID: "p", Model: "m", Deployments: []string{"a", "a"}}},
		Routes: []Route{{Model: "m", Pool: "p"}},
	}
	c.ApplyDefaults()
	ps := c.Validate("")
	requireProblems(t, ps,
		want{0, "deployments[0].price.input_per_mtok", "≥ 0"},
		want{0, "deployments[0].timeouts.idle", "negative"},
		want{0, "deployments[1].id", "duplicate"},
		want{0, "pools[0].deployments[1]", "listed twice"},
		want{0, "pools[0].equivalence", "certification"},
	)
	if strings.Contains(ps.Error(), "line 0") {
		t.Errorf("mentions line 0:\n%v", ps)
	}
}

func TestWarnings(t *testing.T) {
	src := `deployments:
  - id: orphan
    provider: openai
    base_url: http://127.0.0.1:1
    model: x
    funding: byok
  - id: a
    provider: openai
    base_url: https://api.openai.com
    model: gpt-4.1
    price: {input_per_mtok: 2, output_per_mtok: 8}
  - id: unpriced
    provider: anthropic
    base_url: https://api.anthropic.com
    model: claude
pools:
  - id: p
    model: m
    deployments: [a, unpriced]
    equivalence: {by: me, date: "2025-01-02", evidence: "sha256:abc"}
  - id: lonely
    model: m
    deployments: [a]
  - id: aliased
    model: claude-sonnet-4-5
    deployments: [a]
routes:
  - model: m
    pool: p
  - model: sonnet
    pool: aliased
`
	c, errs, warns := Check([]byte(src), "w.yaml")
	if len(errs) != 0 {
		t.Fatalf("errors:\n%v\n%s", errs, src)
	}
	requireProblems(t, warns,
		want{2, "deployments[0]", `deployment "orphan" is in no pool`},
		want{12, "deployments[2].price", `host-funded deployment "unpriced" has no price`},
		want{21, "pools[1]", `no route names pool "lonely"`},
		want{30, "routes[1].model", `callers asking for "sonnet" are served exact model "claude-sonnet-4-5"`},
	)
	if len(warns) != 4 {
		t.Errorf("want 4 warnings, got:\n%v", warns)
	}
	if _, err := Parse([]byte(src), "w.yaml"); err != nil {
		t.Errorf("warnings must not refuse: %v", err)
	}

	env := map[string]string{"SET": "x", "EMPTY": ""}
	c.Deployments[0].CredentialEnv = "SET"
	c.Deployments[1].CredentialEnv = "EMPTY"
	c.Deployments[2].CredentialEnv = "UNSET"
	got := c.MissingCredentials("w.yaml", func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	requireProblems(t, got,
		want{7, "deployments[1].credential_env", "EMPTY is empty"},
		want{12, "deployments[2].credential_env", "UNSET is not set"},
	)
	if len(got) != 2 {
		t.Errorf("got %v", got)
	}
}

// A secret written where a variable's name belongs is refused without
// being echoed: the message (logged, printed by check) never carries it.
func TestSecretInCredentialEnvIsNotShown(t *testing.T) {
	const secret = "sk-live-0123456789abcdefSECRET"
	cfg := strings.Replace(base, "    price: {input_per_mtok: 2, output_per_mtok: 8}", "    credential_env: "+secret+"\n    price: {input_per_mtok: 2, output_per_mtok: 8}", 1)
	c, err := Parse([]byte(cfg), "c.yaml")
	if err == nil {
		_, err = Build(c, "c.yaml")
	}
	if err == nil || !strings.Contains(err.Error(), "not an environment variable name") {
		t.Fatalf("Build = %v", err)
	}
	if strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), "sk-live") {
		t.Errorf("the secret is in the message: %v", err)
	}
}
