package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/drill"
)

// TestShortDrill is the CI drill: mocks, gateway and ledger in process, a
// few thousand requests through every dialect under the fault phases; any
// broken invariant fails it.
func TestShortDrill(t *testing.T) {
	// The Bedrock rung's credential (the mock takes any), set for this test
	// only so that runDrill leaves the environment alone.
	t.Setenv(drillKeyEnv, "drill-test")
	before := runtime.NumGoroutine()
	var out, errb bytes.Buffer
	jsonPath := filepath.Join(t.TempDir(), "drill.json")
	err := runDrill(context.Background(), []string{"--short", "--quiet", "--json", jsonPath}, &out, &errb)
	t.Logf("\n%s%s", out.String(), errb.String())
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
	if !rep.Pass || rep.Requests != drill.ShortRequests || rep.Streams.Truncated != 0 || rep.Ledger == nil || len(rep.Invariants) == 0 {
		t.Errorf("report: pass %v, %d requests, %d truncated, %d invariants", rep.Pass, rep.Requests, rep.Streams.Truncated, len(rep.Invariants))
	}
	for _, inv := range rep.Invariants {
		if !inv.Pass {
			t.Errorf("%s broken: %v", inv.Name, inv.Examples)
		}
	}
	// Everything the drill started is gone: mocks, gateway, refreshers,
	// connections. Connection goroutines exit as their peers close.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines before the drill, %d after:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}

func TestDrillFlags(t *testing.T) {
	for _, args := range [][]string{{"--bogus"}, {"--short", "extra"}, {"--requests", "x"}} {
		var out, errb bytes.Buffer
		if err := runDrill(context.Background(), args, &out, &errb); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}
