package redisstate

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spillway-gw/spillway/internal/idempotency"
)

// A request on B waiting for a key in flight on A is bounded when B loses
// Redis mid-wait: its poll ends, the claim fails, and it is refused
// (idempotency_unavailable) instead of waiting on a Redis it cannot reach
// or running the request a second time.
func TestIdempotencyRedisGoneMidWait(t *testing.T) {
	url := redisURL(t)
	p, purl := newProxy(t, url)
	prefix := testPrefix()
	a := open(t, url, prefix, nil)
	b := open(t, purl, prefix, func(o *Options) { o.Timeout = 50 * time.Millisecond })
	st := sharedStores(t, a, b)
	h := [32]byte{7}
	own, err := st[0].Begin(context.Background(), "tenant", "mid", h)
	if err != nil || own.Owner == nil {
		t.Fatalf("A: %+v %v", own, err)
	}
	defer own.Owner.Release()
	got := make(chan idempotency.Claim, 1)
	go func() {
		c, err := st[1].Begin(context.Background(), "tenant", "mid", h) // no deadline of its own
		if err != nil {
			t.Error(err)
		}
		got <- c
	}()
	waitFor(t, 5*time.Second, "B waits for A", func() bool { return b.idem.Load().waiting() == 1 })
	p.Cut(true)
	cut := time.Now()
	select {
	case c := <-got:
		if c.Refused != idempotency.RefusedUnavailable {
			t.Fatalf("B after losing Redis mid-wait: %+v, want %s", c, idempotency.RefusedUnavailable)
		}
		t.Logf("B refused %s after losing Redis mid-wait (bound: one timeout once B marks Redis down, one poll of %s otherwise)", time.Since(cut), waitPoll)
	case <-time.After(10 * time.Second):
		t.Fatal("B still waiting 10s after it lost Redis")
	}
	if st[1].Stats().InFlight != 0 {
		t.Error("B kept the key in flight")
	}
}

// The owner's decision cannot be written (A lost Redis after its claim): it
// is kept and written when A reaches Redis again, and meanwhile a retry on
// B waits rather than runs, then replays A's answer. Where Redis lost the
// claim meanwhile (restarted empty), the decision is written all the same,
// so a retry after it replays instead of running again.
func TestIdempotencyFinishThroughOutage(t *testing.T) {
	for _, lost := range []bool{false, true} {
		t.Run(map[bool]string{false: "claim kept", true: "claim lost"}[lost], func(t *testing.T) {
			url := redisURL(t)
			p, purl := newProxy(t, url)
			prefix := testPrefix()
			a := open(t, purl, prefix, nil)
			b := open(t, url, prefix, nil)
			st := sharedStores(t, a, b)
			waitSubscribed(t, b)
			ctx := context.Background()
			h := [32]byte{8}
			own, err := st[0].Begin(ctx, "tenant", "fin", h)
			if err != nil || own.Owner == nil {
				t.Fatalf("A: %+v %v", own, err)
			}
			p.Cut(true)
			want := streamRec()
			own.Owner.Complete(want) // the decision cannot reach Redis now
			waitFor(t, 5*time.Second, "A marks Redis down", func() bool { return !a.Up() })
			o, _ := redis.ParseURL(url)
			raw := redis.NewClient(o)
			defer raw.Close()
			k := a.idem.Load().key("tenant", "fin")
			if lost {
				if err := raw.Del(ctx, k).Err(); err != nil {
					t.Fatal(err)
				}
				p.Cut(false)
				waitFor(t, 5*time.Second, "A's decision written", func() bool { return raw.HGet(ctx, k, "s").Val() == "completed" })
			}
			got := make(chan idempotency.Claim, 1)
			go func() {
				c, err := st[1].Begin(ctx, "tenant", "fin", h)
				if err != nil {
					t.Error(err)
				}
				got <- c
			}()
			if !lost {
				waitFor(t, 5*time.Second, "B waits for A's decision", func() bool { return b.idem.Load().waiting() == 1 })
				p.Cut(false)
			}
			select {
			case c := <-got:
				if c.Replay == nil || !reflect.DeepEqual(c.Replay.Chunks, want.Chunks) {
					t.Fatalf("B: %+v, want A's answer replayed", c)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("B still waiting 10s after A reached Redis again")
			}
		})
	}
}

// A claim whose reply came after the timeout was made in Redis all the
// same: A refuses its request, and releases that claim once Redis answers
// again, so a retry on B owns the key instead of waiting for an owner that
// will never finish (until InFlightLease).
func TestIdempotencyLateClaimReleased(t *testing.T) {
	url := redisURL(t)
	p, purl := newProxy(t, url)
	prefix := testPrefix()
	a := open(t, purl, prefix, func(o *Options) { o.Timeout = 50 * time.Millisecond })
	b := open(t, url, prefix, nil)
	st := sharedStores(t, a, b)
	waitSubscribed(t, a, b)
	ctx := context.Background()
	h := [32]byte{6}
	o, _ := redis.ParseURL(url)
	raw := redis.NewClient(o)
	defer raw.Close()
	// Loaded first: otherwise EVALSHA's NOSCRIPT reply comes late too,
	// and the claim never runs (this test alone on a fresh Redis).
	if err := claimScript.Load(ctx, raw).Err(); err != nil {
		t.Fatal(err)
	}
	p.Delay(300*time.Millisecond, 1)
	if c, err := st[0].Begin(ctx, "tenant", "late", h); err != nil || c.Refused != idempotency.RefusedUnavailable {
		t.Fatalf("A with replies later than its timeout: %+v %v, want refused", c, err)
	}
	k := a.idem.Load().key("tenant", "late")
	waitFor(t, 5*time.Second, "A's late claim landed", func() bool { return raw.HGet(ctx, k, "s").Val() == "inflight" })
	p.Delay(0, 1)
	bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	start := time.Now()
	c, err := st[1].Begin(bctx, "tenant", "late", h)
	if err != nil || c.Owner == nil {
		t.Fatalf("B's retry: %+v %v, want the key (A's late claim released)", c, err)
	}
	t.Logf("B owned the key %s after A's Redis answered in time again", time.Since(start))
	c.Owner.Release()
}

// A decision that finds the write queue full while Redis is up is kept,
// and must still be written while Redis stays up: otherwise the key stays
// in flight for every other replica until InFlightLease, after which a
// retry runs (and bills) again. Redis answers slowly here (its replies
// 300 ms late) but never goes down, and the queue holds one write.
func TestIdempotencyDecisionKeptWhileUp(t *testing.T) {
	tests := []struct {
		name   string
		decide func(o *idempotency.Owner)
		state  string
	}{
		{"completed", func(o *idempotency.Owner) { o.Complete(streamRec()) }, "completed"},
		{"failed", func(o *idempotency.Owner) { o.Fail(&idempotency.Recording{Status: 502, Body: []byte("{}")}) }, "failed"},
		{"abandoned", func(o *idempotency.Owner) { o.Abandon() }, "abandoned"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			url := redisURL(t)
			p, purl := newProxy(t, url)
			prefix := testPrefix()
			a := open(t, purl, prefix, func(o *Options) { o.QueueSize = 1 })
			st := sharedStores(t, a)
			ctx := context.Background()
			keys := []string{"q0", "q1", "q2", "q3"}
			owners := make([]*idempotency.Owner, len(keys))
			for i, k := range keys {
				c, err := st[0].Begin(ctx, "tenant", k, [32]byte{9, byte(i)})
				if err != nil || c.Owner == nil {
					t.Fatalf("claim %s: %+v %v", k, c, err)
				}
				owners[i] = c.Owner
			}
			p.Delay(300*time.Millisecond, 1) // the writer is busy with the first decision
			for _, o := range owners {
				tc.decide(o) // the others fill the queue, then are kept
			}
			p.Delay(0, 1)
			o, _ := redis.ParseURL(url)
			raw := redis.NewClient(o)
			defer raw.Close()
			waitFor(t, 5*time.Second, "every decision written while Redis is up", func() bool {
				for _, k := range keys {
					if raw.HGet(ctx, a.idem.Load().key("tenant", k), "s").Val() != tc.state {
						return false
					}
				}
				return true
			})
			if !a.Up() {
				t.Error("Redis was marked down: this test is about a Redis that stays up")
			}
		})
	}
}

// A claim whose reply was lost is released by its token, once Redis
// answers, on another connection than the claim's: the claim may reach
// Redis only after its release. Run through the claim and release scripts
// in each order, the late claim must leave the key free (another replica
// owns it at once, not after InFlightLease), and a release must never free
// a claim made with another token.
func TestIdempotencyReleaseBeforeLateClaim(t *testing.T) {
	type op struct {
		do   string // "claim" or "release"
		tok  string
		want string // claim's reply ("owned", "released", "inflight"); release: "" (only ran)
	}
	tests := []struct {
		name  string
		ops   []op
		owner string // the claim's token left in flight; "": the key is free
	}{
		{"release, then the late claim", []op{{"release", "a.1", ""}, {"claim", "a.1", "released"}}, ""},
		{"late claim, then its release", []op{{"claim", "a.1", "owned"}, {"release", "a.1", ""}}, ""},
		{"release, twice, then the late claim", []op{{"release", "a.1", ""}, {"release", "a.1", ""}, {"claim", "a.1", "released"}}, ""},
		{"a release never frees another token's claim", []op{{"claim", "b.1", "owned"}, {"release", "a.1", ""}}, "b.1"},
		{"release, a newer claim, then the late claim", []op{{"release", "a.1", ""}, {"claim", "b.1", "owned"}, {"claim", "a.1", "released"}}, "b.1"},
	}
	url := redisURL(t)
	prefix := testPrefix()
	a, b := open(t, url, prefix, nil), open(t, url, prefix, nil)
	st := sharedStores(t, a, b)
	o, _ := redis.ParseURL(url)
	raw := redis.NewClient(o)
	defer raw.Close()
	ctx := context.Background()
	h := [32]byte{5}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			key := "reorder" + string(rune('a'+i))
			sh := a.idem.Load()
			k := sh.key("tenant", key)
			t.Cleanup(func() { raw.Del(ctx, k) })
			for _, o := range tc.ops {
				switch o.do {
				case "release":
					if err := sh.runRelease(ctx, raw, k, o.tok); err != nil {
						t.Fatalf("release %s: %v", o.tok, err)
					}
				case "claim":
					res, err := sh.runClaim(ctx, raw, k, h, o.tok)
					if err != nil {
						t.Fatalf("claim %s: %v", o.tok, err)
					}
					if len(res) == 0 || res[0] != o.want {
						t.Errorf("claim %s: %v, want %s", o.tok, res, o.want)
					}
				}
			}
			if tc.owner != "" {
				if got := raw.HGet(ctx, k, "o").Val(); got != tc.owner || raw.HGet(ctx, k, "s").Val() != "inflight" {
					t.Fatalf("key held by %q, want %s's claim in flight", got, tc.owner)
				}
				return
			}
			if n := raw.Exists(ctx, k).Val(); n != 0 {
				t.Fatalf("key left claimed: %v", raw.HGetAll(ctx, k).Val())
			}
			if ttl := raw.PTTL(ctx, tombstone(k, "a.1")).Val(); ttl <= 0 || ttl > ReleasedTombstone {
				t.Errorf("tombstone TTL %s, want within (0, %s]", ttl, ReleasedTombstone)
			}
			bctx, cancel := context.WithTimeout(ctx, waitPoll/2) // owned at once, without one wait
			defer cancel()
			c, err := st[1].Begin(bctx, "tenant", key, h)
			if err != nil || c.Owner == nil {
				t.Fatalf("a retry on B: %+v %v, want the key at once", c, err)
			}
			c.Owner.Release()
		})
	}
}
