package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
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
	var out, errb bytes.Buffer
	jsonPath := filepath.Join(t.TempDir(), "drill.json")
	args := []string{"--short", "--quiet", "--json", jsonPath}
	want := drill.ShortRequests
	if raceEnabled() {
		// The race detector makes every request several times dearer; on
		// a loaded 2-core CI machine 3,000 requests came close to a minute.
		want = raceRequests
		args = append(args, "--requests", strconv.Itoa(want))
	}
	err := runDrill(context.Background(), args, &out, &errb)
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
	if !rep.Pass || rep.Requests != want || rep.Streams.Truncated != 0 || rep.Ledger == nil || len(rep.Invariants) == 0 {
		t.Errorf("report: pass %v, %d requests, %d truncated, %d invariants", rep.Pass, rep.Requests, rep.Streams.Truncated, len(rep.Invariants))
	}
	for _, inv := range rep.Invariants {
		if !inv.Pass {
			t.Errorf("%s broken: %v", inv.Name, inv.Examples)
		}
	}
	// Everything the drill started is gone: workers, mocks (stalled
	// handlers included), gateway, refreshers. Keep-alive connection
	// goroutines of net/http carry no spillway frame and end with their
	// peers, so only goroutines running spillway code count.
	deadline := time.Now().Add(5 * time.Second)
	left := ours()
	for len(left) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		left = ours()
	}
	if len(left) > 0 {
		t.Errorf("%d goroutines running spillway code outlived the drill:\n%s", len(left), strings.Join(left, "\n\n"))
	}
}

// ours returns the stacks of the goroutines, other than the caller's, that
// run spillway code.
func ours() []string {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i > 0 && strings.Contains(g, "github.com/spillway-gw/spillway/") {
			out = append(out, g)
		}
	}
	return out
}

// raceRequests is the CI drill's size under the race detector.
const raceRequests = 2000

// raceEnabled reports whether the test binary was built with -race.
func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

func TestDrillFlags(t *testing.T) {
	for _, args := range [][]string{{"--bogus"}, {"--short", "extra"}, {"--requests", "x"}} {
		var out, errb bytes.Buffer
		if err := runDrill(context.Background(), args, &out, &errb); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}
