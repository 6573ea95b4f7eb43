// Package idempotency keeps, in memory only, the answer to each request sent
// with an Idempotency-Key, so a retry with the same key and body is answered
// from the recording instead of running (and billing) the generation again.
//
// The rules, per (tenant, key):
//   - The first request owns the key and runs; its answer is recorded.
//   - The same key with the same request hash replays the recorded answer
//     exactly: status, the headers worth replaying, and the body, or for a
//     stream the same bytes in the same flushed chunks.
//   - The same key with a different hash is refused with a 409 conflict.
//   - Concurrent requests with the key wait for the owner and get its result
//     once the owner has finished (a stream is replayed whole, not live).
//   - Fail closed: a key whose owner failed reports that failure from then on,
//     and a key whose owner went away before its answer was complete (or whose
//     answer was too large to keep) is refused with a 409; the request is
//     never run a second time under that key. Only an owner that provably
//     sent nothing upstream may Release the key.
//   - Bounded: finished keys are kept for a TTL counted from completion and
//     evicted least recently used past a count and a byte limit. A key that
//     expired or was evicted is simply gone: a later request with it runs
//     afresh. In-flight keys are never evicted.
//
// Replays are answered before any budget, gate or ledger is touched, so a
// replay can never charge twice; it carries the original's headers (cost
// included) plus Idempotent-Replayed: true, so the caller can tell.
//
// Across replicas (SetShared), a key is owned once for all of them and
// replays from any. A key whose shared claim cannot be made (the shared
// store down or too slow) is refused with a 503 by default rather than run,
// since a retry of it may already have run on another replica (see Shared
// and DownPolicy).
//
// Content lives only in memory (this process's, or the shared store's) and
// is never persisted: durable storage is content-free by product rule (the
// ledger keeps a request hash, never a prompt or an answer). A restart
// forgets every key this process held.
package idempotency

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spillway-gw/spillway/internal/clock"
)

// Defaults for Options' zero values.
const (
	DefaultMaxEntries = 10000
	DefaultMaxBytes   = 64 << 20
	DefaultTTL        = 24 * time.Hour
)

// entryOverhead approximates one entry's fixed memory (struct, map slot,
// list links) so a flood of tiny answers is bounded by MaxBytes as well.
const entryOverhead = 256

// Options bound a Store. Every zero or negative field takes its default.
type Options struct {
	// MaxEntries bounds the finished keys kept (default 10000). In-flight
	// keys are not counted and never evicted; the server's own concurrency
	// bounds them.
	MaxEntries int
	// MaxBytes bounds the memory of finished keys: recorded bytes plus a
	// small fixed overhead per entry (default 64 MiB).
	MaxBytes int64
	// MaxEntryBytes is the largest single recording kept (default
	// MaxBytes/4, never more than MaxBytes). A larger answer is not kept:
	// its key is refused (fail closed) until the TTL ends.
	MaxEntryBytes int64
	// TTL is how long a finished key is kept, counted from the moment its
	// answer was complete (default 24h).
	TTL time.Duration
	// Clock is the time source (nil: the system clock; tests pass a
	// clocktest.Clock).
	Clock clock.Passive
}

// Store maps (tenant, key) to a claim. It is safe for concurrent use; one
// mutex guards it, held only for map and list updates, never across I/O or
// a wait.
type Store struct {
	clock         clock.Passive
	ttl           time.Duration
	maxEntries    int
	maxBytes      int64
	maxEntryBytes int64

	mu    sync.Mutex
	keys  map[mapKey]*entry
	use   list // finished entries, most recently used first
	exp   list // finished entries, soonest expiry first
	n     int  // finished entries (those in use and exp)
	bytes int64

	bufs sync.Pool // of *recBuf, for the owners' recorders

	// shared extends the store across replicas (nil: none; see Shared),
	// downPolicy says what a claim it cannot answer does.
	shared     Shared
	downPolicy DownPolicy
	// Claims the shared store could not answer: refused (DownRefuse) or
	// owned here alone (DownLocal).
	sharedRefused, sharedLocal atomic.Uint64
}

// New returns an empty store bounded by o.
func New(o Options) *Store {
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxEntryBytes <= 0 {
		o.MaxEntryBytes = o.MaxBytes / 4
	}
	o.MaxEntryBytes = min(o.MaxEntryBytes, o.MaxBytes)
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	return &Store{
		clock: o.Clock, ttl: o.TTL, maxEntries: o.MaxEntries, maxBytes: o.MaxBytes, maxEntryBytes: o.MaxEntryBytes,
		keys: make(map[mapKey]*entry),
		use:  list{i: byUse}, exp: list{i: byExpiry},
		bufs: sync.Pool{New: func() any { return &recBuf{data: make([]byte, 0, 4096)} }},
	}
}

// Claim is the answer to Begin. Exactly one field is set.
type Claim struct {
	// Owner: the caller owns the key; run the request, record the answer
	// and end with exactly one of Complete, Fail, Abandon or Release.
	Owner *Owner
	// Replay: the key's finished answer; write it with Replay.
	Replay *Recording
	// Failed: the key's owner failed; write its failure with Replay. The
	// request is not run again under this key.
	Failed *Recording
	// Refused: the key cannot answer this request (Refusal.Public says what
	// to tell the caller).
	Refused Refusal
}

// Begin claims (tenant, key) for a request whose hash is hash (see
// RequestHash), or looks up what the key already holds. Tenant scopes keys
// (a virtual key id), so two tenants never see each other's answers. While
// another request owns the key, Begin waits until the owner finishes or ctx
// ends; the only error is ctx's, wrapped.
func (s *Store) Begin(ctx context.Context, tenant, key string, hash [32]byte) (Claim, error) {
	if !validKey(key) {
		return Claim{Refused: RefusedInvalidKey}, nil
	}
	k := mapKey{tenant: tenant, key: key}
	for {
		s.mu.Lock()
		s.expire(s.clock.Now())
		e := s.keys[k]
		switch {
		case e == nil:
			e = &entry{k: k, hash: hash}
			e.owner = Owner{s: s, e: e}
			s.keys[k] = e
			s.mu.Unlock()
			if s.shared == nil {
				return Claim{Owner: &e.owner}, nil
			}
			c, again, err := s.claimShared(ctx, e)
			if again {
				continue
			}
			return c, err
		case e.hash != hash:
			s.mu.Unlock()
			return Claim{Refused: RefusedConflict}, nil
		case e.state != inFlight:
			s.use.moveToFront(e)
			c := e.claim()
			s.mu.Unlock()
			return c, nil
		}
		// The channel is made by the first waiter only, so the common
		// uncontended claim allocates nothing for waiting.
		if e.done == nil {
			e.done = make(chan struct{})
		}
		done := e.done
		e.waiting++
		s.mu.Unlock()

		select {
		case <-done:
		case <-ctx.Done():
			s.mu.Lock()
			e.waiting--
			s.mu.Unlock()
			return Claim{}, fmt.Errorf("idempotency: waiting for the first request with this key: %w", ctx.Err())
		}
		// e's result is final once done is closed, even if e has been
		// evicted since: every waiter gets the owner's result.
		s.mu.Lock()
		e.waiting--
		released, c := e.state == released, e.claim()
		s.mu.Unlock()
		if !released {
			return c, nil
		}
		// The owner gave the key back unused: claim it afresh (one waiter
		// becomes the new owner, the rest wait for it).
	}
}

// Stats is a snapshot of a store's size, for metrics.
type Stats struct {
	// Entries counts finished keys kept; InFlight counts owned keys.
	Entries, InFlight int
	// Bytes is the accounted memory of the finished keys.
	Bytes int64
	// SharedRefused counts the requests refused because the shared store
	// could not answer their claim (DownRefuse); SharedLocal those owned
	// by this process alone instead (DownLocal). Both since start.
	SharedRefused, SharedLocal uint64
}

// Stats reports the store's current size.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(s.clock.Now())
	return Stats{Entries: s.n, InFlight: len(s.keys) - s.n, Bytes: s.bytes,
		SharedRefused: s.sharedRefused.Load(), SharedLocal: s.sharedLocal.Load()}
}

// Owner is the right, held by one request, to run under a key and record its
// answer. Its methods are safe to call from any goroutine; the first of
// Complete, Fail, Abandon or Release decides and later calls do nothing, so
// `defer owner.Abandon()` right after Begin fails the key closed on every
// path that forgot to decide (a panic included).
type Owner struct {
	s *Store
	e *entry
}

// Complete records the answer the caller saw in full: a success, or a 4xx
// about the caller's own request (that answer follows from the body, so it is
// replayed as recorded). A recording that is not a faithful copy of what the
// caller saw is not kept: with WriteFailed (or no status) the key is refused
// as abandoned, with OverLimit or past MaxEntryBytes as not kept.
func (o *Owner) Complete(r *Recording) { o.finish(completed, r) }

// Fail records a failure the caller saw (an upstream error on every rung, a
// stream interrupted after commit, a gate refusal after dispatch): the key
// reports it to every later request and the request is never run again
// under this key. Unfaithful recordings are handled as in Complete.
func (o *Owner) Fail(r *Recording) { o.finish(failed, r) }

// Abandon marks a key whose caller went away before its answer was complete.
// Whether the provider generated (and billed) is unknown, so the key fails
// closed: later requests with it are refused with RefusedAbandoned.
func (o *Owner) Abandon() { o.finish(abandoned, nil) }

// Release gives the key back unused, for an owner that provably sent nothing
// upstream (a gate refused the request before any dispatch). The key is
// forgotten, so a retry after, say, a rate-limit delay runs normally; a
// waiting request claims it afresh.
func (o *Owner) Release() { o.finish(released, nil) }

// Recorder wraps w in a RecordingWriter limited to the store's
// MaxEntryBytes, growing in a buffer the store reuses.
func (o *Owner) Recorder(w http.ResponseWriter) *RecordingWriter {
	return newPooledRecorder(w, int(min(o.s.maxEntryBytes, int64(maxInt))), &o.s.bufs)
}

const maxInt = int(^uint(0) >> 1)

func (o *Owner) finish(st state, r *Recording) {
	s, e := o.s, o.e
	s.mu.Lock()
	share := false
	defer func() {
		s.mu.Unlock()
		if share {
			// e's state and recording are final now.
			s.shared.Finish(e.k.tenant, e.k.key, e.hash, sharedOutcome(e.state), e.rec, s.ttl)
		}
	}()
	if e.state != inFlight {
		return
	}
	share = e.shared
	defer func() {
		if e.done != nil {
			close(e.done)
		}
	}()
	if st == released {
		e.state = released
		delete(s.keys, e.k)
		return
	}
	e.state, e.rec = st, r
	size := int64(entryOverhead + len(e.k.tenant) + len(e.k.key))
	switch {
	case st == abandoned || st == notKept:
		e.rec = nil
	case r == nil || r.Status == 0 || r.WriteFailed:
		e.state, e.rec = abandoned, nil
	case r.OverLimit || size+r.size() > s.maxEntryBytes:
		e.state, e.rec = notKept, nil
	default:
		size += r.size()
	}
	e.size = size
	e.expires = s.clock.Now().Add(s.ttl)
	s.use.pushFront(e)
	s.exp.pushBack(e)
	s.n++
	s.bytes += size
	for (s.n > s.maxEntries || s.bytes > s.maxBytes) && s.use.tail != e {
		s.remove(s.use.tail)
	}
}

// expire drops every finished entry whose TTL has passed. TTL is the same
// for all, so the expiry list is in completion order and only its head need
// be looked at.
func (s *Store) expire(now time.Time) {
	for e := s.exp.head; e != nil && !now.Before(e.expires); e = s.exp.head {
		s.remove(e)
	}
}

// remove forgets a finished entry.
func (s *Store) remove(e *entry) {
	s.use.remove(e)
	s.exp.remove(e)
	if s.keys[e.k] == e {
		delete(s.keys, e.k)
	}
	s.n--
	s.bytes -= e.size
}

type mapKey struct{ tenant, key string }

type state uint8

const (
	inFlight state = iota
	completed
	failed
	abandoned
	notKept
	released
)

// entry is one key. All fields are guarded by Store.mu; once state leaves
// inFlight, hash, state and rec never change again.
type entry struct {
	k       mapKey
	hash    [32]byte
	state   state
	rec     *Recording
	size    int64
	expires time.Time
	done    chan struct{} // made by the first waiter, closed when the owner decides
	waiting int           // requests blocked on done
	owner   Owner
	shared  bool // owned across replicas: its decision goes to Shared
	link    [2]links
}

func (e *entry) claim() Claim {
	switch e.state {
	case completed:
		return Claim{Replay: e.rec}
	case failed:
		return Claim{Failed: e.rec}
	case abandoned:
		return Claim{Refused: RefusedAbandoned}
	case notKept:
		return Claim{Refused: RefusedNotKept}
	}
	return Claim{}
}
