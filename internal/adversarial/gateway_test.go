package adversarial

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The gateway binary is built once per package run, without -race: the
// suite measures the process an operator runs.
var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	buildTook time.Duration
	binDir    string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// binary returns the path of the built gateway, building it on first use.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		start := time.Now()
		binDir, buildErr = os.MkdirTemp("", "spillway-adversarial-bin-")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "spillway")
		cmd := exec.Command("go", "build", "-o", binPath, "github.com/spillway-gw/spillway/cmd/spillway")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = err
			binPath = string(out)
		}
		buildTook = time.Since(start)
	})
	if buildErr != nil {
		t.Fatalf("go build: %v\n%s", buildErr, binPath)
	}
	return binPath
}

// gateway is one running spillway serve process.
type gateway struct {
	t     *testing.T
	dir   string // the process's working directory, outside the repo
	cfg   string // its config file
	admin string // SPILLWAY_ADMIN_KEY
	key   string // the default virtual key printed by the first start

	// mu guards cmd, which a restart replaces while a sampler reads pid.
	mu   sync.Mutex
	cmd  *exec.Cmd
	addr string // http://127.0.0.1:port
	out  *lockedBuffer
	errs *lockedBuffer
	// drained is closed when the process's stdout and stderr reached EOF.
	drained chan struct{}
}

// startGateway writes config (with DIR replaced by a fresh directory, which
// has an empty subdirectory ledger/) and starts spillway serve on it. The
// process is stopped in t.Cleanup.
func startGateway(t *testing.T, config string) *gateway {
	t.Helper()
	bin := binary(t)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "ledger"), 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "spillway.yaml")
	if err := os.WriteFile(cfg, []byte(strings.ReplaceAll(config, "DIR", dir)), 0o600); err != nil {
		t.Fatal(err)
	}
	g := &gateway{t: t, dir: dir, cfg: cfg, admin: "adm-" + randomHex(16)}
	t.Cleanup(g.stop)
	g.start(t, bin)
	if g.key == "" {
		t.Fatalf("the first start printed no virtual key:\n%s", g.out)
	}
	return g
}

// start runs the process and waits for its listen address.
func (g *gateway) start(t *testing.T, bin string) {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--config", g.cfg, "--listen", "127.0.0.1:0", "--reload-every", "0")
	cmd.Dir = g.dir
	cmd.Env = append(os.Environ(), "SPILLWAY_ADMIN_KEY="+g.admin)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	g.cmd = cmd
	g.mu.Unlock()
	g.out, g.errs, g.drained = &lockedBuffer{max: 1 << 20}, &lockedBuffer{max: 4 << 20}, make(chan struct{})
	// ready carries the address and the key printed before it, if any.
	ready := make(chan [2]string, 1)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		br := bufio.NewReader(stdout)
		sent, key := false, ""
		for {
			line, err := br.ReadString('\n')
			g.out.Write([]byte(line))
			l := strings.TrimSpace(line)
			switch {
			case strings.HasPrefix(l, "sk-spw-") && !strings.HasPrefix(l, "sk-spw-admin-"):
				key = l
			case !sent && strings.HasPrefix(l, "spillway listening on "):
				ready <- [2]string{strings.Fields(strings.TrimPrefix(l, "spillway listening on "))[0], key}
				sent = true
			}
			if err != nil {
				if !sent {
					close(ready)
				}
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		_, _ = io.Copy(g.errs, stderr)
	}()
	go func() {
		wg.Wait()
		close(g.drained)
	}()
	select {
	case got, ok := <-ready:
		if !ok {
			g.kill()
			t.Fatalf("spillway serve exited before listening:\n%s\n%s", g.out, g.errs)
		}
		g.addr = got[0]
		if g.key == "" {
			g.key = got[1]
		}
	case <-time.After(30 * time.Second):
		g.kill()
		t.Fatalf("spillway serve did not listen within 30s:\n%s\n%s", g.out, g.errs)
	}
}

// restart stops the process gracefully and starts it again on the same
// config and ledger.
func (g *gateway) restart(t *testing.T) {
	t.Helper()
	g.stop()
	g.start(t, binary(t))
}

// pid is the running process's id.
func (g *gateway) pid() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cmd.Process.Pid
}

// stop asks the process to shut down (SIGTERM), kills it after 10s, and
// waits for its output to drain. Safe to call twice.
func (g *gateway) stop() {
	if g.cmd == nil || g.cmd.ProcessState != nil {
		return
	}
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.drained:
	case <-time.After(10 * time.Second):
		g.t.Logf("spillway did not exit within 10s of SIGTERM; killing it")
		g.kill()
		return
	}
	_ = g.cmd.Wait()
}

func (g *gateway) kill() {
	_ = g.cmd.Process.Kill()
	<-g.drained
	_ = g.cmd.Wait()
}

// lockedBuffer keeps the last max bytes written to it.
type lockedBuffer struct {
	mu  sync.Mutex
	b   bytes.Buffer
	max int
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Write(p)
	if over := l.b.Len() - l.max; over > 0 {
		l.b.Next(over)
	}
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
