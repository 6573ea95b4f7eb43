package clocktest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/clock"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// log records which timers ran and what Now showed while they ran.
type log struct {
	mu  sync.Mutex
	got []string
}

func (l *log) add(c *Clock, name string) func() {
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.got = append(l.got, fmt.Sprintf("%s@%v", name, c.Now().Sub(t0)))
	}
}

func (l *log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.got, " ")
}

func TestAdvanceRunsDueTimersInOrder(t *testing.T) {
	c := New(t0)
	var l log
	c.AfterFunc(3*time.Second, l.add(c, "c"))
	c.AfterFunc(time.Second, l.add(c, "a"))
	c.AfterFunc(2*time.Second, l.add(c, "b1"))
	c.AfterFunc(2*time.Second, l.add(c, "b2")) // same time: set later, runs later
	c.AfterFunc(time.Hour, l.add(c, "late"))

	c.Advance(time.Second - 1)
	if got := l.String(); got != "" {
		t.Fatalf("before any was due: %q", got)
	}
	c.Advance(2 * time.Second)
	if got, want := l.String(), "a@1s b1@2s b2@2s"; got != want {
		t.Fatalf("ran %q, want %q", got, want)
	}
	if got := c.Now().Sub(t0); got != 3*time.Second-1 {
		t.Fatalf("Now = t0+%v after the moves, want 3s-1ns", got)
	}
	c.Advance(1)
	if got, want := l.String(), "a@1s b1@2s b2@2s c@3s"; got != want {
		t.Fatalf("ran %q, want %q", got, want)
	}
	if c.Pending() != 1 {
		t.Fatalf("pending = %d, want the hour's timer", c.Pending())
	}
}

func TestStopAndReset(t *testing.T) {
	c := New(t0)
	var l log
	a := c.AfterFunc(time.Second, l.add(c, "a"))
	if !a.Stop() || a.Stop() {
		t.Fatal("Stop: want true for a pending timer, then false")
	}
	c.Advance(time.Minute)
	if l.String() != "" || c.Pending() != 0 {
		t.Fatalf("a stopped timer ran: %q, %d pending", l.String(), c.Pending())
	}
	// Reset rearms a stopped timer, counting from now.
	if a.Reset(time.Second) {
		t.Fatal("Reset of a stopped timer reported it pending")
	}
	if !a.Reset(2 * time.Second) {
		t.Fatal("Reset of a pending timer reported it stopped")
	}
	c.Advance(time.Second)
	c.Advance(time.Second)
	if got, want := l.String(), "a@1m2s"; got != want {
		t.Fatalf("ran %q, want %q", got, want)
	}
	if a.Stop() {
		t.Fatal("Stop after the timer ran reported it pending")
	}
}

// A function that sets a timer due within the same move runs it in that
// move, as a real clock would; the watchdog rearms itself this way.
func TestTimerSetFromATimer(t *testing.T) {
	c := New(t0)
	var l log
	var again func()
	n := 0
	var tm clock.Timer
	again = func() {
		l.add(c, "tick")()
		if n++; n < 3 {
			tm.Reset(time.Second)
		}
	}
	tm = c.AfterFunc(time.Second, again)
	c.AfterFunc(0, l.add(c, "now"))
	c.Advance(10 * time.Second)
	if got, want := l.String(), "now@0s tick@1s tick@2s tick@3s"; got != want {
		t.Fatalf("ran %q, want %q", got, want)
	}
}

func TestSet(t *testing.T) {
	c := New(t0)
	var l log
	c.AfterFunc(time.Minute, l.add(c, "a"))
	c.Set(t0.Add(-time.Hour))
	if l.String() != "" || !c.Now().Equal(t0.Add(-time.Hour)) {
		t.Fatalf("a step back: ran %q, now %v", l.String(), c.Now())
	}
	c.Set(t0.Add(time.Minute))
	if got, want := l.String(), "a@1m0s"; got != want {
		t.Fatalf("ran %q, want %q", got, want)
	}
}

func TestAdvanceBackPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Advance(-1) did not panic")
		}
	}()
	New(t0).Advance(-1)
}

// Under -race: timers set, stopped and reset from several goroutines while
// another moves the time.
func TestConcurrentUse(t *testing.T) {
	c := New(t0)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ran, stopped, rearmed := 0, 0, 0
	for range 4 {
		wg.Go(func() {
			for i := range 100 {
				tm := c.AfterFunc(time.Duration(i)*time.Millisecond, func() { mu.Lock(); ran++; mu.Unlock() })
				if i%3 == 0 {
					if tm.Stop() { // false when it already ran
						mu.Lock()
						stopped++
						mu.Unlock()
					}
				} else if i%3 == 1 {
					if !tm.Reset(time.Millisecond) { // it already ran: it runs again
						mu.Lock()
						rearmed++
						mu.Unlock()
					}
				}
				_ = c.Now()
			}
		})
	}
	wg.Go(func() {
		for range 100 {
			c.Advance(time.Millisecond)
		}
	})
	wg.Wait()
	c.Advance(time.Second)
	if c.Pending() != 0 {
		t.Fatalf("%d timers pending after every one came due", c.Pending())
	}
	if ran != 400-stopped+rearmed {
		t.Fatalf("%d runs, with %d timers stopped and %d rearmed after running: want %d", ran, stopped, rearmed, 400-stopped+rearmed)
	}
}
