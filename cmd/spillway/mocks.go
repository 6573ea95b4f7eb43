package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/mock"
)

// loopbackAddr returns a deployment's host:port when its base URL is on
// this machine.
func loopbackAddr(d *catalog.Deployment) (string, bool) {
	u, err := url.Parse(d.BaseURL)
	if err != nil {
		return "", false
	}
	switch u.Hostname() {
	case "127.0.0.1", "localhost", "::1":
	default:
		return "", false
	}
	host := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		host = net.JoinHostPort(u.Hostname(), port)
	}
	return host, true
}

// mockSet runs one built-in mock provider per loopback address of the
// config (serve --mocks), and follows reloads: a deployment that moves
// to a new address gets a mock there, an address no deployment uses any
// more is stopped. Owned by serve; close stops every mock.
type mockSet struct {
	out     io.Writer
	log     *slog.Logger
	running map[string]runningMock // by address
}

type runningMock struct {
	kind, name string
	stop       func()
}

func newMockSet(out io.Writer, log *slog.Logger) *mockSet {
	return &mockSet{out: out, log: log, running: map[string]runningMock{}}
}

// sync makes the running mocks match snap's loopback deployments. A mock
// that cannot listen is an error at start-up (first) and a warning on a
// reload, where the gateway keeps serving.
func (m *mockSet) sync(snap *catalog.Snapshot, first bool) error {
	want := map[string]*catalog.Deployment{}
	var shared []string
	for _, d := range snap.Deployments() {
		addr, ok := loopbackAddr(d)
		if !ok {
			continue
		}
		if prev, dup := want[addr]; dup {
			if prev.Provider != d.Provider {
				shared = append(shared, fmt.Sprintf("%s (%s) and %s (%s) share %s: the mock there speaks %s only; give each its own port",
					prev.ID, prev.Provider, d.ID, d.Provider, addr, prev.Provider))
			}
			continue
		}
		want[addr] = d
	}
	for _, w := range shared {
		m.log.Warn("mock address shared", "detail", w)
		fmt.Fprintf(m.out, "warning: %s\n", w)
	}
	for addr, r := range m.running {
		if d, ok := want[addr]; !ok || d.Provider != r.kind {
			r.stop()
			delete(m.running, addr)
			fmt.Fprintf(m.out, "mock %s provider for %s on http://%s stopped (no deployment there any more)\n", r.kind, r.name, addr)
		}
	}
	addrs := make([]string, 0, len(want))
	for addr := range want {
		addrs = append(addrs, addr)
	}
	sort.Strings(addrs)
	for _, addr := range addrs {
		if _, ok := m.running[addr]; ok {
			continue
		}
		d := want[addr]
		mk, err := mock.New(d.Provider, mock.Options{Name: d.ID})
		if err == nil {
			var ln net.Listener
			if ln, err = net.Listen("tcp", addr); err == nil {
				m.running[addr] = runningMock{kind: d.Provider, name: d.ID, stop: serveBackground(ln, mk)}
				fmt.Fprintf(m.out, "mock %s provider for %s on http://%s\n", d.Provider, d.ID, ln.Addr())
				continue
			}
		}
		if first {
			m.close()
			return fmt.Errorf("mock for %s: %w", d.ID, err)
		}
		m.log.Warn("cannot start the mock for a reloaded deployment", "deployment", d.ID, "err", err)
		fmt.Fprintf(m.out, "warning: cannot start the mock for %s on %s: %v\n", d.ID, addr, err)
	}
	return nil
}

// follow re-syncs whenever the holder's snapshot changes, until ctx ends.
func (m *mockSet) follow(ctx context.Context, holder *catalog.Holder, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	last := holder.Load()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if s := holder.Load(); s != last {
				last = s
				_ = m.sync(s, false)
			}
		}
	}
}

func (m *mockSet) close() {
	for addr, r := range m.running {
		r.stop()
		delete(m.running, addr)
	}
}

// warnUnreachable says, per loopback deployment, when nothing listens at
// its address: a config meant for the mocks started without --mocks
// otherwise fails every request with a 502 and says nothing at start-up.
func warnUnreachable(snap *catalog.Snapshot, out io.Writer, log *slog.Logger) int {
	n := 0
	seen := map[string]bool{}
	for _, d := range snap.Deployments() {
		addr, ok := loopbackAddr(d)
		if !ok || seen[addr] {
			continue
		}
		seen[addr] = true
		c, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
		if err == nil {
			c.Close()
			continue
		}
		n++
		var users []string
		for _, o := range snap.Deployments() {
			if a, ok := loopbackAddr(o); ok && a == addr {
				users = append(users, o.ID)
			}
		}
		log.Warn("nothing listens at a loopback deployment's address", "deployments", users, "addr", addr)
		fmt.Fprintf(out, "warning: nothing listens on %s for %s: requests to it fail over or fail (start its provider, or serve --mocks for the built-in mocks)\n",
			addr, strings.Join(users, ", "))
	}
	return n
}
