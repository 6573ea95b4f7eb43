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
ledger: {path: ` + filepath.Join(t.TempDir(), "l.db") + `}
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
	// A fresh ledger gets a bootstrap key, printed once, then the address.
	br := bufio.NewReader(pr)
	var secret, addr string
	for addr == "" {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		switch l := strings.TrimSpace(line); {
		case strings.HasPrefix(l, "sk-spw-") && !strings.HasPrefix(l, "sk-spw-admin-"):
			secret = l
		case strings.HasPrefix(l, "spillway listening on "):
			addr = strings.Fields(strings.TrimPrefix(l, "spillway listening on "))[0]
		}
	}
	go func() { _, _ = io.Copy(io.Discard, br) }()
	if secret == "" {
		t.Fatal("no bootstrap key printed")
	}
	req, _ := http.NewRequest(http.MethodPost, addr+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
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
