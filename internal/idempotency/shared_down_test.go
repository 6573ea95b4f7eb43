package idempotency

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// scriptedShared answers each Claim with the next of its answers (the last
// repeats), and ends each Wait when told, so a test decides when the
// shared store "goes away" without sleeping.
type scriptedShared struct {
	mu       sync.Mutex
	answers  []claimAnswer
	claims   int
	waiting  chan struct{} // receives when a Wait starts (nil: none)
	wake     chan struct{} // a Wait returns when this receives or is closed
	finished []SharedState
	hashes   [][32]byte
}

type claimAnswer struct {
	c   SharedClaim
	err error
}

func (f *scriptedShared) Claim(ctx context.Context, _, _ string, _ [32]byte) (SharedClaim, error) {
	f.mu.Lock()
	a := f.answers[min(f.claims, len(f.answers)-1)]
	f.claims++
	f.mu.Unlock()
	if errors.Is(a.err, context.Canceled) {
		// The caller's own cancel arrives while the claim is under way.
		<-ctx.Done()
		return SharedClaim{}, ctx.Err()
	}
	return a.c, a.err
}

func (f *scriptedShared) Wait(ctx context.Context, _, _ string) error {
	if f.waiting != nil {
		f.waiting <- struct{}{}
	}
	select {
	case <-f.wake:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *scriptedShared) Finish(_, _ string, hash [32]byte, o SharedState, _ *Recording, _ time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.finished = append(f.finished, o)
	f.hashes = append(f.hashes, hash)
}

var (
	errRedisDown = errors.New("redisstate: redis is unreachable")
	// What a claim slower than shared_state.timeout returns: its own
	// deadline, while the caller's context is still alive.
	errRedisSlow = fmt.Errorf("idempotency.claim: %w", context.DeadlineExceeded)
)

// Unhappy paths first: a shared store that errors or times out refuses the
// keyed request by default (nothing runs, nothing is kept here, the key
// is free for the retry), and owns it locally only under DownLocal.
func TestSharedUnavailable(t *testing.T) {
	tests := []struct {
		name         string
		policy       DownPolicy
		err          error
		want         string // kind of the claim
		refused, loc uint64 // Stats after one request
	}{
		{"down, refuse (default)", DownRefuse, errRedisDown, string(RefusedUnavailable), 1, 0},
		{"slower than its timeout, refuse", DownRefuse, errRedisSlow, string(RefusedUnavailable), 1, 0},
		{"down, local", DownLocal, errRedisDown, "owner", 0, 1},
		{"slower than its timeout, local", DownLocal, errRedisSlow, "owner", 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newTest(t, Options{})
			f := &scriptedShared{answers: []claimAnswer{{err: tc.err}}}
			s.SetShared(f)
			s.SetDownPolicy(tc.policy)
			c := begin(t, s, "t", "k", h("a"))
			if kind(c) != tc.want {
				t.Fatalf("claim %s, want %s", kind(c), tc.want)
			}
			st := s.Stats()
			if st.SharedRefused != tc.refused || st.SharedLocal != tc.loc {
				t.Errorf("Stats refused %d local %d, want %d %d", st.SharedRefused, st.SharedLocal, tc.refused, tc.loc)
			}
			if c.Owner == nil {
				if st.InFlight != 0 || st.Entries != 0 {
					t.Errorf("a refusal left %+v here", st)
				}
				// Nothing ran: when the store answers again, the retry owns it.
				f.answers = []claimAnswer{{c: SharedClaim{State: SharedOwned}}}
				f.claims = 0
				if c := begin(t, s, "t", "k", h("a")); c.Owner == nil {
					t.Fatalf("retry once the store answers: %s, want owner", kind(c))
				} else {
					c.Owner.Complete(rec("ok"))
				}
				if len(f.finished) != 1 || f.finished[0] != SharedCompleted || f.hashes[0] != h("a") {
					t.Errorf("finished %v, want one completed decision with the request's hash", f.finished)
				}
				return
			}
			// Local: owned here alone, its decision is not shared.
			c.Owner.Complete(rec("ok"))
			if len(f.finished) != 0 {
				t.Errorf("a local key shared its decision: %v", f.finished)
			}
			if c := begin(t, s, "t", "k", h("a")); c.Replay == nil {
				t.Errorf("retry here: %s, want the local replay", kind(c))
			}
		})
	}
}

// The refusal's public shape: 503, Retry-After, a stable code, a message
// that says the key cannot be checked across replicas and nothing ran; it
// is the one refusal that is not final.
func TestRefusedUnavailablePublic(t *testing.T) {
	p := RefusedUnavailable.Public()
	if p.Status != http.StatusServiceUnavailable || p.Code != "idempotency_unavailable" || p.RetryAfter != time.Second {
		t.Fatalf("%+v", p)
	}
	for _, w := range []string{"across replicas", "not run", "Retry-After"} {
		if !strings.Contains(p.Message, w) {
			t.Errorf("message %q lacks %q", p.Message, w)
		}
	}
	if RefusedUnavailable.Final() {
		t.Error("idempotency_unavailable is final: SDKs would not retry it")
	}
	for _, r := range []Refusal{RefusedInvalidKey, RefusedConflict, RefusedAbandoned, RefusedNotKept} {
		if !r.Final() {
			t.Errorf("%s is not final", r)
		}
	}
}

// A caller that goes away while the claim is under way gets its context's
// error (the server logs 499), not a 503, and nothing is counted or kept.
func TestSharedClaimCallerGone(t *testing.T) {
	s, _ := newTest(t, Options{})
	s.SetShared(&scriptedShared{answers: []claimAnswer{{err: context.Canceled}}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Begin(ctx, "t", "k", h("a"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Begin = %v, want the caller's cancel", err)
	}
	if st := s.Stats(); st.SharedRefused != 0 || st.InFlight != 0 {
		t.Errorf("after the caller left: %+v", st)
	}
}

// A request waiting for a key in flight on another replica is bounded when
// the shared store goes away mid-wait: Wait returns (its poll bound), the
// claim is made again, fails, and the request is refused (or, under
// DownLocal, owned here), instead of waiting on a store that cannot answer.
func TestSharedGoneMidWait(t *testing.T) {
	for _, tc := range []struct {
		policy DownPolicy
		want   string
	}{{DownRefuse, string(RefusedUnavailable)}, {DownLocal, "owner"}} {
		t.Run(tc.want, func(t *testing.T) {
			s, _ := newTest(t, Options{})
			f := &scriptedShared{
				answers: []claimAnswer{{c: SharedClaim{State: SharedInFlight}}, {err: errRedisDown}},
				waiting: make(chan struct{}, 1), wake: make(chan struct{}),
			}
			s.SetShared(f)
			s.SetDownPolicy(tc.policy)
			got := make(chan Claim, 1)
			go func() { got <- begin(t, s, "t", "k", h("a")) }()
			<-f.waiting // in flight elsewhere: waiting
			close(f.wake)
			c := <-got
			if kind(c) != tc.want {
				t.Fatalf("after the store went away mid-wait: %s, want %s", kind(c), tc.want)
			}
			if c.Owner != nil {
				c.Owner.Release()
			}
			if f.claims != 2 {
				t.Errorf("%d claims, want 2 (in flight, then down)", f.claims)
			}
		})
	}
}

// Local waiters for a key whose shared claim failed look again themselves:
// each is refused too (none runs on the first one's behalf).
func TestSharedUnavailableLocalWaiters(t *testing.T) {
	s, _ := newTest(t, Options{})
	block := make(chan struct{})
	f := &blockingShared{release: block, started: make(chan struct{}, 1)}
	s.SetShared(f)
	first := make(chan Claim, 1)
	go func() { first <- begin(t, s, "t", "k", h("a")) }()
	<-f.started // the first request is claiming across replicas
	second := make(chan Claim, 1)
	go func() { second <- begin(t, s, "t", "k", h("a")) }()
	waitFor(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		e := s.keys[mapKey{"t", "k"}]
		return e != nil && e.waiting == 1
	})
	close(block)
	for i, ch := range []chan Claim{first, second} {
		if c := <-ch; c.Refused != RefusedUnavailable {
			t.Errorf("request %d: %s, want %s", i, kind(c), RefusedUnavailable)
		}
	}
	if st := s.Stats(); st.SharedRefused != 2 || st.InFlight != 0 {
		t.Errorf("Stats %+v, want 2 refused, nothing in flight", st)
	}
}

// blockingShared fails every claim once release is closed.
type blockingShared struct {
	release chan struct{}
	started chan struct{}
}

func (b *blockingShared) Claim(context.Context, string, string, [32]byte) (SharedClaim, error) {
	select {
	case b.started <- struct{}{}:
	default:
	}
	<-b.release
	return SharedClaim{}, errRedisSlow
}
func (b *blockingShared) Wait(ctx context.Context, _, _ string) error { return ctx.Err() }
func (b *blockingShared) Finish(string, string, [32]byte, SharedState, *Recording, time.Duration) {
}

// waitFor polls cond (a state change another goroutine makes), failing
// after a generous bound that only a hang reaches.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10s")
		}
	}
}
