package redisstate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisURL is the test Redis (SPILLWAY_TEST_REDIS). Unset: the test is
// skipped, saying how to run it; set but unreachable: the test fails.
func redisURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("SPILLWAY_TEST_REDIS")
	if u == "" {
		t.Skip("SPILLWAY_TEST_REDIS is unset: run `export SPILLWAY_TEST_REDIS=$(.ci/redis start)` to run the shared-state tests against a real Redis")
	}
	o, err := redis.ParseURL(u)
	if err != nil {
		t.Fatalf("SPILLWAY_TEST_REDIS=%q: %v", u, err)
	}
	c := redis.NewClient(o)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("SPILLWAY_TEST_REDIS=%s is set but unreachable: %v", u, err)
	}
	return u
}

// testPrefix isolates one test's keys and channels.
func testPrefix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "t" + hex.EncodeToString(b[:])
}

// open is a client on url under prefix, closed at the test's end. Bounds
// are generous for a loaded CI machine; tests of the bounds set their own.
func open(t testing.TB, url, prefix string, edit func(*Options)) *Client {
	t.Helper()
	o := Options{URL: url, Prefix: prefix, Timeout: 500 * time.Millisecond, RetryEvery: 50 * time.Millisecond, ProbeLease: 5 * time.Second}
	if edit != nil {
		edit(&o)
	}
	c, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// waitFor polls cond every millisecond until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", d, what)
		}
		time.Sleep(time.Millisecond)
	}
}

// proxy is a TCP relay in front of Redis that a test can cut (every
// connection closed, new ones refused) and restore: Redis "stopped" for
// this client only, without touching the shared test server.
type proxy struct {
	t      testing.TB
	target string
	ln     net.Listener
	mu     sync.Mutex
	cut    bool
	hang   bool // accept and never answer: a hostile Redis
	conns  []net.Conn
}

func newProxy(t testing.TB, url string) (*proxy, string) {
	t.Helper()
	o, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, target: o.Addr, ln: ln}
	t.Cleanup(func() { ln.Close(); p.setCut(true) })
	go p.serve()
	u := "redis://" + ln.Addr().String() + "/" + itoa(o.DB)
	if o.Password != "" {
		u = "redis://" + o.Username + ":" + o.Password + "@" + ln.Addr().String() + "/" + itoa(o.DB)
	}
	return p, u
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		cut, hang := p.cut, p.hang
		if !cut {
			p.conns = append(p.conns, c)
		}
		p.mu.Unlock()
		switch {
		case cut:
			c.Close()
		case hang:
			// Hold it open, answer nothing.
		default:
			go p.relay(c)
		}
	}
}

func (p *proxy) relay(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, up)
	p.mu.Unlock()
	go func() { _, _ = io.Copy(up, c); up.Close() }()
	_, _ = io.Copy(c, up)
	c.Close()
}

// setCut closes every connection and refuses new ones (true), or lets
// them through again (false).
func (p *proxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for _, c := range p.conns {
			c.Close()
		}
		p.conns = nil
	}
}

// setHang makes new connections hang (and cuts the current ones).
func (p *proxy) setHang(hang bool) {
	p.setCut(true)
	p.mu.Lock()
	p.cut, p.hang = false, hang
	p.mu.Unlock()
}
