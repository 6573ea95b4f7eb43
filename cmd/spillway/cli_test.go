package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/ledger/sqlite"
	"github.com/spillway-gw/spillway/internal/server"
)

// TestCLIHelp asks every command and subcommand for --help (and -h): usage
// on stdout naming the command, nothing on stderr, exit 0.
func TestCLIHelp(t *testing.T) {
	type tc struct {
		args []string
		want string
	}
	var tests []tc
	for _, name := range slices.Sorted(maps.Keys(commands)) {
		tests = append(tests, tc{[]string{name, "--help"}, name}, tc{[]string{name, "-h"}, name}, tc{[]string{"help", name}, name})
		for _, sub := range commands[name].subs {
			tests = append(tests, tc{[]string{name, sub, "--help"}, name + " " + sub}, tc{[]string{name, sub, "-h"}, name + " " + sub})
		}
	}
	tests = append(tests,
		tc{[]string{"help"}, "spillway ledger repair"},
		tc{[]string{"--help"}, "spillway version"},
		tc{[]string{"help", "--help"}, "spillway help"},
		// Help wins over the rest of the line, wherever it is.
		tc{[]string{"keys", "create", "--org", "o", "--help"}, "keys create"},
		tc{[]string{"keys", "revoke", "key_x", "--help"}, "keys revoke"},
		tc{[]string{"check", "some.yaml", "-h"}, "spillway check"},
		tc{[]string{"usage", "--format", "xml", "--help"}, "spillway usage"},
	)
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run(context.Background(), tc.args, &out, &errb); code != 0 {
				t.Errorf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
			}
			if !strings.Contains(out.String(), tc.want) {
				t.Errorf("stdout lacks %q:\n%s", tc.want, out.String())
			}
			if errb.Len() > 0 {
				t.Errorf("stderr:\n%s", errb.String())
			}
		})
	}
}

// The top-level usage names every command, every subcommand and every mock
// kind.
func TestUsageListsEverything(t *testing.T) {
	for name, c := range commands {
		if !strings.Contains(usage, "spillway "+name) {
			t.Errorf("usage lacks %q", "spillway "+name)
		}
		for _, sub := range c.subs {
			if !strings.Contains(usage, name+" "+sub) {
				t.Errorf("usage lacks %q", name+" "+sub)
			}
		}
	}
	if !strings.Contains(usage, "openai|anthropic|bedrock|gemini") {
		t.Error("usage lacks the four mock kinds")
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "spillway version") {
		t.Errorf("no arguments: exit %d, stderr:\n%s", code, errb.String())
	}
}

// cliWorld is a config routing one model, its ledger with one key of org
// acme, team web, and two stand-in gateways.
type cliWorld struct {
	dir, cfg string
	keyID    string
	// gw answers the admin API for the admin key "k"; dead is an address
	// nothing listens on.
	gw, dead string
}

const cliModel = "gpt-test"

func newCLIWorld(t *testing.T) *cliWorld {
	t.Helper()
	w := &cliWorld{dir: t.TempDir()}
	w.cfg = filepath.Join(w.dir, "spillway.yaml")
	writeFile(t, w.cfg, `ledger: {path: "`+filepath.Join(w.dir, "ledger.db")+`"}
deployments:
  - {id: a, provider: openai, base_url: "http://127.0.0.1:9", model: `+cliModel+`, price: {input_per_mtok: 1, output_per_mtok: 1}}
pools: [{id: p, model: `+cliModel+`, deployments: [a]}]
routes: [{model: `+cliModel+`, pool: p}]
`)
	// The ledger exists as the gateway would have made it, with one key.
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(w.dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	kc, err := server.CreateKey(ctx, st, &server.KeyRequest{Org: "acme", Team: "web"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	w.keyID = kc.ID

	gw := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") != "Bearer k" {
			rw.WriteHeader(http.StatusUnauthorized)
			rw.Write([]byte(`{"error":{"message":"this endpoint needs the gateway's admin key as a bearer token","type":"invalid_admin_key","code":"invalid_admin_key","param":null}}`))
			return
		}
		switch r.URL.Path {
		case "/v1/admin/health":
			rw.Write([]byte(`{"deployments":[{"deployment":"a","state":"healthy","since":"2026-11-29T12:00:00Z","failures":{}}],"routes":[]}`))
		case "/v1/admin/explain":
			if r.URL.Query().Get("model") != cliModel {
				rw.WriteHeader(http.StatusNotFound)
				rw.Write([]byte(`{"error":{"message":"no route for model \"nosuch\"","type":"model_not_found","code":"model_not_found","param":"model"}}`))
				return
			}
			rw.Write([]byte(`{"model":"` + cliModel + `","pool":"p","exact_model":"` + cliModel + `","rungs":[{"deployment":"a","provider":"openai","health":"healthy","kept":true}],"order":["a"]}`))
		default:
			http.NotFound(rw, r)
		}
	}))
	t.Cleanup(gw.Close)
	w.gw = gw.URL
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w.dead = ln.Addr().String()
	ln.Close()
	return w
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCLIErrors runs each validation and error message of the CLI: the
// exit status, what stdout and stderr must say, and what they must never
// show (internals, raw JSON, secrets).
func TestCLIErrors(t *testing.T) {
	w := newCLIWorld(t)
	const secret = "sk-proj-Q3v9XbT2kLmN8pRs4TuVw7YzA1bC5dEf"
	const awsLike = "AKIAIOSFODNN7EXAMPLE"
	secretCfg := filepath.Join(w.dir, "secret.yaml")
	writeFile(t, secretCfg, `deployments:
  - {id: a, provider: openai, base_url: "https://x.example", model: m, funding: byok, credential_env: "`+secret+`"}
  - {id: b, provider: openai, base_url: "https://x.example", model: m, funding: byok, credential_env: `+awsLike+`}
  - {id: c, provider: openai, base_url: "https://x.example", model: m, funding: byok, credential_env: SPILLWAY_CLI_TEST_UNSET_KEY}
pools: [{id: p, model: m, deployments: [a, b, c], equivalence: {by: t, date: "2026-01-01", evidence: e}}]
routes: [{model: m, pool: p}]
`)
	nameCfg := filepath.Join(w.dir, "names.yaml")
	writeFile(t, nameCfg, `deployments:
  - {id: a, provider: openai, base_url: "https://x.example", model: m, funding: byok, credential_env: SPILLWAY_CLI_TEST_UNSET_KEY}
pools: [{id: p, model: m, deployments: [a]}]
routes: [{model: m, pool: p}]
`)
	cfg := []string{"--config", w.cfg}
	with := func(args ...string) []string { return append(args, cfg...) }
	notRunning := "no gateway answers at http://" + w.dead + ": is spillway serve running? (--url sets the address)"

	tests := []struct {
		name     string
		args     []string
		adminKey string // SPILLWAY_ADMIN_KEY; "k" unless set
		code     int
		stdout   string // must appear
		stderr   string // must appear
		never    []string
	}{
		// Subcommands and formats.
		{name: "unknown command", args: []string{"nosuch"}, code: 2, stderr: `unknown command "nosuch"`},
		{name: "keys without a subcommand", args: []string{"keys"}, code: 2, stderr: "which keys command? (create, list, revoke)"},
		{name: "unknown keys subcommand", args: []string{"keys", "rotate"}, code: 2, stderr: `unknown keys command "rotate" (keys commands: create, list, revoke)`},
		{name: "unknown budgets subcommand", args: []string{"budgets", "get"}, code: 2, stderr: `unknown budgets command "get" (budgets commands: set, list)`},
		{name: "unknown ledger subcommand", args: []string{"ledger", "vacuum"}, code: 2, stderr: `unknown ledger command "vacuum" (ledger commands: repair)`},
		{name: "unknown help topic", args: []string{"help", "nosuch"}, code: 2, stderr: `unknown command "nosuch"`},
		{name: "unknown flag", args: []string{"keys", "list", "--bogus"}, code: 2, stderr: "flag provided but not defined: -bogus (spillway keys list --help lists the flags)"},
		{name: "stray argument", args: with("keys", "list", "extra"), code: 2, stderr: `unexpected arguments ["extra"]`},
		{name: "usage format xml", args: with("usage", "--format", "xml"), code: 2, stderr: `--format "xml": the formats are table, csv, json`},
		{name: "usage format json", args: with("usage", "--format", "json"), code: 0},
		{name: "mock without kind", args: []string{"mock"}, code: 2, stderr: "--kind is required (openai, anthropic, bedrock or gemini)"},
		{name: "version", args: []string{"version"}, code: 0, stdout: "spillway "},
		{name: "version extra", args: []string{"version", "x"}, code: 2, stderr: "unexpected arguments"},

		// budgets set: every id is checked.
		{name: "budget for a missing key", args: with("budgets", "set", "--scope", "key", "--id", "key_nope", "--credit-usd", "5"), code: 1,
			stderr: `no key with id "key_nope" (spillway keys list shows the keys)`},
		{name: "budget for a key", args: with("budgets", "set", "--scope", "key", "--id", w.keyID, "--credit-usd", "5"), code: 0, stdout: "set key " + w.keyID},
		{name: "budget for an unrouted model", args: with("budgets", "set", "--scope", "model", "--id", "nosuch-model", "--rpm", "5"), code: 2,
			stderr: `routes no model "nosuch-model" (it routes: ` + cliModel + `)`},
		{name: "budget for a model", args: with("budgets", "set", "--scope", "model", "--id", cliModel, "--rpm", "5"), code: 0, stdout: "set model " + cliModel},
		{name: "budget for an org without keys", args: with("budgets", "set", "--scope", "org", "--id", "acne", "--credit-usd", "1"), code: 0,
			stdout: "set org acne", stderr: `warning: no key belongs to org "acne" yet; the budget is set anyway`},
		{name: "budget for a team without keys", args: with("budgets", "set", "--scope", "team", "--id", "wbe", "--credit-usd", "1"), code: 0,
			stdout: "set team wbe", stderr: `warning: no key belongs to team "wbe" yet`},
		{name: "budget for an org", args: with("budgets", "set", "--scope", "org", "--id", "acme", "--credit-usd", "1"), code: 0, stdout: "set org acme", never: []string{"warning"}},
		{name: "budget scope", args: with("budgets", "set", "--scope", "tenant", "--id", "x"), code: 2, stderr: "--scope must be org, team, key or model"},
		{name: "budget without id", args: with("budgets", "set", "--scope", "key"), code: 2, stderr: "--id is required"},

		// keys.
		{name: "key for an unrouted model", args: with("keys", "create", "--org", "acme", "--team", "web", "--models", cliModel+",nosuch"), code: 2,
			stderr: `--models: the config ` + w.cfg + ` routes no model "nosuch" (it routes: ` + cliModel + `)`},
		{name: "key for a model", args: with("keys", "create", "--org", "acme", "--team", "web", "--models", cliModel), code: 0, stdout: "The key is shown once"},
		{name: "key without org", args: with("keys", "create", "--team", "web"), code: 2, stderr: "--org and --team are required"},
		{name: "key priority unknown", args: with("keys", "create", "--org", "acme", "--team", "web", "--priority", "urgent"), code: 2,
			stderr: `--priority "urgent" is not one of low, normal, high, critical`},
		{name: "key with a priority", args: with("keys", "create", "--org", "acme", "--team", "web", "--priority", "high"), code: 0, stdout: "The key is shown once"},
		{name: "revoke a missing key", args: with("keys", "revoke", "key_x"), code: 1,
			stderr: `no key with id "key_x" (spillway keys list shows the keys)`, never: []string{"ledger/sqlite", "not found"}},
		{name: "revoke by secret", args: with("keys", "revoke", "sk-spw-0123456789abcdef"), code: 2,
			stderr: "that is a key's secret, not its id", never: []string{"0123456789abcdef"}},
		{name: "revoke without id", args: with("keys", "revoke"), code: 2, stderr: "give one key id"},

		// health and explain.
		{name: "health url without scheme", args: []string{"health", "--url", strings.TrimPrefix(w.gw, "http://")}, code: 0, stdout: "healthy"},
		{name: "health not running", args: []string{"health", "--url", w.dead}, code: 1, stderr: notRunning, never: []string{"connection refused"}},
		{name: "explain not running", args: []string{"explain", "--model", cliModel, "--url", "http://" + w.dead}, code: 1, stderr: notRunning, never: []string{"connection refused"}},
		{name: "health wrong admin key", args: []string{"health", "--url", w.gw}, adminKey: "wrong", code: 1,
			stderr: "401 Unauthorized: this endpoint needs the gateway's admin key as a bearer token; set SPILLWAY_ADMIN_KEY to the gateway's admin key",
			never:  []string{`{"error"`}},
		{name: "health not running, no admin key", args: []string{"health", "--url", w.dead}, adminKey: "-", code: 1, stderr: notRunning},
		{name: "health no admin key", args: []string{"health", "--url", w.gw}, adminKey: "-", code: 1, stderr: "set SPILLWAY_ADMIN_KEY to the gateway's admin key"},
		{name: "explain unknown model", args: []string{"explain", "--model", "nosuch", "--url", w.gw}, code: 1,
			stderr: `404 Not Found: no route for model "nosuch"`, never: []string{`{"error"`}},
		{name: "explain", args: []string{"explain", "--model", cliModel, "--url", w.gw}, code: 0, stdout: "order: a"},
		{name: "explain without model", args: []string{"explain"}, code: 2, stderr: "--model is required"},
		{name: "health bad url", args: []string{"health", "--url", "ftp://x"}, code: 2, stderr: `--url "ftp://x" is not a gateway address`},

		// check never echoes a secret.
		{name: "check secret credential_env", args: []string{"check", secretCfg}, code: 1,
			stdout: fmt.Sprintf("deployments[0].credential_env: this value (%d characters, not shown) looks like a secret, not a variable name: put the NAME of the environment variable", len(secret)),
			never:  []string{secret, awsLike, "sk-proj"}},
		{name: "check secret-like variable name", args: []string{"check", secretCfg}, code: 1,
			stdout: "deployments[1].credential_env: this value (20 characters, not shown) looks like a secret"},
		{name: "check variable names", args: []string{"check", nameCfg}, code: 0,
			stdout: "environment variable SPILLWAY_CLI_TEST_UNSET_KEY is not set", never: []string{"looks like a secret"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			switch tc.adminKey {
			case "":
				t.Setenv("SPILLWAY_ADMIN_KEY", "k")
			case "-":
				t.Setenv("SPILLWAY_ADMIN_KEY", "")
			default:
				t.Setenv("SPILLWAY_ADMIN_KEY", tc.adminKey)
			}
			var out, errb bytes.Buffer
			code := run(context.Background(), tc.args, &out, &errb)
			if code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			if !strings.Contains(out.String(), tc.stdout) {
				t.Errorf("stdout lacks %q", tc.stdout)
			}
			if !strings.Contains(errb.String(), tc.stderr) {
				t.Errorf("stderr lacks %q", tc.stderr)
			}
			for _, s := range tc.never {
				if strings.Contains(out.String()+errb.String(), s) {
					t.Errorf("output shows %q", s)
				}
			}
			if t.Failed() {
				t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
			}
		})
	}
}

func TestLooksLikeSecret(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want bool
	}{
		{"OPENAI_API_KEY", false},
		{"ANTHROPIC_API_KEY_PRODUCTION_EU_WEST_1", false},
		{"my_openai_key_for_the_staging_cluster", false},
		{"SPILLWAY_DRILL_MOCK_KEY", false},
		{"sk-ant-api03-abc", true},
		{"sk-proj-Q3v9XbT2kLmN8pRs4TuVw7YzA1bC5dEf", true},
		{"AKIAIOSFODNN7EXAMPLE", true},
		{"AIzaSyD-1234567890abcdefghijklmnopqrstu", true},
		{"Q3v9XbT2kLmN8pRs4TuVw7YzA1bC5dEf", true}, // random, no known prefix
		{"x", false},
	} {
		if got := looksLikeSecret(tc.v); got != tc.want {
			t.Errorf("looksLikeSecret(%q) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

func TestWriteVersion(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/spillway-gw/spillway", Version: "v0.4.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "6183811a5b40"}, {Key: "vcs.time", Value: "2026-12-01T22:38:54Z"}, {Key: "vcs.modified", Value: "true"}}}
	var b bytes.Buffer
	writeVersion(&b, bi, true)
	for _, want := range []string{"spillway v0.4.0", "github.com/spillway-gw/spillway", "6183811a5b40", "2026-12-01T22:38:54Z", "modified", "go1.26.8"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("lacks %q:\n%s", want, b.String())
		}
	}
	// go run and go test stamp no revision; the build info may be missing.
	b.Reset()
	writeVersion(&b, nil, false)
	for _, want := range []string{"spillway (unknown)", "revision  unknown", "go "} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("lacks %q:\n%s", want, b.String())
		}
	}
}
