package main

import (
	"bufio"
	"context"
	"database/sql"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/spillway-gw/spillway/internal/mock"
)

// TestCrashNeverLosesACompletedResponse builds the binary, serves traffic
// through it, kills it with SIGKILL mid-load, restarts it, and checks the
// ledger: every request whose final byte reached its caller has exactly one
// settled row, and the reservations the crash left open are released and
// reported at start-up.
func TestCrashNeverLosesACompletedResponse(t *testing.T) {
	const canary = "CANARY-crash-4e1b77"
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "spillway")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	m, err := mock.New("openai", mock.Options{Name: "p", Fault: "event_delay=3ms"})
	if err != nil {
		t.Fatal(err)
	}
	up := httptest.NewServer(m)
	defer up.Close()
	db := filepath.Join(dir, "ledger.db")
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte(`ledger: {path: `+db+`}
deployments:
  - {id: p, provider: openai, base_url: `+up.URL+`, model: m, price: {input_per_mtok: 1, output_per_mtok: 2}, max_output_tokens: 100}
pools: [{id: pool, model: m, deployments: [p]}]
routes: [{model: m, pool: pool}]
`), 0o600); err != nil {
		t.Fatal(err)
	}

	start := func() (*exec.Cmd, string, string, *strings.Builder) {
		cmd := exec.Command(bin, "serve", "--config", cfg, "--listen", "127.0.0.1:0", "--reload-every", "0")
		stdout, _ := cmd.StdoutPipe()
		cmd.Stderr = io.Discard
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(stdout)
		var secret, addr string
		var seen strings.Builder
		for addr == "" {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("serve output ended: %v\n%s", err, seen.String())
			}
			seen.WriteString(line)
			switch l := strings.TrimSpace(line); {
			case strings.HasPrefix(l, "sk-spw-") && !strings.HasPrefix(l, "sk-spw-admin-"):
				secret = l
			case strings.HasPrefix(l, "spillway listening on "):
				addr = strings.Fields(strings.TrimPrefix(l, "spillway listening on "))[0]
			}
		}
		go func() { _, _ = io.Copy(io.Discard, br) }()
		return cmd, addr, secret, &seen
	}

	cmd, addr, secret, _ := start()
	if secret == "" {
		t.Fatal("no bootstrap key")
	}
	var mu sync.Mutex
	var completed []string
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				stream := (w+i)%2 == 0
				body := `{"model":"m","max_tokens":16,"stream":` + map[bool]string{true: "true", false: "false"}[stream] + `,"messages":[{"role":"user","content":"` + canary + `"}]}`
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, addr+"/v1/chat/completions", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+secret)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return // the gateway died
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				done := err == nil && resp.StatusCode == 200 &&
					(!stream || strings.HasSuffix(strings.TrimSpace(string(b)), "data: [DONE]"))
				if done {
					mu.Lock()
					completed = append(completed, resp.Header.Get("X-Request-Id"))
					mu.Unlock()
				}
			}
		}(w)
	}
	// Kill it once a good number of requests have completed.
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(completed)
		mu.Unlock()
		if n >= 300 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	stop()
	wg.Wait()
	if len(completed) < 50 {
		t.Fatalf("only %d requests completed before the kill", len(completed))
	}

	// Restart: open reservations are released and reported.
	cmd2, _, _, out := start()
	defer func() { _ = cmd2.Process.Signal(syscall.SIGTERM); _ = cmd2.Wait() }()

	conn, err := sql.Open("sqlite", "file:"+db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	counts := map[string]int{}
	rows, err := conn.Query(`SELECT request_id, count(*) FROM requests GROUP BY request_id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			t.Fatal(err)
		}
		counts[id] = n
	}
	rows.Close()
	for _, id := range completed {
		if counts[id] != 1 {
			t.Errorf("request %s reached its caller but has %d settled rows", id, counts[id])
		}
	}
	var open int
	if err := conn.QueryRow(`SELECT count(*) FROM reservations WHERE settled_at IS NULL AND released_at IS NULL`).Scan(&open); err != nil {
		t.Fatal(err)
	}
	if open != 0 {
		t.Errorf("%d reservations still open after restart", open)
	}
	var released int
	if err := conn.QueryRow(`SELECT count(*) FROM reservations WHERE released_at IS NOT NULL`).Scan(&released); err != nil {
		t.Fatal(err)
	}
	if released > 0 && !strings.Contains(out.String(), "released ") {
		t.Errorf("%d reservations released but not reported at start-up:\n%s", released, out.String())
	}
	// Content-free even across a crash: the prompts' canary is in no file
	// the gateway wrote.
	files, _ := filepath.Glob(filepath.Join(dir, "ledger.db*"))
	if len(files) == 0 {
		t.Fatal("no ledger files")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), canary) {
			t.Errorf("the prompt's canary is in %s", filepath.Base(f))
		}
	}
	t.Logf("%d completed before SIGKILL, all settled once; %d reservations left open by the crash, released and reported", len(completed), released)
}
