package catalog

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// env is a fake environment: only the variables in m are set.
func env(m map[string]string) LoadOption {
	return WithLookupEnv(func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	})
}

func parseEnvProblems(t *testing.T, src string, vars map[string]string) Problems {
	t.Helper()
	_, err := Parse([]byte(src), "test.yaml", env(vars))
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("Parse with %v: error %v, want Problems\n%s", vars, err, src)
	}
	return ps
}

// withServer puts a server or ledger block before minimal.
func withTop(block string) string { return block + minimal }

func TestInterpolateRefusals(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		vars  map[string]string
		wants []want
	}{
		{"unset, the field's default suggested", withTop("ledger:\n  path: ${SPILLWAY_DB}\n"), nil,
			[]want{{2, "ledger.path", "${SPILLWAY_DB} is not set (set it, or write ${SPILLWAY_DB:-spillway.db})"}}},
		{"unset duration default suggested", withTop("server:\n  idle_timeout: ${IDLE}\n"), nil,
			[]want{{2, "server.idle_timeout", "write ${IDLE:-2m}"}}},
		{"unset inside a longer value", strings.Replace(minimal, "https://api.openai.com", "http://${MOCK_HOST}:9101", 1), nil,
			[]want{{4, "deployments[0].base_url", "${MOCK_HOST} is not set (set it, or write ${MOCK_HOST:-...})"}}},
		{"set but empty is still set", withTop("ledger:\n  path: ${SPILLWAY_DB}x\n  driver: ${NOPE}\n"), map[string]string{"SPILLWAY_DB": ""},
			[]want{{3, "ledger.driver", "${NOPE} is not set"}}},
		{"no closing brace", withTop("ledger:\n  path: ${SPILLWAY_DB\n"), nil,
			[]want{{2, "ledger.path", "without its closing }"}}},
		{"not a name", withTop("ledger:\n  path: ${1DB}\n"), nil,
			[]want{{2, "ledger.path", `"1DB" is not a variable name`}}},
		{"no name", withTop("ledger:\n  path: x${}\n"), nil,
			[]want{{2, "ledger.path", "${} names no variable"}}},
		{"a shell form not read", withTop("ledger:\n  path: ${DB-x.db}\n"), nil,
			[]want{{2, "ledger.path", "only ${VAR} and ${VAR:-default} are read"}}},
		{"nested default", withTop("ledger:\n  path: ${DB:-${HOME}/x.db}\n"), map[string]string{"HOME": "/h"},
			[]want{{2, "ledger.path", "a default cannot hold another ${...}"}}},
		{"bare $VAR", withTop("ledger:\n  path: $HOME/x.db\n"), map[string]string{"HOME": "/h"},
			[]want{{2, "ledger.path", "$HOME is not expanded: write ${HOME} (or $$ for a literal $)"}}},
		{"expanded text still typed", withTop("server:\n  max_body_bytes: ${MAX}\n"), map[string]string{"MAX": "lots"},
			[]want{{2, "server.max_body_bytes", `expected a whole number, got "lots"`}}},
		{"an explicit tag keeps a string", withTop("server:\n  max_body_bytes: !!str ${MAX}\n"), map[string]string{"MAX": "1024"},
			[]want{{2, "server.max_body_bytes", `expected a whole number, got "1024"`}}},
		{"expanded URL still validated", strings.Replace(minimal, "https://api.openai.com", "${MOCK_URL}", 1), map[string]string{"MOCK_URL": "api.example.com"},
			[]want{{4, "deployments[0].base_url", `"api.example.com" must be an absolute http:// or https:// URL`}}},
		{"keys are never expanded", withTop("${TOP}: 1\n"), map[string]string{"TOP": "server"},
			[]want{{1, "${TOP}", "unknown key"}}},
		{"in a list item", strings.Replace(minimal, "deployments: [d1]", `deployments: [d1, "${EXTRA}"]`, 1), nil,
			[]want{{10, "pools[0].deployments[1]", "${EXTRA} is not set"}}},
		{"unquoted in a flow mapping", strings.Replace(minimal, "input_per_mtok: 2", "input_per_mtok: ${PRICE}", 1), map[string]string{"PRICE": "2"},
			[]want{{5, "", `inside {...} or [...], quote a reference: "${VAR}"`}}},
		{"several in one value", withTop("server:\n  listen: ${HOST}:${PORT}\n"), nil,
			[]want{{2, "server.listen", "${HOST} is not set"}, {2, "server.listen", "${PORT} is not set"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			requireProblems(t, parseEnvProblems(t, tc.src, tc.vars), tc.wants...)
		})
	}
}

// A variable that cannot be expanded is one problem: the field is not
// also "required" or of the wrong type.
func TestInterpolateOneProblemPerField(t *testing.T) {
	src := strings.Replace(minimal, "https://api.openai.com", "${MOCK_URL}", 1)
	src = strings.Replace(src, "    model: gpt-4.1\n    price", "    model: gpt-4.1\n    context_window: ${CTX}\n    price", 1)
	ps := parseEnvProblems(t, src, nil)
	if len(ps) != 2 {
		t.Fatalf("want one problem each for base_url and context_window, got:\n%v", ps)
	}
	requireProblems(t, ps, want{4, "deployments[0].base_url", "${MOCK_URL} is not set"}, want{6, "deployments[0].context_window", "${CTX} is not set"})
}

// credential_env names a variable; a secret expanded into it is refused
// without being repeated anywhere.
func TestInterpolateSecretIntoCredentialEnv(t *testing.T) {
	const secret = "sk-live-0123456789abcdef"
	src := strings.Replace(minimal, "    model: gpt-4.1\n    price", "    model: gpt-4.1\n    credential_env: ${OPENAI_API_KEY}\n    price", 1)
	ps := parseEnvProblems(t, src, map[string]string{"OPENAI_API_KEY": secret})
	requireProblems(t, ps, want{6, "deployments[0].credential_env", "${OPENAI_API_KEY} expands to something that is not an environment variable name"})
	if strings.Contains(ps.Error(), secret) || strings.Contains(ps.Error(), "sk-live") {
		t.Errorf("the secret is repeated:\n%v", ps)
	}
	if len(ps) != 1 {
		t.Errorf("want one problem, got:\n%v", ps)
	}
}

// Check, which `spillway check` runs, lists every unset variable at once,
// top to bottom, beside the file's other problems.
func TestCheckListsEveryUnsetVariable(t *testing.T) {
	src := "ledger:\n  path: ${SPILLWAY_DB}\nserver:\n  listen: ${HOST}:${PORT}\n  colour: red\n" +
		strings.Replace(minimal, "https://api.openai.com", "${MOCK_URL}", 1)
	c, errs, _ := Check([]byte(src), "spillway.yaml", env(map[string]string{"PORT": "8080"}))
	if c == nil {
		t.Fatal("Check returned no config for a YAML file")
	}
	var got []string
	for _, p := range errs {
		got = append(got, p.String())
	}
	want := []string{
		"spillway.yaml:2: ledger.path: ${SPILLWAY_DB} is not set (set it, or write ${SPILLWAY_DB:-spillway.db})",
		"spillway.yaml:4: server.listen: ${HOST} is not set (set it, or write ${HOST:-...})",
		"spillway.yaml:5: server.colour: unknown key (known: ",
		"spillway.yaml:9: deployments[0].base_url: ${MOCK_URL} is not set (set it, or write ${MOCK_URL:-...})",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
}

func TestInterpolateExpands(t *testing.T) {
	src := `server:
  listen: ${HOST:-127.0.0.1}:${PORT}
  max_body_bytes: ${MAX_BODY}
  idle_timeout: ${IDLE:-90s}
  body_timeout: ${BODY_TIMEOUT:-}
ledger:
  path: '${DATA}/spillway.db'
deployments:
  - id: ${DEP_ID:-d1}
    provider: openai
    base_url: ${MOCK_URL}
    model: gpt-4.1
    credential_env: ${KEY_VAR}
    price: {input_per_mtok: "${IN_PRICE}", output_per_mtok: 8}
pools:
  - id: p1
    model: gpt-4.1
    deployments: [d1]
    equivalence: {by: ops, date: "2026-01-02", evidence: "cost $$5, ${NOTE:-none}"}
routes:
  - model: gpt-4.1
    pool: p1
`
	c, err := Parse([]byte(src), "test.yaml", env(map[string]string{
		"PORT": "9000", "MAX_BODY": "1024", "DATA": "/var/lib/spillway", "MOCK_URL": "http://127.0.0.1:9101/",
		"KEY_VAR": "OPENAI_API_KEY", "IN_PRICE": "2.5", "IDLE": "",
	}))
	if err != nil {
		t.Fatal(err)
	}
	d := c.Deployments[0]
	for _, tc := range []struct{ name, got, want string }{
		{"listen", c.Server.Listen, "127.0.0.1:9000"},
		{"ledger.path (quoted)", c.Ledger.Path, "/var/lib/spillway/spillway.db"},
		{"id default", d.ID, "d1"},
		{"base_url, trailing slash trimmed", d.BaseURL, "http://127.0.0.1:9101"},
		{"credential_env", d.CredentialEnv, "OPENAI_API_KEY"},
		{"$$ and a default in one value", c.Pools[0].Equivalence.Evidence, "cost $5, none"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %q, want %q", tc.name, tc.got, tc.want)
		}
	}
	if c.Server.MaxBodyBytes != 1024 {
		t.Errorf("max_body_bytes = %d, want 1024 (a number)", c.Server.MaxBodyBytes)
	}
	if c.Server.IdleTimeout.D() != 90*time.Second {
		t.Errorf("idle_timeout = %v: an empty variable takes the default", c.Server.IdleTimeout)
	}
	if c.Server.BodyTimeout.D() != DefaultBodyTimeout {
		t.Errorf("body_timeout = %v: ${X:-} (empty) means the field's default", c.Server.BodyTimeout)
	}
	if d.Price.InputPerMTok != 2.5 {
		t.Errorf("input_per_mtok = %v, want 2.5", d.Price.InputPerMTok)
	}
}

// A file without references reads the same whatever the environment,
// and a lone $ that starts nothing stays.
func TestInterpolateLeavesPlainValues(t *testing.T) {
	src := strings.Replace(minimal, "    model: gpt-4.1\n    price", "    model: gpt-4.1$\n    price", 1)
	src = strings.Replace(src, "pools:\n  - id: p1\n    model: gpt-4.1", "pools:\n  - id: p1\n    model: gpt-4.1$", 1)
	src = strings.Replace(src, "routes:\n  - model: gpt-4.1\n", "routes:\n  - model: gpt-4.1$\n", 1)
	c, err := Parse([]byte(src), "test.yaml", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Deployments[0].Model != "gpt-4.1$" {
		t.Errorf("model = %q", c.Deployments[0].Model)
	}
}

func TestFieldDefault(t *testing.T) {
	for path, want := range map[string]string{
		"ledger.path":                       "spillway.db",
		"server.listen":                     DefaultListen,
		"server.max_body_bytes":             "8388608",
		"server.shutdown_grace":             "30s",
		"idempotency.ttl":                   "24h",
		"deployments[3].timeouts.total":     "10m",
		"deployments[0].funding":            FundingHost,
		"deployments[0].aws.access_key_env": "AWS_ACCESS_KEY_ID",
		"deployments[0].base_url":           "",
		"pools[2].deployments[1]":           "",
		"nonsense.key":                      "",
	} {
		if got := fieldDefault(path); got != want {
			t.Errorf("fieldDefault(%q) = %q, want %q", path, got, want)
		}
	}
}

// FuzzExpand: expand never panics, leaves text without $ alone, and
// resolves what it accepts completely.
func FuzzExpand(f *testing.F) {
	for _, s := range []string{"", "plain", "$", "$$", "${A}", "${A:-b}", "${A:-}", "x${B}y", "${", "${}", "${A-b}",
		"$A", "${A:-${B}}", "$${A}", "${1}", "a$5", "${A:-}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, errs := expand(s, func(k string) (string, bool) { return "v", k == "A" })
		if !strings.Contains(s, "$") && (out != s || len(errs) > 0) {
			t.Fatalf("expand(%q) = %q, %v: text without $ changed", s, out, errs)
		}
		if len(errs) == 0 && !strings.Contains(s, "$$") && strings.Contains(out, "${") {
			t.Fatalf("expand(%q) = %q: a reference left unexpanded", s, out)
		}
	})
}
