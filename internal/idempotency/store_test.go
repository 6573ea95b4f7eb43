package idempotency

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/clock"
	"github.com/spillway-gw/spillway/internal/clock/clocktest"
)

func newTest(t testing.TB, o Options) (*Store, *clocktest.Clock) {
	clk := clocktest.New(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	o.Clock = clk
	s := New(o)
	if t, ok := t.(*testing.T); ok {
		t.Cleanup(func() { checkInvariants(t, s) })
	}
	return s, clk
}

func h(s string) [32]byte { return RequestHash("/v1/chat/completions", []byte(s)) }

func rec(body string) *Recording {
	return &Recording{Status: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(body)}
}

// begin calls Begin with a background context and fails the test on error.
func begin(t *testing.T, s *Store, tenant, key string, hash [32]byte) Claim {
	t.Helper()
	c, err := s.Begin(context.Background(), tenant, key, hash)
	if err != nil {
		t.Fatalf("Begin(%q, %q): %v", tenant, key, err)
	}
	return c
}

func kind(c Claim) string {
	switch {
	case c.Owner != nil:
		return "owner"
	case c.Replay != nil:
		return "replay"
	case c.Failed != nil:
		return "failed"
	case c.Refused != "":
		return string(c.Refused)
	}
	return "empty"
}

// checkInvariants verifies the map, both lists and the counters agree.
func checkInvariants(t testing.TB, s *Store) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range []*list{&s.use, &s.exp} {
		n, bytes := 0, int64(0)
		var prev *entry
		for e := l.head; e != nil; e = e.link[l.i].next {
			if e.link[l.i].prev != prev {
				t.Fatalf("list %d: broken back link", l.i)
			}
			if e.state == inFlight || e.state == released {
				t.Fatalf("list %d holds an unfinished entry", l.i)
			}
			if s.keys[e.k] != e {
				t.Fatalf("list %d holds an entry the map does not", l.i)
			}
			if l.i == byExpiry && prev != nil && e.expires.Before(prev.expires) {
				t.Fatal("expiry list out of order")
			}
			n++
			bytes += e.size
			prev = e
		}
		if l.tail != prev || n != s.n || bytes != s.bytes {
			t.Fatalf("list %d: tail ok=%v n=%d/%d bytes=%d/%d", l.i, l.tail == prev, n, s.n, bytes, s.bytes)
		}
	}
	if s.n > s.maxEntries || s.bytes > s.maxBytes {
		t.Fatalf("over bounds: %d entries, %d bytes", s.n, s.bytes)
	}
	inflight := 0
	for k, e := range s.keys {
		if e.k != k {
			t.Fatal("map key mismatch")
		}
		if e.state == inFlight {
			inflight++
		}
	}
	if inflight+s.n != len(s.keys) {
		t.Fatalf("map has %d keys, %d in flight, %d finished", len(s.keys), inflight, s.n)
	}
}

// waitForWaiters yields until n requests are blocked on key. It waits for
// goroutines to be scheduled, not for time to pass.
func waitForWaiters(t *testing.T, s *Store, tenant, key string, n int) {
	t.Helper()
	for i := 0; ; i++ {
		s.mu.Lock()
		e := s.keys[mapKey{tenant, key}]
		got := 0
		if e != nil {
			got = e.waiting
		}
		s.mu.Unlock()
		if got == n {
			return
		}
		if i > 1e7 {
			t.Fatalf("%d waiters, want %d", got, n)
		}
		runtime.Gosched()
	}
}

func TestBeginRefusesInvalidKeys(t *testing.T) {
	s, _ := newTest(t, Options{})
	for _, k := range []string{"", strings.Repeat("k", MaxKeyLen+1), "a\nb", "a\x00", "tab\there", "del\x7f", "café"} {
		if c := begin(t, s, "t", k, h("x")); c.Refused != RefusedInvalidKey {
			t.Errorf("key %q: got %s, want refused", k, kind(c))
		}
	}
	if pub := RefusedInvalidKey.Public(); pub.Status != http.StatusBadRequest || pub.Code != "invalid_idempotency_key" {
		t.Errorf("public: %+v", pub)
	}
	for _, k := range []string{"a", strings.Repeat("k", MaxKeyLen), "8e0c1f6a-uuid with spaces ~!"} {
		if c := begin(t, s, "t", k, h("x")); c.Owner == nil {
			t.Errorf("key %q: got %s, want owner", k, kind(c))
		} else {
			c.Owner.Abandon()
		}
	}
}

func TestConflict(t *testing.T) {
	s, _ := newTest(t, Options{})
	o := begin(t, s, "t", "k", h("a")).Owner
	// In flight: a different body is refused at once, without waiting.
	if c := begin(t, s, "t", "k", h("b")); c.Refused != RefusedConflict {
		t.Fatalf("in flight, other body: %s", kind(c))
	}
	o.Complete(rec("answer"))
	if c := begin(t, s, "t", "k", h("b")); c.Refused != RefusedConflict {
		t.Fatalf("finished, other body: %s", kind(c))
	}
	// The endpoint is part of the hash.
	if c := begin(t, s, "t", "k", RequestHash("/v1/responses", []byte("a"))); c.Refused != RefusedConflict {
		t.Fatalf("other endpoint: %s", kind(c))
	}
	if c := begin(t, s, "t", "k", h("a")); c.Replay == nil || string(c.Replay.Body) != "answer" {
		t.Fatalf("same body: %s", kind(c))
	}
	pub := RefusedConflict.Public()
	if pub.Status != http.StatusConflict || pub.Code != "idempotency_key_reused" {
		t.Errorf("public: %+v", pub)
	}
}

func TestFailedOwnerFailsClosed(t *testing.T) {
	s, clk := newTest(t, Options{TTL: time.Hour})
	fail := &Recording{Status: 502, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"error":"upstream"}`)}
	begin(t, s, "t", "k", h("a")).Owner.Fail(fail)
	for i := range 5 {
		c := begin(t, s, "t", "k", h("a"))
		if c.Failed != fail {
			t.Fatalf("later call %d: %s, want the owner's failure", i, kind(c))
		}
		clk.Advance(time.Hour / 10)
	}
}

func TestUnfaithfulRecordingsFailClosed(t *testing.T) {
	big := &Recording{Status: 200, Body: make([]byte, 2000)}
	cases := []struct {
		name string
		end  func(o *Owner)
		want Refusal
	}{
		{"abandon", func(o *Owner) { o.Abandon() }, RefusedAbandoned},
		{"complete nil", func(o *Owner) { o.Complete(nil) }, RefusedAbandoned},
		{"fail nil", func(o *Owner) { o.Fail(nil) }, RefusedAbandoned},
		{"nothing written (499)", func(o *Owner) { o.Complete(&Recording{}) }, RefusedAbandoned},
		{"caller left mid-answer", func(o *Owner) { o.Complete(&Recording{Status: 200, Streamed: true, WriteFailed: true}) }, RefusedAbandoned},
		{"failure write failed", func(o *Owner) { o.Fail(&Recording{Status: 502, WriteFailed: true}) }, RefusedAbandoned},
		{"over the recorder limit", func(o *Owner) { o.Complete(&Recording{Status: 200, OverLimit: true}) }, RefusedNotKept},
		{"failure over the limit", func(o *Owner) { o.Fail(&Recording{Status: 200, Streamed: true, OverLimit: true}) }, RefusedNotKept},
		{"over MaxEntryBytes", func(o *Owner) { o.Complete(big) }, RefusedNotKept},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newTest(t, Options{MaxBytes: 8000, MaxEntryBytes: 1000})
			tc.end(begin(t, s, "t", "k", h("a")).Owner)
			for range 3 {
				if c := begin(t, s, "t", "k", h("a")); c.Refused != tc.want {
					t.Fatalf("got %s, want %s", kind(c), tc.want)
				}
			}
			if c := begin(t, s, "t", "k", h("b")); c.Refused != RefusedConflict {
				t.Fatalf("other body: %s", kind(c))
			}
			if pub := tc.want.Public(); pub.Status != http.StatusConflict || pub.Code != string(tc.want) {
				t.Fatalf("public: %+v", pub)
			}
			if st := s.Stats(); st.Entries != 1 || st.InFlight != 0 || st.Bytes > 1000 {
				t.Fatalf("a tombstone must be small: %+v", st)
			}
		})
	}
}

func TestFirstDecisionWins(t *testing.T) {
	s, _ := newTest(t, Options{})
	o := begin(t, s, "t", "k", h("a")).Owner
	r := rec("first")
	o.Complete(r)
	o.Fail(rec("second"))
	o.Abandon()
	o.Release()
	if c := begin(t, s, "t", "k", h("a")); c.Replay != r {
		t.Fatalf("got %s", kind(c))
	}
	if st := s.Stats(); st.Entries != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestReleaseLetsTheKeyRunAgain(t *testing.T) {
	s, _ := newTest(t, Options{})
	begin(t, s, "t", "k", h("a")).Owner.Release()
	o := begin(t, s, "t", "k", h("b")).Owner // released keys are forgotten, body too
	if o == nil {
		t.Fatal("released key was not claimable")
	}
	o.Complete(rec("b"))
	if c := begin(t, s, "t", "k", h("b")); c.Replay == nil {
		t.Fatalf("got %s", kind(c))
	}
}

func TestConcurrentBegin(t *testing.T) {
	const n = 50
	r := rec("the answer")
	cases := []struct {
		name  string
		end   func(o *Owner)
		check func(c Claim) bool
	}{
		{"complete", func(o *Owner) { o.Complete(r) }, func(c Claim) bool { return c.Replay == r }},
		{"fail", func(o *Owner) { o.Fail(r) }, func(c Claim) bool { return c.Failed == r }},
		{"abandon", func(o *Owner) { o.Abandon() }, func(c Claim) bool { return c.Refused == RefusedAbandoned }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newTest(t, Options{})
			claims := make(chan Claim, n)
			var wg sync.WaitGroup
			for range n {
				wg.Go(func() {
					c, err := s.Begin(context.Background(), "t", "k", h("a"))
					if err != nil {
						t.Error(err)
					}
					claims <- c
				})
			}
			// Exactly one owner appears; everyone else blocks on it.
			o := (<-claims).Owner
			if o == nil {
				t.Fatal("the first claim to return was not the owner")
			}
			waitForWaiters(t, s, "t", "k", n-1)
			tc.end(o)
			wg.Wait()
			close(claims)
			for c := range claims {
				if !tc.check(c) {
					t.Fatalf("a waiter got %s", kind(c))
				}
			}
		})
	}
}

func TestReleaseHandsTheKeyToOneWaiter(t *testing.T) {
	const n = 20
	s, _ := newTest(t, Options{})
	first := begin(t, s, "t", "k", h("a")).Owner
	claims := make(chan Claim, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			c, err := s.Begin(context.Background(), "t", "k", h("a"))
			if err != nil {
				t.Error(err)
			}
			claims <- c
		})
	}
	waitForWaiters(t, s, "t", "k", n)
	first.Release()
	second := (<-claims).Owner
	if second == nil {
		t.Fatal("no waiter became the owner")
	}
	waitForWaiters(t, s, "t", "k", n-1)
	r := rec("second")
	second.Complete(r)
	wg.Wait()
	close(claims)
	for c := range claims {
		if c.Replay != r {
			t.Fatalf("a waiter got %s", kind(c))
		}
	}
}

func TestWaitEndsWithContext(t *testing.T) {
	for _, tc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"cancel", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }, context.Canceled},
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithDeadline(context.Background(), time.Unix(0, 0)) // already past
		}, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newTest(t, Options{})
			o := begin(t, s, "t", "k", h("a")).Owner
			ctx, cancel := tc.ctx()
			errc := make(chan error, 1)
			go func() {
				_, err := s.Begin(ctx, "t", "k", h("a"))
				errc <- err
			}()
			if tc.want == context.Canceled {
				waitForWaiters(t, s, "t", "k", 1)
				cancel()
			}
			err := <-errc
			cancel()
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			waitForWaiters(t, s, "t", "k", 0)
			// The owner is unaffected by a waiter leaving.
			o.Complete(rec("x"))
			if c := begin(t, s, "t", "k", h("a")); c.Replay == nil {
				t.Fatalf("got %s", kind(c))
			}
		})
	}
}

func TestTTLCountsFromCompletion(t *testing.T) {
	const ttl = time.Hour
	s, clk := newTest(t, Options{TTL: ttl})
	o := begin(t, s, "t", "k", h("a")).Owner
	clk.Advance(3 * ttl) // in flight: never expires
	if st := s.Stats(); st.InFlight != 1 {
		t.Fatalf("in-flight key expired: %+v", st)
	}
	o.Complete(rec("x"))
	clk.Advance(ttl - time.Nanosecond)
	if c := begin(t, s, "t", "k", h("a")); c.Replay == nil {
		t.Fatalf("before TTL: %s", kind(c))
	}
	clk.Advance(time.Nanosecond)
	if st := s.Stats(); st != (Stats{}) {
		t.Fatalf("after TTL: %+v", st)
	}
	// Gone means gone: the key runs afresh, any body.
	if c := begin(t, s, "t", "k", h("other")); c.Owner == nil {
		t.Fatalf("after TTL: %s", kind(c))
	}
}

func TestTombstonesExpireToo(t *testing.T) {
	s, clk := newTest(t, Options{TTL: time.Minute})
	begin(t, s, "t", "k", h("a")).Owner.Abandon()
	clk.Advance(time.Minute)
	if c := begin(t, s, "t", "k", h("a")); c.Owner == nil {
		t.Fatalf("got %s", kind(c))
	}
}

func TestLRUEvictionByEntries(t *testing.T) {
	s, _ := newTest(t, Options{MaxEntries: 3})
	for i := range 3 {
		begin(t, s, "t", strconv.Itoa(i), h("a")).Owner.Complete(rec("x"))
	}
	begin(t, s, "t", "0", h("a")) // a replay makes 0 the most recent; 1 is now oldest
	// In-flight keys are neither counted nor evicted.
	var inflight []*Owner
	for i := range 5 {
		inflight = append(inflight, begin(t, s, "t", "f"+strconv.Itoa(i), h("a")).Owner)
	}
	begin(t, s, "t", "3", h("a")).Owner.Complete(rec("x"))
	if st := s.Stats(); st.Entries != 3 || st.InFlight != 5 {
		t.Fatalf("stats %+v", st)
	}
	for key, want := range map[string]string{"0": "replay", "2": "replay", "3": "replay"} {
		if c := begin(t, s, "t", key, h("a")); kind(c) != want {
			t.Errorf("key %s: %s, want %s", key, kind(c), want)
		}
	}
	if c := begin(t, s, "t", "1", h("b")); c.Owner == nil {
		t.Fatalf("evicted key: %s, want a fresh owner", kind(c))
	} else {
		c.Owner.Release()
	}
	for _, o := range inflight {
		o.Complete(rec("y"))
	}
	if st := s.Stats(); st.Entries != 3 || st.InFlight != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestLRUEvictionByBytes(t *testing.T) {
	body := strings.Repeat("b", 1000)
	one := int64(entryOverhead+len("t")+len("k0")) + rec(body).size()
	s, _ := newTest(t, Options{MaxBytes: 3 * one, MaxEntryBytes: one, MaxEntries: 100})
	for i := range 3 {
		begin(t, s, "t", "k"+strconv.Itoa(i), h("a")).Owner.Complete(rec(body))
	}
	if st := s.Stats(); st.Entries != 3 || st.Bytes != 3*one {
		t.Fatalf("stats %+v, one entry %d", st, one)
	}
	begin(t, s, "t", "k0", h("a")) // k1 is now least recently used
	begin(t, s, "t", "k3", h("a")).Owner.Complete(rec(body))
	if st := s.Stats(); st.Entries != 3 || st.Bytes != 3*one {
		t.Fatalf("stats %+v", st)
	}
	if c := begin(t, s, "t", "k1", h("a")); c.Owner == nil {
		t.Fatalf("k1: %s, want evicted", kind(c))
	} else {
		c.Owner.Release()
	}
	// A tiny tombstone does not push out a big answer unless bytes demand it.
	begin(t, s, "t", "k4", h("a")).Owner.Abandon()
	if st := s.Stats(); st.Entries != 3 {
		t.Fatalf("stats %+v", st)
	}
}

func TestTenantsIsolated(t *testing.T) {
	s, _ := newTest(t, Options{})
	a := begin(t, s, "tenant-a", "k", h("a")).Owner
	b := begin(t, s, "tenant-b", "k", h("b")).Owner
	if a == nil || b == nil {
		t.Fatal("tenants share a key")
	}
	ra, rb := rec("a"), rec("b")
	a.Complete(ra)
	b.Fail(rb)
	if c := begin(t, s, "tenant-a", "k", h("a")); c.Replay != ra {
		t.Fatalf("tenant-a: %s", kind(c))
	}
	if c := begin(t, s, "tenant-b", "k", h("b")); c.Failed != rb {
		t.Fatalf("tenant-b: %s", kind(c))
	}
	if c := begin(t, s, "tenant-b", "k", h("a")); c.Refused != RefusedConflict {
		t.Fatalf("tenant-b with a's body: %s", kind(c))
	}
	// Tenant and key do not run together: ("a","bk") is not ("ab","k").
	if c := begin(t, s, "tenant-", "ak", h("a")); c.Owner == nil {
		t.Fatalf("concatenation collision: %s", kind(c))
	}
}

func TestDefaults(t *testing.T) {
	s := New(Options{})
	if s.maxEntries != DefaultMaxEntries || s.maxBytes != DefaultMaxBytes || s.maxEntryBytes != DefaultMaxBytes/4 || s.ttl != DefaultTTL {
		t.Fatalf("defaults: %+v", s)
	}
	if _, ok := s.clock.(clock.Real); !ok {
		t.Fatal("no system clock")
	}
	s = New(Options{MaxBytes: 100, MaxEntryBytes: 1000})
	if s.maxEntryBytes != 100 {
		t.Fatalf("MaxEntryBytes above MaxBytes: %d", s.maxEntryBytes)
	}
}

func TestRequestHash(t *testing.T) {
	distinct := [][32]byte{
		RequestHash("/a", []byte("body")),
		RequestHash("/a", []byte("body "), ""),
		RequestHash("/a", []byte("body"), ""),
		RequestHash("/a", []byte("body"), "2023-06-01"),
		RequestHash("/ab", []byte("ody")),
		RequestHash("/a", []byte("")),
		RequestHash("", []byte("/abody")),
	}
	seen := map[[32]byte]int{}
	for i, x := range distinct {
		if j, ok := seen[x]; ok {
			t.Errorf("inputs %d and %d collide", i, j)
		}
		seen[x] = i
	}
	if RequestHash("/a", []byte("body"), "v") != RequestHash("/a", []byte("body"), "v") {
		t.Error("not deterministic")
	}
}
