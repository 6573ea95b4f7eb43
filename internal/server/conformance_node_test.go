package server_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// nodeEnv, when set (as .ci/run sets it), makes a missing Node install a
// failure instead of a skip.
const nodeEnv = "SPILLWAY_TEST_NODE"

// TestNodeClients runs the Node client suite (clients/node: the newest
// openai, @anthropic-ai/sdk, @langchain/openai and @langchain/anthropic,
// pinned in its lockfile) against the conformance gateway.
func TestNodeClients(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "..", "clients", "node"))
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "node_modules"))
	}
	if err != nil {
		if os.Getenv(nodeEnv) != "" {
			t.Fatalf("%s is set but the Node clients cannot run: %v", nodeEnv, err)
		}
		t.Skip("the Node clients are not installed (run `npm ci --prefix clients/node`; .ci/run does): ", err)
	}
	h := newConformanceHarness(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "--test-reporter=spec", "--test-concurrency=1", "test/")
	cmd.Dir = dir
	// The mocks' base URLs by deployment: a case reads a provider's call
	// count from its GET /_mock/stats.
	mocks := map[string]string{}
	for _, d := range h.cfg.Deployments {
		mocks[d.ID] = d.BaseURL
	}
	mocksJSON, err := json.Marshal(mocks)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(),
		"SPILLWAY_URL="+h.gw.URL,
		"SPILLWAY_KEY="+h.key,
		"SPILLWAY_BROKE_KEY="+h.brokeKey,
		"SPILLWAY_ADMIN_KEY="+adminKey,
		"SPILLWAY_MAX_BODY_BYTES=262144",
		"SPILLWAY_MOCKS="+string(mocksJSON),
		"SPILLWAY_IDEM_AWAY_ONCE="+awayOncePrefix,
	)
	out, err := cmd.CombinedOutput()
	t.Logf("node --test:\n%s", out)
	if err != nil {
		t.Fatalf("the Node clients failed: %v", err)
	}
}
