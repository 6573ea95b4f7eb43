package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// unsetenv unsets k for the test and restores it after.
func unsetenv(t *testing.T, k string) {
	t.Setenv(k, "")
	os.Unsetenv(k)
}

// `spillway check` reads the config as serve does: every unset ${VAR} is
// listed at once, each on its line, and a set one is expanded.
func TestCheckListsUnsetVariables(t *testing.T) {
	unsetenv(t, "SPILLWAY_TEST_DB")
	unsetenv(t, "SPILLWAY_TEST_MOCK_URL")
	t.Setenv("SPILLWAY_TEST_PORT", "9999")
	path := filepath.Join(t.TempDir(), "c.yaml")
	yaml := `ledger: {path: "${SPILLWAY_TEST_DB}"}
server:
  listen: 127.0.0.1:${SPILLWAY_TEST_PORT}
deployments:
  - {id: d, provider: openai, base_url: "${SPILLWAY_TEST_MOCK_URL}", model: m, price: {input_per_mtok: 1, output_per_mtok: 1}}
pools: [{id: p, model: m, deployments: [d]}]
routes: [{model: m, pool: p}]
`
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := runCheck(context.Background(), []string{path}, &out, &errb); code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, out.String(), errb.String())
	}
	got := out.String()
	for _, want := range []string{
		path + ":1: ledger.path: ${SPILLWAY_TEST_DB} is not set (set it, or write ${SPILLWAY_TEST_DB:-spillway.db})\n",
		path + ":5: deployments[0].base_url: ${SPILLWAY_TEST_MOCK_URL} is not set",
		"refused: 2 errors",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "SPILLWAY_TEST_PORT") {
		t.Errorf("a set variable was reported:\n%s", got)
	}
}
