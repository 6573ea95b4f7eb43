package redisstate

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spillway-gw/spillway/internal/idempotency"
)

// Idempotency layout, under the prefix:
//
//	idem:<sha256(tenant, key)>  hash: h (request hash), s (state), o (owner:
//	                            the claim's token: replica, process nonce,
//	                            claim number), r (the
//	                            recording, JSON)
//	idem:<sha256(tenant, key)>:released:<token>
//	                            string, for ReleasedTombstone: a claim
//	                            released by its token before Redis ran it
//	idem                        channel: the hashed name of a key decided
//
// An in-flight key expires after InFlightLease: a replica that died while
// owning it leaves it in flight that long, then a retry runs afresh. A
// decided key lives for the store's TTL. The owner's decision is written
// even where its claim is gone (a Redis restarted empty while the decision
// waited in the durable queue, or a key evicted): the owner ran the request
// with that hash, so a retry elsewhere replays it instead of running again. Answers live in Redis's memory
// for that TTL; run it without persistence (save "", appendonly no) to keep
// the promise that answers are never written to disk.

// InFlightLease bounds how long a key stays in flight across replicas.
const InFlightLease = 15 * time.Minute

// ReleasedTombstone is how long a release of a claim whose reply was lost
// is remembered, by the claim's token, next to its key. The claim may
// reach Redis after its release (sent on one connection and held there,
// the release on another): for this long the late claim finds its token
// released and claims nothing, where it would otherwise leave the key in
// flight for every replica until InFlightLease with nobody to finish it.
// A claim later still than this stands until InFlightLease, as before.
// Such releases are rare (one per lost claim reply), and each tombstone is
// a few bytes.
const ReleasedTombstone = 5 * time.Minute

// waitPoll bounds a waiter's sleep between looks, in case the message that
// its key was decided was missed (a reconnect).
const waitPoll = 250 * time.Millisecond

// claimScript claims KEYS[1] for the request hash ARGV[1] with token
// ARGV[2], in flight for ARGV[3] ms, unless that token was released
// already (KEYS[2], its tombstone: the claim came late, its caller gone).
var claimScript = redis.NewScript(`
if redis.call("EXISTS", KEYS[2]) == 1 then return {"released"} end
local v = redis.call("HMGET", KEYS[1], "h", "s")
if not v[1] then
  redis.call("HSET", KEYS[1], "h", ARGV[1], "s", "inflight", "o", ARGV[2])
  redis.call("PEXPIRE", KEYS[1], ARGV[3])
  return {"owned"}
end
if v[1] ~= ARGV[1] then return {"conflict"} end
if v[2] == "inflight" then return {"inflight"} end
return {v[2], redis.call("HGET", KEYS[1], "r") or ""}
`)

var finishScript = redis.NewScript(`
local v = redis.call("HMGET", KEYS[1], "o", "s")
if not v[1] then
  if ARGV[2] == "released" then return 0 end
  redis.call("HSET", KEYS[1], "h", ARGV[5], "s", ARGV[2], "o", ARGV[1], "r", ARGV[3])
  redis.call("PEXPIRE", KEYS[1], ARGV[4])
  redis.call("PUBLISH", KEYS[2], KEYS[1])
  return 1
end
if v[1] ~= ARGV[1] or v[2] ~= "inflight" then return 0 end
if ARGV[2] == "released" then
  redis.call("DEL", KEYS[1])
else
  redis.call("HSET", KEYS[1], "s", ARGV[2], "r", ARGV[3])
  redis.call("PEXPIRE", KEYS[1], ARGV[4])
end
redis.call("PUBLISH", KEYS[2], KEYS[1])
return 1
`)

// idemReleaseScript frees the claim of KEYS[1] made with token ARGV[1] (if it
// stands; never a claim with another token) and leaves that token's
// tombstone KEYS[3] for ARGV[2] ms, so the claim, should it reach Redis
// only now, claims nothing. KEYS[2] is the channel a decided key is named on.
var idemReleaseScript = redis.NewScript(`
redis.call("SET", KEYS[3], "1", "PX", ARGV[2])
local v = redis.call("HMGET", KEYS[1], "o", "s")
if v[1] ~= ARGV[1] or v[2] ~= "inflight" then return 0 end
redis.call("DEL", KEYS[1])
redis.call("PUBLISH", KEYS[2], KEYS[1])
return 1
`)

var stateNames = map[idempotency.SharedState]string{
	idempotency.SharedCompleted: "completed", idempotency.SharedFailed: "failed",
	idempotency.SharedAbandoned: "abandoned", idempotency.SharedNotKept: "not_kept",
	idempotency.SharedReleased: "released",
}

var namedStates = map[string]idempotency.SharedState{
	"owned": idempotency.SharedOwned, "inflight": idempotency.SharedInFlight, "conflict": idempotency.SharedConflict,
	"completed": idempotency.SharedCompleted, "failed": idempotency.SharedFailed,
	"abandoned": idempotency.SharedAbandoned, "not_kept": idempotency.SharedNotKept,
}

// wireRec is a Recording on the wire: status, replayed headers, and the
// body or the stream's flushed chunks, each kept as it was.
type wireRec struct {
	Status   int         `json:"status"`
	Header   http.Header `json:"header,omitempty"`
	Body     []byte      `json:"body,omitempty"`
	Chunks   [][]byte    `json:"chunks,omitempty"`
	Streamed bool        `json:"streamed,omitempty"`
}

// idemShared implements idempotency.Shared.
type idemShared struct {
	c     *Client
	nonce string        // this process's, in every token: a replica name may be reused after a restart
	seq   atomic.Uint64 // numbers this replica's claims

	mu      sync.Mutex
	waiters map[string][]chan struct{} // by Redis key
	// owners holds, by Redis key, the owner token of this replica's claim
	// that may stand in Redis (owned, or made with its reply lost) until
	// its Finish or release is sent. A token names one claim, so a late
	// release can never free a later claim of the same key.
	owners map[string]string
}

var _ idempotency.Shared = (*idemShared)(nil)

// ShareIdempotency extends st across every replica on this Redis.
func (c *Client) ShareIdempotency(st *idempotency.Store) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	sh := &idemShared{c: c, nonce: hex.EncodeToString(b[:]), waiters: map[string][]chan struct{}{}, owners: map[string]string{}}
	c.idem.Store(sh)
	c.handle("idem", sh.decided)
	st.SetShared(sh)
}

func (s *idemShared) key(tenant, key string) string {
	h := sha256.New()
	h.Write([]byte(tenant))
	h.Write([]byte{0})
	h.Write([]byte(key))
	return s.c.key("idem", hex.EncodeToString(h.Sum(nil)))
}

// Claim implements idempotency.Shared with one atomic script. A claim
// whose reply was lost (a timeout, a cut connection, the caller gone) may
// have been made all the same, leaving the key in flight for every replica
// until InFlightLease with nobody to finish it: such a claim is released
// through the durable queue, by its own token, once Redis answers.
func (s *idemShared) Claim(ctx context.Context, tenant, key string, hash [32]byte) (idempotency.SharedClaim, error) {
	c := s.c
	k := s.key(tenant, key)
	tok := c.o.Replica + "." + s.nonce + "." + strconv.FormatUint(s.seq.Add(1), 36)
	var res []any
	err := c.call(ctx, "idempotency.claim", func(ctx context.Context) error {
		var err error
		res, err = s.runClaim(ctx, c.rdb, k, hash, tok)
		return err
	})
	switch {
	case err == nil && len(res) > 0 && res[0] == "owned":
		s.setOwner(k, tok)
	case err != nil && !errors.Is(err, ErrDown) && !isReply(err):
		s.release(k, tok)
	}
	if err != nil {
		return idempotency.SharedClaim{}, err
	}
	if len(res) == 0 {
		return idempotency.SharedClaim{}, errors.New("redisstate: empty claim reply")
	}
	name, _ := res[0].(string)
	if name == "released" {
		// Only a claim whose reply was lost is released, so no caller
		// should read this; never take it for a key owned.
		return idempotency.SharedClaim{}, errors.New("redisstate: claim token already released")
	}
	st, ok := namedStates[name]
	if !ok {
		return idempotency.SharedClaim{}, errors.New("redisstate: unknown key state " + name)
	}
	out := idempotency.SharedClaim{State: st}
	if raw, _ := resAt(res, 1).(string); raw != "" && (st == idempotency.SharedCompleted || st == idempotency.SharedFailed) {
		var w wireRec
		if err := json.Unmarshal([]byte(raw), &w); err != nil {
			return idempotency.SharedClaim{}, err
		}
		out.Rec = &idempotency.Recording{Status: w.Status, Header: w.Header, Body: w.Body, Chunks: w.Chunks, Streamed: w.Streamed}
	} else if st == idempotency.SharedCompleted || st == idempotency.SharedFailed {
		out.State = idempotency.SharedNotKept // a decision without its answer cannot be replayed
	}
	return out, nil
}

func resAt(res []any, i int) any {
	if i < len(res) {
		return res[i]
	}
	return nil
}

// Wait implements idempotency.Shared: woken by the owner's message, when
// Redis is marked down, or after waitPoll at most.
func (s *idemShared) Wait(ctx context.Context, tenant, key string) error {
	k := s.key(tenant, key)
	ch := make(chan struct{})
	s.mu.Lock()
	s.waiters[k] = append(s.waiters[k], ch)
	s.mu.Unlock()
	defer s.drop(k, ch)
	t := time.NewTimer(waitPoll)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// waiting counts the requests waiting on this replica for keys in flight
// elsewhere (tests).
func (s *idemShared) waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, ws := range s.waiters {
		n += len(ws)
	}
	return n
}

func (s *idemShared) drop(k string, ch chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ws := s.waiters[k]
	for i, w := range ws {
		if w == ch {
			ws = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(s.waiters, k)
	} else {
		s.waiters[k] = ws
	}
}

// wakeAll wakes every waiter, for Redis marked down: none would hear a
// decision now.
func (s *idemShared) wakeAll() {
	s.mu.Lock()
	ws := s.waiters
	s.waiters = map[string][]chan struct{}{}
	s.mu.Unlock()
	for _, chs := range ws {
		for _, w := range chs {
			close(w)
		}
	}
}

// decided wakes the waiters of a key another replica decided.
func (s *idemShared) decided(k string) {
	s.mu.Lock()
	ws := s.waiters[k]
	delete(s.waiters, k)
	s.mu.Unlock()
	for _, w := range ws {
		close(w)
	}
}

func (s *idemShared) setOwner(k, tok string) {
	s.mu.Lock()
	s.owners[k] = tok
	s.mu.Unlock()
}

// takeOwner forgets and returns the token of this replica's claim of k
// ("" when none stands).
func (s *idemShared) takeOwner(k string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	tok := s.owners[k]
	delete(s.owners, k)
	return tok
}

// release frees the claim tok of k, if it was made, once Redis answers;
// if the claim reaches Redis only after that, it claims nothing.
func (s *idemShared) release(k, tok string) {
	c := s.c
	c.durable("idempotency.release", max(time.Second, 20*c.o.Timeout), func(ctx context.Context, r redis.Cmdable) error {
		return s.runRelease(ctx, r, k, tok)
	})
}

// runClaim runs claimScript for the claim tok of k.
func (s *idemShared) runClaim(ctx context.Context, r redis.Scripter, k string, hash [32]byte, tok string) ([]any, error) {
	return claimScript.Run(ctx, r, []string{k, tombstone(k, tok)}, hex.EncodeToString(hash[:]), tok, InFlightLease.Milliseconds()).Slice()
}

// runRelease runs idemReleaseScript for the claim tok of k.
func (s *idemShared) runRelease(ctx context.Context, r redis.Scripter, k, tok string) error {
	return idemReleaseScript.Run(ctx, r, []string{k, s.c.key("idem"), tombstone(k, tok)}, tok, ReleasedTombstone.Milliseconds()).Err()
}

// tombstone is the key that says the claim tok of k was released.
func tombstone(k, tok string) string { return k + ":released:" + tok }

// Finish implements idempotency.Shared through the durable queue: sent in
// the background, bounded by twenty call timeouts (at least a second: a
// recording may be megabytes), and kept through an outage (up to
// maxPending decisions and settlements) to be sent when Redis returns, so
// that no key stays in flight for the others.
func (s *idemShared) Finish(tenant, key string, hash [32]byte, outcome idempotency.SharedState, rec *idempotency.Recording, ttl time.Duration) {
	c := s.c
	if c.ctx.Err() != nil {
		return
	}
	var raw []byte
	if rec != nil && (outcome == idempotency.SharedCompleted || outcome == idempotency.SharedFailed) {
		raw, _ = json.Marshal(wireRec{Status: rec.Status, Header: rec.Header, Body: rec.Body, Chunks: rec.Chunks, Streamed: rec.Streamed})
	}
	k := s.key(tenant, key)
	tok := s.takeOwner(k)
	if tok == "" {
		tok = c.o.Replica + ".0" // not claimed here: written only where the key is gone
	}
	args := []any{tok, stateNames[outcome], raw, max(ttl, time.Millisecond).Milliseconds(), hex.EncodeToString(hash[:])}
	c.durable("idempotency.finish", max(time.Second, 20*c.o.Timeout), func(ctx context.Context, r redis.Cmdable) error {
		return finishScript.Run(ctx, r, []string{k, c.key("idem")}, args...).Err()
	})
}
