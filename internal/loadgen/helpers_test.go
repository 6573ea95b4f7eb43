package loadgen

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock only moves when Advance is called; After's channel fires once
// the clock reaches its deadline.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []fakeWaiter
}

type fakeWaiter struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_800_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, fakeWaiter{c.now.Add(d), ch})
	return ch
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(c.now) {
			kept = append(kept, w)
			continue
		}
		w.ch <- c.now
	}
	c.waiters = kept
}

// step is what the scripted server does for one request.
type step int

const (
	stepOK     step = iota
	stepNoTerm      // a clean end without the terminator
	stepAbort       // the connection is cut mid-body
	step503         // an error status
)

// gate lets a test hold each request at two points: before its first
// byte and between the first byte and the rest.
type gate struct {
	arrived chan int      // the server got request i
	first   chan struct{} // the server may send the first byte
	rest    chan struct{} // the server may send the rest
}

func newGate() *gate {
	return &gate{arrived: make(chan int), first: make(chan struct{}), rest: make(chan struct{})}
}

// scripted serves an SSE stream of three events ending in "data: [DONE]",
// doing plan(i) for the i-th request (from 0), held by g when set.
func scripted(t testing.TB, g *gate, plan func(i int) step) http.Handler {
	var mu sync.Mutex
	n := 0
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		i := n
		n++
		mu.Unlock()
		wait := func(ch chan struct{}) bool {
			select {
			case <-ch:
				return true
			case <-r.Context().Done():
				return false
			}
		}
		if g != nil {
			select {
			case g.arrived <- i:
			case <-r.Context().Done():
				return
			}
		}
		if g != nil && !wait(g.first) {
			return
		}
		s := stepOK
		if plan != nil {
			s = plan(i)
		}
		if s == step503 {
			http.Error(w, `{"error":"overloaded"}`, http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: {\"n\":1}\n\n"))
		w.(http.Flusher).Flush()
		if g != nil && !wait(g.rest) {
			return
		}
		_, _ = w.Write([]byte(strings.Repeat("data: {\"n\":2}\n\n", 3)))
		switch s {
		case stepAbort:
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		case stepNoTerm:
			return
		}
		_, _ = w.Write([]byte("data: [DONE]\n\n"))
	})
}

func sseTarget(url string) Target {
	return Target{Name: "t", URL: url, Body: []byte(`{}`), Stream: true, Terminator: []byte("data: [DONE]")}
}
