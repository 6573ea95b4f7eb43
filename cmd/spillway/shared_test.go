package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/redisstate/redistest"
)

const sharedConfig = `deployments:
  - {id: a, provider: openai, base_url: "http://127.0.0.1:9", model: m, price: {input_per_mtok: 1, output_per_mtok: 1}}
pools: [{id: p, model: m, deployments: [a]}]
routes: [{model: m, pool: p}]
shared_state:
  driver: redis
  url_env: SPW_TEST_REDIS_URL
`

// spillway check warns, on url_env's line, when the Redis URL's variable
// is unset, and says nothing of it when it is set (never showing it).
func TestCheckNamesTheRedisURLVariable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte(sharedConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	var out, errb bytes.Buffer
	checkWithEnv(context.Background(), []string{path}, &out, &errb, lookup)
	if !strings.Contains(out.String(), "c.yaml:7: shared_state.url_env: environment variable SPW_TEST_REDIS_URL (the shared state's Redis URL) is not set") {
		t.Errorf("check with the URL unset said:\n%s%s", out.String(), errb.String())
	}
	env["SPW_TEST_REDIS_URL"] = "redis://:s3cret@r:6379/0"
	out.Reset()
	checkWithEnv(context.Background(), []string{path}, &out, &errb, lookup)
	if strings.Contains(out.String(), "url_env") || strings.Contains(out.String(), "s3cret") {
		t.Errorf("check with the URL set said:\n%s", out.String())
	}
}

// The gateway refuses to start with the URL's variable unset, naming it on
// its line; with it set it shares state and says so in /metrics.
func TestGatewaySharedState(t *testing.T) {
	cfg, err := catalog.Parse([]byte(sharedConfig+"ledger: {path: "+filepath.Join(t.TempDir(), "l.db")+"}\n"), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := catalog.Build(cfg, "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t.Setenv("SPW_TEST_REDIS_URL", "")
	os.Unsetenv("SPW_TEST_REDIS_URL")
	if _, err := openGateway(ctx, catalog.NewHolder(snap), slog.New(slog.DiscardHandler), io.Discard); err == nil ||
		!strings.Contains(err.Error(), "shared_state.url_env") || !strings.Contains(err.Error(), "SPW_TEST_REDIS_URL") {
		t.Fatalf("URL unset: %v", err)
	}
	url := redistest.URL(t)
	t.Setenv("SPW_TEST_REDIS_URL", url)
	g, err := openGateway(ctx, catalog.NewHolder(snap), slog.New(slog.DiscardHandler), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer g.close(context.Background())
	if g.shared == nil || !g.shared.Up() {
		t.Fatal("not sharing state with Redis up")
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.RemoteAddr = "127.0.0.1:1234"
	g.ServeHTTP(rec, req)
	if !strings.Contains(rec.Body.String(), "\nspillway_shared_state_up 1\n") {
		t.Errorf("/metrics (%d) lacks spillway_shared_state_up 1", rec.Code)
	}
}
