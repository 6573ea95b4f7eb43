package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/mock"
)

// TestServeServesAndShutsDownGracefully runs `spillway serve` against a mock
// provider, sends a streamed request that is still running when SIGTERM's
// context ends, and checks the request completes and serve returns cleanly.
func TestServeServesAndShutsDownGracefully(t *testing.T) {
	m, err := mock.New("openai", mock.Options{Name: "p", Fault: "event_delay=20ms;tokens=20"})
	if err != nil {
		t.Fatal(err)
	}
	up := httptest.NewServer(m)
	defer up.Close()
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	yaml := `server: {shutdown_grace: 5s}
deployments:
  - {id: p, provider: openai, base_url: ` + up.URL + `, model: m, price: {input_per_mtok: 1, output_per_mtok: 1}, max_output_tokens: 100}
pools: [{id: pool, model: m, deployments: [p]}]
routes: [{model: m, pool: pool}]
`
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, []string{"--config", cfg, "--listen", "127.0.0.1:0", "--reload-every", "0"}, pw, io.Discard)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	addr := strings.Fields(strings.TrimPrefix(line, "spillway listening on "))[0]

	resp, err := http.Post(addr+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	cancel() // SIGTERM: stop accepting, drain in-flight requests
	body, err := io.ReadAll(resp.Body)
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(body)), "data: [DONE]") {
		t.Fatalf("the in-flight stream did not complete during shutdown: %v\n%s", err, body)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not return after shutdown")
	}
}
