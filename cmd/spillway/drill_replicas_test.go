package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/drill"
)

// needBackends skips a test that needs the CI's PostgreSQL and Redis when
// they are not given, saying how to run it.
func needBackends(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if os.Getenv(testPostgresEnv) == "" || os.Getenv(testRedisEnv) == "" {
		t.Skipf("%s and %s must both be set: this test runs replicas on a real PostgreSQL and Redis (.ci/run starts them; locally: export %s=$(.ci/redis start); mkdir /tmp/pg && export %s=$(.ci/postgres start /tmp/pg))",
			testPostgresEnv, testRedisEnv, testRedisEnv, testPostgresEnv)
	}
}

// TestReplicaDrill is the CI drill over three replicas: three `spillway
// serve` processes on one PostgreSQL ledger and one Redis, the requests
// spread over them and every Idempotency-Key retry sent to another
// replica; every invariant must hold across them, within a minute.
func TestReplicaDrill(t *testing.T) {
	needBackends(t)
	t.Setenv(drillKeyEnv, "drill-test")
	bin := buildSpillway(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	jsonPath := filepath.Join(t.TempDir(), "drill.json")
	var out, errb bytes.Buffer
	start := time.Now()
	err := runDrill(ctx, []string{"--replicas", "3", "--bin", bin, "--short", "--requests", "1000", "--rate", "200",
		"--quiet", "--json", jsonPath}, &out, &errb)
	t.Logf("%s\n%s%s", time.Since(start).Round(time.Millisecond), out.String(), errb.String())
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep drill.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.Pass || rep.Replicas != 3 || rep.Requests != 1000 || rep.Replays == 0 || rep.Ledger == nil || rep.Ledger.Requests == 0 {
		t.Errorf("report: pass %v, %d replicas, %d requests, %d replays, ledger %+v", rep.Pass, rep.Replicas, rep.Requests, rep.Replays, rep.Ledger)
	}
	for _, inv := range rep.Invariants {
		if !inv.Pass {
			t.Errorf("%s broken: %v", inv.Name, inv.Examples)
		}
	}
	if !strings.Contains(out.String(), "3 replicas (") {
		t.Errorf("the drill did not say it ran replicas:\n%s", out.String())
	}
}

// --replicas refuses bad counts, and names both variables when a backend
// is missing.
func TestReplicaDrillFlags(t *testing.T) {
	t.Setenv(testPostgresEnv, "")
	t.Setenv(testRedisEnv, "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--replicas", "17"}, "want 1 to 16"},
		{[]string{"--replicas", "-1"}, "want 1 to 16"},
		{[]string{"--replicas", "3"}, testPostgresEnv},
		{[]string{"--replicas", "3", "--postgres", "postgres://x@127.0.0.1:1/x"}, testRedisEnv},
	} {
		var out, errb bytes.Buffer
		err := runDrill(context.Background(), append(tc.args, "--quiet"), &out, &errb)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error naming %q", tc.args, err, tc.want)
		}
	}
}
