// Package redistest gives tests a real Redis: the one SPILLWAY_TEST_REDIS
// names (.ci/redis starts one), and a relay in front of it that a test can
// cut or make hang, to stop Redis for some clients without touching the
// shared server.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	mrand "math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// URL is the test Redis (SPILLWAY_TEST_REDIS). Unset: the test is
// skipped, saying how to run it; set but unreachable: the test fails.
func URL(t testing.TB) string {
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

// Proxy is a TCP relay in front of Redis that a test can cut (every
// connection closed, new ones refused) and restore: Redis "stopped" for
// this client only, without touching the shared test server.
type Proxy struct {
	t      testing.TB
	target string
	ln     net.Listener
	mu     sync.Mutex
	cut    bool
	hang   bool // accept and never answer: a hostile Redis
	conns  []net.Conn
	// delay holds back each reply from Redis this long (0: none), and
	// every reply with probability every (1: all).
	delay time.Duration
	every float64
}

func NewProxy(t testing.TB, url string) (*Proxy, string) {
	t.Helper()
	o, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{t: t, target: o.Addr, ln: ln}
	t.Cleanup(func() { ln.Close(); p.Cut(true) })
	go p.serve()
	u := "redis://" + ln.Addr().String() + "/" + strconv.Itoa(o.DB)
	if o.Password != "" {
		u = "redis://" + o.Username + ":" + o.Password + "@" + ln.Addr().String() + "/" + strconv.Itoa(o.DB)
	}
	return p, u
}

func (p *Proxy) serve() {
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

func (p *Proxy) relay(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, up)
	p.mu.Unlock()
	go func() { _, _ = io.Copy(up, c); up.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := up.Read(buf)
		if n > 0 {
			p.mu.Lock()
			d := p.delay
			if p.every < 1 && mrand.Float64() >= p.every {
				d = 0
			}
			p.mu.Unlock()
			if d > 0 {
				time.Sleep(d)
			}
			if _, err := c.Write(buf[:n]); err != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	c.Close()
}

// Delay holds back replies from Redis by d (0: none): every reply when
// share is 1, otherwise each with probability share. A Redis slower than
// the client's timeout: the commands still run, their replies come late.
func (p *Proxy) Delay(d time.Duration, share float64) {
	p.mu.Lock()
	p.delay, p.every = d, share
	p.mu.Unlock()
}

// Cut closes every connection and refuses new ones (true), or lets
// them through again (false).
func (p *Proxy) Cut(cut bool) {
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

// Hang makes new connections hang (and cuts the current ones).
func (p *Proxy) Hang(hang bool) {
	p.Cut(true)
	p.mu.Lock()
	p.cut, p.hang = false, hang
	p.mu.Unlock()
}

// Prefix is a fresh key prefix, isolating one test's keys and channels on
// the shared server.
func Prefix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "t" + hex.EncodeToString(b[:])
}
