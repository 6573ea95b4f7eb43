package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// freePort returns a loopback port nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
}

// TestQuickStartOutsideTheRepo walks the README's quick start as a new
// operator would, with the built binary in a directory outside the
// repository: serve on the mocks (the config found as ./spillway.yaml),
// call it with the printed key, then usage, health, explain, keys,
// budgets and an admin key rotation from a second "terminal"; the ledger
// lives beside the config, whatever the working directory.
func TestQuickStartOutsideTheRepo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "spillway")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	example, err := os.ReadFile("../../examples/mock.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The example's fixed ports, moved to free ones: tests run in parallel.
	cfg := string(example)
	for _, p := range []string{"8080", "9101", "9102", "9103"} {
		cfg = strings.ReplaceAll(cfg, "127.0.0.1:"+p, "127.0.0.1:"+freePort(t))
	}
	work := filepath.Join(dir, "ops")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "spillway.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "SPILLWAY_CONFIG=", "SPILLWAY_DATA=", "SPILLWAY_ADMIN_KEY=")
	cli := func(wd string, extraEnv []string, args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = wd
		cmd.Env = append(append([]string{}, env...), extraEnv...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}

	// Terminal 1: spillway serve --mocks, the config found in the
	// working directory.
	serve := exec.Command(bin, "serve", "--mocks", "--reload-every", "0")
	serve.Dir = work
	serve.Env = env
	stdout, _ := serve.StdoutPipe()
	serve.Stderr = io.Discard
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	var seen strings.Builder
	var mu sync.Mutex
	lines := make(chan string, 64)
	go func() {
		br := bufio.NewReader(stdout)
		for {
			l, err := br.ReadString('\n')
			mu.Lock()
			seen.WriteString(l)
			mu.Unlock()
			if l != "" {
				lines <- strings.TrimSpace(l)
			}
			if err != nil {
				close(lines)
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = serve.Process.Signal(syscall.SIGTERM)
		_ = serve.Wait()
	})
	var key, admin, addr string
	timeout := time.After(30 * time.Second)
	for addr == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("serve ended:\n%s", seen.String())
			}
			switch {
			case strings.HasPrefix(l, "sk-spw-admin-"):
				admin = l
			case strings.HasPrefix(l, "sk-spw-"):
				key = l
			case strings.HasPrefix(l, "spillway listening on "):
				addr = strings.Fields(strings.TrimPrefix(l, "spillway listening on "))[0]
			}
		case <-timeout:
			t.Fatalf("serve did not start:\n%s", seen.String())
		}
	}
	mu.Lock()
	started := seen.String()
	mu.Unlock()
	if key == "" || admin == "" {
		t.Fatalf("the first start printed no virtual key or no admin key:\n%s", started)
	}
	if strings.Contains(started, "warning: nothing listens") {
		t.Errorf("with --mocks every loopback deployment is listening:\n%s", started)
	}
	if _, err := os.Stat(filepath.Join(work, "spillway.db")); err != nil {
		t.Errorf("the ledger is not beside the config: %v", err)
	}

	// Terminal 2: a call with the printed key.
	for _, model := range []string{"claude-sonnet-4-5", "gpt-4.1"} {
		req, _ := http.NewRequest(http.MethodPost, addr+"/v1/chat/completions",
			strings.NewReader(`{"model":"`+model+`","messages":[{"role":"user","content":"Say hello."}]}`))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"model":"`+model) {
			t.Fatalf("%s: %d %s", model, resp.StatusCode, b)
		}
	}
	adminEnv := []string{"SPILLWAY_ADMIN_KEY=" + admin}
	steps := []struct {
		name string
		wd   string
		env  []string
		args []string
		want []string
	}{
		{"usage sees both calls at once", work, nil, []string{"usage", "--group-by", "model", "--format", "csv"},
			[]string{"claude-sonnet-4-5,1,", "gpt-4.1,1,"}},
		{"usage from another directory, the config named", dir, nil, []string{"usage", "--config", filepath.Join(work, "spillway.yaml"), "--group-by", "", "--format", "csv"},
			[]string{"\n2,2,"}},
		{"health with the admin key", work, adminEnv, []string{"health", "--url", addr}, []string{"mock-primary", "mock-secondary", "mock-gpt"}},
		{"explain", work, adminEnv, []string{"explain", "--url", addr, "--model", "claude-sonnet-4-5"}, []string{"mock-primary", "mock-secondary"}},
		{"keys create", work, nil, []string{"keys", "create", "--org", "acme", "--team", "search"}, []string{"sk-spw-"}},
		{"keys list", work, nil, []string{"keys", "list"}, []string{"acme", "default"}},
		{"budgets set", work, nil, []string{"budgets", "set", "--scope", "team", "--id", "search", "--credit-usd", "5"}, nil},
		{"budgets list", work, nil, []string{"budgets", "list"}, []string{"search"}},
		{"admin rotate", work, nil, []string{"admin", "rotate"}, []string{"sk-spw-admin-"}},
	}
	for _, st := range steps {
		out, err := cli(st.wd, st.env, st.args...)
		if err != nil {
			t.Errorf("%s: spillway %s: %v\n%s", st.name, strings.Join(st.args, " "), err, out)
			continue
		}
		for _, w := range st.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: spillway %s said:\n%s\nwant %q in it", st.name, strings.Join(st.args, " "), out, w)
			}
		}
	}
	// A read-only command without a ledger refuses, saying where it looked.
	if out, err := cli(dir, nil, "usage", "--db", filepath.Join(dir, "nosuch.db")); err == nil || !strings.Contains(out, "no ledger at") {
		t.Errorf("usage on a missing ledger: %v\n%s", err, out)
	}
	// And a command with no config anywhere says what it looked for.
	if out, err := cli(dir, nil, "keys", "list"); err == nil || !strings.Contains(out, "spillway.yaml") || !strings.Contains(out, "SPILLWAY_CONFIG") {
		t.Errorf("keys list with no config: %v\n%s", err, out)
	}
}
