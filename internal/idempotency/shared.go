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
// When the shared store cannot answer (Claim returns an error), the store
// falls back to this process alone for that request: the key is owned
// locally, and a retry that lands on another replica during the outage may
// run again there.
type Shared interface {
	// Claim claims (tenant, key) for a request with hash across replicas,
	// or says what the key holds elsewhere.
	Claim(ctx context.Context, tenant, key string, hash [32]byte) (SharedClaim, error)
	// Wait returns when the key held elsewhere may have changed (its
	// owner finished, or a bounded poll interval passed), or with ctx's
	// error.
	Wait(ctx context.Context, tenant, key string) error
	// Finish records the owner's decision for every replica: the
	// recording of a completed or failed key, kept for ttl; a released
	// key is forgotten. It must not block (the store calls it after the
	// answer went out).
	Finish(tenant, key string, outcome SharedState, rec *Recording, ttl time.Duration)
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

// SetShared extends the store across replicas through sh (nil: none). Call
// it before serving.
func (s *Store) SetShared(sh Shared) { s.shared = sh }

// claimShared asks the replicas about the key e, which this process has
// just claimed (e is in the map, in flight). again: the key is in flight on
// another replica and the caller should look again.
func (s *Store) claimShared(ctx context.Context, e *entry) (c Claim, again bool, err error) {
	sc, err := s.shared.Claim(ctx, e.k.tenant, e.k.key, e.hash)
	if err != nil {
		// Fallback: this replica alone decides (see Shared).
		return Claim{Owner: &e.owner}, false, nil
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
