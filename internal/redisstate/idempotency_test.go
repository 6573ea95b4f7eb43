package redisstate

import (
	"context"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/idempotency"
)

func sharedStores(t *testing.T, cs ...*Client) []*idempotency.Store {
	out := make([]*idempotency.Store, len(cs))
	for i, c := range cs {
		out[i] = idempotency.New(idempotency.Options{})
		c.ShareIdempotency(out[i])
	}
	return out
}

func streamRec() *idempotency.Recording {
	return &idempotency.Recording{Status: 200, Streamed: true,
		Header: http.Header{"Content-Type": {"text/event-stream"}, "X-Request-Id": {"req-a"}},
		Chunks: [][]byte{[]byte("data: {\"a\":1}\n\n"), []byte("data: {\"a\":2}\n\n"), []byte("data: [DONE]\n\n")}}
}

// Unhappy paths first: a different body under a key owned on A is a
// conflict on B; a key A abandoned is refused on B.
func TestIdempotencyConflictAndAbandonAcrossReplicas(t *testing.T) {
	url := redisURL(t)
	prefix := testPrefix()
	a, b := open(t, url, prefix, nil), open(t, url, prefix, nil)
	st := sharedStores(t, a, b)
	ctx := context.Background()
	h1, h2 := [32]byte{1}, [32]byte{2}
	c, err := st[0].Begin(ctx, "tenant", "k1", h1)
	if err != nil || c.Owner == nil {
		t.Fatalf("A: %+v %v", c, err)
	}
	if c, _ := st[1].Begin(ctx, "tenant", "k1", h2); c.Refused != idempotency.RefusedConflict {
		t.Fatalf("B, another body: %+v, want a conflict", c)
	}
	// Another tenant's same key is its own.
	if c, _ := st[1].Begin(ctx, "other", "k1", h2); c.Owner == nil {
		t.Fatalf("B, another tenant: %+v, want owner", c)
	}
	c.Owner.Abandon()
	waitFor(t, 2*time.Second, "abandon seen on B", func() bool {
		c, _ := st[1].Begin(ctx, "tenant", "k1", h1)
		return c.Refused == idempotency.RefusedAbandoned
	})
}

// A waiter on B for a key in flight on A gets A's answer, chunk for chunk,
// when A finishes; and a later request on a third replica replays it.
func TestIdempotencyWaiterOnAnotherReplica(t *testing.T) {
	url := redisURL(t)
	prefix := testPrefix()
	a, b, c3 := open(t, url, prefix, nil), open(t, url, prefix, nil), open(t, url, prefix, nil)
	st := sharedStores(t, a, b, c3)
	waitSubscribedTo(t, "idem", a, b, c3)
	ctx := context.Background()
	h := [32]byte{9}
	own, err := st[0].Begin(ctx, "tenant", "k2", h)
	if err != nil || own.Owner == nil {
		t.Fatalf("A: %+v %v", own, err)
	}
	got := make(chan idempotency.Claim, 1)
	go func() {
		c, err := st[1].Begin(ctx, "tenant", "k2", h)
		if err != nil {
			t.Error(err)
		}
		got <- c
	}()
	time.Sleep(100 * time.Millisecond)
	select {
	case c := <-got:
		t.Fatalf("B did not wait for A: %+v", c)
	default:
	}
	want := streamRec()
	finished := time.Now()
	own.Owner.Complete(want)
	var c idempotency.Claim
	select {
	case c = <-got:
	case <-time.After(2 * time.Second):
		t.Fatal("B still waiting 2s after A finished")
	}
	t.Logf("waiter on B answered %s after A finished", time.Since(finished))
	if c.Replay == nil || !reflect.DeepEqual(c.Replay.Chunks, want.Chunks) || c.Replay.Header.Get("X-Request-Id") != "req-a" {
		t.Fatalf("B got %+v, want A's stream chunk for chunk", c)
	}
	c, _ = st[2].Begin(ctx, "tenant", "k2", h)
	if c.Replay == nil || !reflect.DeepEqual(c.Replay.Chunks, want.Chunks) {
		t.Fatalf("C got %+v, want the replay", c)
	}
}

// A key A released (nothing went upstream) is claimed afresh by B's waiter.
func TestIdempotencyReleaseHandsOver(t *testing.T) {
	url := redisURL(t)
	prefix := testPrefix()
	a, b := open(t, url, prefix, nil), open(t, url, prefix, nil)
	st := sharedStores(t, a, b)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	h := [32]byte{3}
	own, _ := st[0].Begin(ctx, "tenant", "k3", h)
	got := make(chan idempotency.Claim, 1)
	go func() { c, _ := st[1].Begin(ctx, "tenant", "k3", h); got <- c }()
	time.Sleep(50 * time.Millisecond)
	own.Owner.Release()
	if c := <-got; c.Owner == nil {
		t.Fatalf("B after A released: %+v, want owner", c)
	}
}

// Redis down or hanging: a keyed claim is refused at once by default
// (idempotency_unavailable: whether the key ran on another replica cannot
// be known), owned by the replica alone with DownLocal; either way no
// claim waits on Redis longer than one timeout.
func TestIdempotencyRedisDown(t *testing.T) {
	for _, tc := range []struct {
		name   string
		hang   bool
		policy idempotency.DownPolicy
		want   func(idempotency.Claim) bool
	}{
		{"stopped, refuse", false, idempotency.DownRefuse, func(c idempotency.Claim) bool { return c.Refused == idempotency.RefusedUnavailable }},
		{"hanging, refuse", true, idempotency.DownRefuse, func(c idempotency.Claim) bool { return c.Refused == idempotency.RefusedUnavailable }},
		{"stopped, local", false, idempotency.DownLocal, func(c idempotency.Claim) bool { return c.Owner != nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := redisURL(t)
			p, purl := newProxy(t, url)
			a := open(t, purl, testPrefix(), func(o *Options) { o.Timeout = 30 * time.Millisecond })
			st := sharedStores(t, a)
			st[0].SetDownPolicy(tc.policy)
			if tc.hang {
				p.Hang(true)
			} else {
				p.Cut(true)
			}
			start := time.Now()
			for i := range 5 {
				c, err := st[0].Begin(context.Background(), "tenant", "down"+string(rune('a'+i)), [32]byte{4})
				if err != nil || !tc.want(c) {
					t.Fatalf("claim %d with Redis down: %+v %v", i, c, err)
				}
				if c.Owner != nil {
					c.Owner.Complete(streamRec())
				}
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("five claims with Redis down took %s", d) // one timeout (30ms) each at most; generous for load
			}
			t.Logf("five claims with Redis %s: %s", map[bool]string{true: "hanging", false: "stopped"}[tc.hang], time.Since(start))
			if a.Up() {
				t.Error("Redis cut, still marked up")
			}
		})
	}
}

func waitSubscribedTo(t testing.TB, _ string, cs ...*Client) {
	t.Helper()
	waitSubscribed(t, cs...)
}
