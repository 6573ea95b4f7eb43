package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunCheck(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bad := write("bad.yaml", `deployments:
  - id: a
    provider: azure
    base_url: https://x.example
    model: m
    colour: red
pools:
  - id: p
    model: m
    deployments: [a, a]
routes:
  - model: m
    pool: nope
`)
	warn := write("warn.yaml", `deployments:
  - id: a
    provider: openai
    base_url: https://x.example
    model: m
    credential_env: SPILLWAY_TEST_UNSET_KEY
  - id: b
    provider: openai
    base_url: https://x.example
    model: m
    funding: byok
    credential_env: SPILLWAY_TEST_SET_KEY
pools:
  - id: p
    model: m
    deployments: [a]
routes:
  - model: m
    pool: p
`)
	env := func(k string) (string, bool) {
		if k == "SPILLWAY_TEST_SET_KEY" {
			return "secret", true
		}
		return "", false
	}

	tests := []struct {
		name       string
		args       []string
		code       int
		stdout     []string // lines that must appear, in order
		stderr     string
		stdoutNone string // must not appear
	}{
		{name: "no arguments", args: nil, code: 2, stderr: "usage: spillway check"},
		{name: "two arguments", args: []string{"a", "b"}, code: 2, stderr: "usage: spillway check"},
		{name: "unknown flag", args: []string{"-x", "a"}, code: 2, stderr: "usage: spillway check"},
		{name: "help", args: []string{"-h"}, code: 0, stderr: "usage: spillway check"},
		{name: "config and argument", args: []string{"--config", "a", "b"}, code: 2, stderr: "usage: spillway check"},
		{name: "missing file", args: []string{filepath.Join(dir, "nope.yaml")}, code: 1, stderr: "no such file"},
		{name: "errors", args: []string{bad}, code: 1, stdout: []string{
			bad + `:3: deployments[0].provider: unknown provider kind "azure"`,
			bad + `:6: deployments[0].colour: unknown key`,
			bad + `:8: pools[0].equivalence: a pool of 2 deployments needs an equivalence certification`,
			bad + `:10: pools[0].deployments[1]: deployment "a" is listed twice`,
			bad + `:13: routes[0].pool: unknown pool "nope"`,
			"warning: " + bad + `:2: deployments[0].price: host-funded deployment "a" has no price`,
			bad + ": 1 deployment, 1 pool, 1 route: refused: 5 errors, 2 warnings",
		}},
		{name: "warnings only", args: []string{warn}, code: 0, stdout: []string{
			"warning: " + warn + `:2: deployments[0].price: host-funded deployment "a" has no price: it is skipped as price_unknown`,
			"warning: " + warn + `:7: deployments[1]: deployment "b" is in no pool`,
			"warning: " + warn + `:6: deployments[0].credential_env: environment variable SPILLWAY_TEST_UNSET_KEY is not set`,
			warn + ": 2 deployments, 1 pool, 1 route: ok, 3 warnings",
		}, stdoutNone: "SPILLWAY_TEST_SET_KEY"},
		{name: "mock example", args: []string{"../../examples/mock.yaml"}, code: 0, stdout: []string{
			"../../examples/mock.yaml: 3 deployments, 2 pools, 2 routes: ok\n",
		}},
		// --config as serve takes it: an operator's first guess.
		{name: "config flag", args: []string{"--config", "../../examples/mock.yaml"}, code: 0, stdout: []string{
			"../../examples/mock.yaml: 3 deployments, 2 pools, 2 routes: ok\n",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := checkWithEnv(context.Background(), tc.args, &out, &errb, env)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out.String(), errb.String())
			}
			rest := out.String()
			for _, line := range tc.stdout {
				i := strings.Index(rest, line)
				if i < 0 {
					t.Errorf("stdout lacks (in order) %q:\n%s", line, out.String())
					break
				}
				rest = rest[i+len(line):]
			}
			if tc.stdoutNone != "" && strings.Contains(out.String(), tc.stdoutNone) {
				t.Errorf("stdout mentions %q:\n%s", tc.stdoutNone, out.String())
			}
			if !strings.Contains(errb.String(), tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, errb.String())
			}
			if tc.stderr == "" && errb.Len() > 0 {
				t.Errorf("unexpected stderr:\n%s", errb.String())
			}
			if n := strings.Count(errb.String(), "usage: spillway check"); n > 1 {
				t.Errorf("the usage is printed %d times:\n%s", n, errb.String())
			}
		})
	}
}

// The entry point main.go calls uses the real environment.
func TestRunCheckUsesEnvironment(t *testing.T) {
	t.Setenv("SPILLWAY_CHECK_TEST_KEY", "")
	p := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(p, []byte(`deployments:
  - {id: a, provider: openai, base_url: "https://x.example", model: m, funding: byok, credential_env: SPILLWAY_CHECK_TEST_KEY}
pools: [{id: p, model: m, deployments: [a]}]
routes: [{model: m, pool: p}]
`), 0o644)
	var out, errb bytes.Buffer
	if code := runCheck(context.Background(), []string{p}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s %s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "SPILLWAY_CHECK_TEST_KEY is empty") {
		t.Errorf("stdout:\n%s", out.String())
	}
}
