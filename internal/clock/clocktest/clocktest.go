// Package clocktest provides a manual clock.Clock for tests: its time moves
// only when the test moves it, and timers that come due then run, in order,
// before the move returns.
package clocktest

import (
	"sync"
	"time"

	"github.com/spillway-gw/spillway/internal/clock"
)

// Clock is a manual clock. It is safe for concurrent use; use New.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	seq     uint64   // orders timers due at the same instant
	pending []*timer // unordered; tests hold a handful
}

var _ clock.Clock = (*Clock)(nil)

// New returns a clock showing start.
func New(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f for d from now. It runs during the Advance or Set
// that reaches its time, on that call's goroutine; a d of zero or less
// makes it due at once, so the next Advance (even by 0) runs it.
func (c *Clock) AfterFunc(d time.Duration, f func()) clock.Timer {
	t := &timer{c: c, f: f}
	t.Reset(d)
	return t
}

// Advance moves the clock forward by d (which must not be negative),
// running every timer due by then in the order of their times (ties in
// the order they were set). While a timer's function runs, Now shows its
// due time, and a timer it sets for no later than the target runs in
// this same call.
func (c *Clock) Advance(d time.Duration) {
	if d < 0 {
		panic("clocktest: Advance by a negative duration; use Set to step back")
	}
	c.mu.Lock()
	to := c.now.Add(d)
	c.mu.Unlock()
	c.run(to)
}

// Set moves the clock to t. Moving forward runs due timers as Advance
// does; moving back runs none, and pending timers keep their times.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	if !t.After(c.now) {
		c.now = t
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	c.run(t)
}

// Pending reports how many timers are set and have not yet run.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// run fires the due timers one at a time, the lock released around each
// function so that it may use the clock, then leaves the clock at to.
func (c *Clock) run(to time.Time) {
	for {
		c.mu.Lock()
		i := c.next(to)
		if i < 0 {
			if to.After(c.now) {
				c.now = to
			}
			c.mu.Unlock()
			return
		}
		t := c.pending[i]
		c.remove(i)
		if t.when.After(c.now) {
			c.now = t.when
		}
		f := t.f
		c.mu.Unlock()
		f()
	}
}

// next is the index of the earliest timer due by to, -1 if none. Caller
// holds c.mu.
func (c *Clock) next(to time.Time) int {
	best := -1
	for i, t := range c.pending {
		if t.when.After(to) {
			continue
		}
		if best < 0 || t.when.Before(c.pending[best].when) ||
			(t.when.Equal(c.pending[best].when) && t.seq < c.pending[best].seq) {
			best = i
		}
	}
	return best
}

// remove drops pending[i]. Caller holds c.mu.
func (c *Clock) remove(i int) {
	c.pending[i].active = false
	last := len(c.pending) - 1
	c.pending[i] = c.pending[last]
	c.pending[last] = nil
	c.pending = c.pending[:last]
}

type timer struct {
	c *Clock
	f func()
	// Guarded by c.mu.
	when   time.Time
	seq    uint64
	active bool // in c.pending
}

func (t *timer) Stop() bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if !t.active {
		return false
	}
	for i, p := range c.pending {
		if p == t {
			c.remove(i)
			break
		}
	}
	return true
}

func (t *timer) Reset(d time.Duration) bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	was := t.active
	c.seq++
	t.when, t.seq = c.now.Add(max(d, 0)), c.seq
	if !was {
		t.active = true
		c.pending = append(c.pending, t)
	}
	return was
}
