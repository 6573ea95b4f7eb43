package idempotency

import (
	"context"
	"fmt"
	"time"
)

// Shared extends a Store across the replicas of a gateway
// (internal/redisstate implements it over Redis): a key claimed on one
// replica is owned there for all, its answer replays from any replica, and
// a request waiting on replica B for a key in flight on A gets A's answer
// when A finishes. Nil (the default): keys are this process's own.
//
// When the shared store cannot answer a claim (Claim returns an error: it
// is down, or slower than its own bound), whether the key is used
// elsewhere cannot be known, so by default (DownRefuse) the request is
// refused with RefusedUnavailable (503 idempotency_unavailable, Retry-After)
// and nothing runs: a retry of a request that already ran on another
// replica must not run (and bill) again. DownLocal, an operator's explicit
// choice, owns the key on this process alone instead: the request runs,
// and a retry that lands on another replica during the outage may run
// again there. A key already decided or in flight in this process is
// answered from it either way, without asking the shared store.
type Shared interface {
	// Claim claims (tenant, key) for a request with hash across replicas,
	// or says what the key holds elsewhere. An error means the shared
	// store could not answer within its bound; the store then takes the
	// key as not claimed, so a claim made with its answer lost must be
	// freed by the implementation (redisstate releases it once Redis
	// answers).
	Claim(ctx context.Context, tenant, key string, hash [32]byte) (SharedClaim, error)
	// Wait returns when the key held elsewhere may have changed (its
	// owner finished, or a bounded poll interval passed), or with ctx's
	// error. The store claims again after it returns, so a shared store
	// that went away meanwhile is noticed within one poll interval (at
	// once where the implementation wakes its waiters when it goes down).
	Wait(ctx context.Context, tenant, key string) error
	// Finish records the owner's decision for every replica: the
	// recording of a completed or failed key, kept for ttl; a released
	// key is forgotten. hash is the key's request hash, so the decision
	// can be written even where the claim was lost (a shared store that
	// restarted empty). It must not block (the store calls it after the
	// answer went out), and it must keep the decision until the shared
	// store takes it: a key left in flight makes other replicas wait.
	Finish(tenant, key string, hash [32]byte, outcome SharedState, rec *Recording, ttl time.Duration)
}

// SharedState is what a key holds across replicas.
type SharedState uint8

// SharedState values.
const (
	SharedOwned SharedState = iota + 1 // Claim: the caller owns the key now
	SharedInFlight
	SharedConflict // the key holds another request's hash
	SharedCompleted
	SharedFailed
	SharedAbandoned
	SharedNotKept
	SharedReleased // Finish only
)

// SharedClaim is Claim's answer: the key's state and, for a completed or
// failed key, its recording.
type SharedClaim struct {
	State SharedState
	Rec   *Recording
}

// DownPolicy is what a request with a key does when the shared store
// cannot answer its claim (see Shared).
type DownPolicy uint8

// DownPolicy values.
const (
	// DownRefuse (the default) refuses the request with RefusedUnavailable:
	// nothing runs, nothing is billed, and the caller retries later.
	DownRefuse DownPolicy = iota
	// DownLocal owns the key on this process alone and runs the request; a
	// retry that lands on another replica meanwhile may run again.
	DownLocal
)

// SetShared extends the store across replicas through sh (nil: none). Call
// it before serving.
func (s *Store) SetShared(sh Shared) { s.shared = sh }

// SetDownPolicy sets what a keyed request does when the shared store
// cannot answer its claim (default DownRefuse). Call it before serving.
func (s *Store) SetDownPolicy(p DownPolicy) { s.downPolicy = p }

// claimShared asks the replicas about the key e, which this process has
// just claimed (e is in the map, in flight). again: the key is in flight on
// another replica and the caller should look again.
func (s *Store) claimShared(ctx context.Context, e *entry) (c Claim, again bool, err error) {
	sc, err := s.shared.Claim(ctx, e.k.tenant, e.k.key, e.hash)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		// The caller went away: nothing to answer, nothing ran.
		e.owner.finish(released, nil)
		return Claim{}, false, fmt.Errorf("idempotency: claiming the key across replicas: %w", ctx.Err())
	case s.downPolicy == DownLocal:
		// The operator's choice: this replica alone decides (see Shared).
		s.sharedLocal.Add(1)
		return Claim{Owner: &e.owner}, false, nil
	default:
		// Whether the key ran elsewhere is unknown: refuse, run nothing.
		// Local waiters look again (and ask the shared store themselves).
		s.sharedRefused.Add(1)
		e.owner.finish(released, nil)
		return Claim{Refused: RefusedUnavailable}, false, nil
	}
	switch sc.State {
	case SharedOwned:
		s.mu.Lock()
		e.shared = true
		s.mu.Unlock()
		return Claim{Owner: &e.owner}, false, nil
	case SharedInFlight:
		e.owner.finish(released, nil) // local waiters look again too
		if err := s.shared.Wait(ctx, e.k.tenant, e.k.key); err != nil {
			return Claim{}, false, fmt.Errorf("idempotency: waiting for the first request with this key: %w", err)
		}
		return Claim{}, true, nil
	case SharedConflict:
		e.owner.finish(released, nil)
		return Claim{Refused: RefusedConflict}, false, nil
	}
	// A decision made elsewhere: kept here too, like one made here, so
	// local waiters and later requests are answered without asking again.
	st := map[SharedState]state{SharedCompleted: completed, SharedFailed: failed, SharedAbandoned: abandoned, SharedNotKept: notKept}[sc.State]
	if st == 0 {
		e.owner.finish(released, nil)
		return Claim{}, true, nil
	}
	e.owner.finish(st, sc.Rec)
	s.mu.Lock()
	c = e.claim()
	s.mu.Unlock()
	return c, false, nil
}

// sharedOutcome maps a local decision to the replicas'.
func sharedOutcome(st state) SharedState {
	switch st {
	case completed:
		return SharedCompleted
	case failed:
		return SharedFailed
	case abandoned:
		return SharedAbandoned
	case notKept:
		return SharedNotKept
	}
	return SharedReleased
}
