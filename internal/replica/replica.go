// Package replica runs gateway replicas as an operator does: the spillway
// binary, `spillway serve`, one process each, started, stopped and killed
// by a drill or a test.
package replica

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// StartTimeout bounds how long Start waits for a replica to listen.
const StartTimeout = 60 * time.Second

// maxOutput bounds the standard output a Process keeps.
const maxOutput = 64 << 10

// Options starts one replica.
type Options struct {
	// Bin is the spillway binary.
	Bin string
	// Config is the config file (serve --config).
	Config string
	// DataDir is where the config's relative ledger.path lives (serve
	// --data-dir): one per replica, since each keeps its own journal.
	DataDir string
	// Listen is the address to listen on. Default 127.0.0.1:0 (a free
	// port); a restarted replica may ask for its old address.
	Listen string
	// Env is added to this process's environment (the DSN's and the Redis
	// URL's variables, SPILLWAY_ADMIN_KEY, ...).
	Env []string
	// Log receives the replica's standard error (its JSON log). Nil:
	// discarded.
	Log io.Writer
}

// Process is one running replica.
type Process struct {
	// Addr is the address it listens on (host:port); URL is http://Addr.
	Addr, URL string

	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited
	err  error         // its exit status, once done

	mu  sync.Mutex
	out strings.Builder // standard output, up to maxOutput bytes
}

// Start runs `spillway serve` and returns once it listens (its "spillway
// listening on" line), or fails: the process exited first, or did not
// listen within StartTimeout (then it is killed).
func Start(ctx context.Context, o Options) (*Process, error) {
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	args := []string{"serve", "--config", o.Config, "--listen", o.Listen, "--reload-every", "0"}
	if o.DataDir != "" {
		args = append(args, "--data-dir", o.DataDir)
	}
	cmd := exec.Command(o.Bin, args...)
	cmd.Env = append(os.Environ(), o.Env...)
	cmd.Stderr = o.Log
	if o.Log == nil {
		cmd.Stderr = io.Discard
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("replica: starting %s: %w", o.Bin, err)
	}
	p := &Process{cmd: cmd, done: make(chan struct{})}
	addr := make(chan string, 1)
	read := make(chan struct{})
	go func() {
		defer close(read)
		p.read(stdout, addr)
	}()
	go func() {
		// Wait closes the pipe: only once everything was read from it.
		<-read
		p.err = cmd.Wait()
		close(p.done)
	}()
	timer := time.NewTimer(StartTimeout)
	defer timer.Stop()
	select {
	case a := <-addr:
		p.Addr = a
		p.URL = "http://" + a
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("replica: serve exited before listening (%v):\n%s", p.err, p.Output())
	case <-ctx.Done():
		p.Kill()
		return nil, ctx.Err()
	case <-timer.C:
		p.Kill()
		return nil, fmt.Errorf("replica: not listening after %s:\n%s", StartTimeout, p.Output())
	}
}

// read keeps the process's standard output and hands over the address of
// its "spillway listening on http://ADDR" line.
func (p *Process) read(r io.Reader, addr chan<- string) {
	br := bufio.NewReader(r)
	sent := false
	for {
		line, err := br.ReadString('\n')
		p.mu.Lock()
		if p.out.Len()+len(line) <= maxOutput {
			p.out.WriteString(line)
		}
		p.mu.Unlock()
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "spillway listening on "); ok && !sent {
			u := strings.Fields(rest)[0]
			addr <- strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://")
			sent = true
		}
		if err != nil {
			return
		}
	}
}

// Output is what the replica printed on its standard output so far (its
// start-up lines: keys created, reservations released, ...).
func (p *Process) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// Pid is the replica's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Kill ends the replica with SIGKILL, as a crash or the OOM killer does,
// and waits for it to be gone.
func (p *Process) Kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Stop asks the replica to shut down (SIGTERM: it drains its requests and
// writes its journal into the ledger) and waits up to grace for it to
// exit, then kills it. The error is its exit status, or says it had to be
// killed.
func (p *Process) Stop(grace time.Duration) error {
	select {
	case <-p.done:
		return p.exitErr()
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		return p.exitErr()
	case <-t.C:
		p.Kill()
		return fmt.Errorf("replica %s: still running %s after SIGTERM; killed", p.Addr, grace)
	}
}

func (p *Process) exitErr() error {
	if p.err != nil {
		return fmt.Errorf("replica %s: %w", p.Addr, p.err)
	}
	return nil
}

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// StopAll stops every replica at once (each within grace) and joins their
// errors.
func StopAll(ps []*Process, grace time.Duration) error {
	errs := make([]error, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		if p == nil {
			continue
		}
		wg.Go(func() { errs[i] = p.Stop(grace) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
