package idempotency

import (
	"context"
	"errors"
	"testing"
	"time"
)

// fakeShared answers Claim as told and records Finish.
type fakeShared struct {
	claim    SharedClaim
	err      error
	finished []SharedState
}

func (f *fakeShared) Claim(context.Context, string, string, [32]byte) (SharedClaim, error) {
	return f.claim, f.err
}
func (f *fakeShared) Wait(ctx context.Context, _, _ string) error { return ctx.Err() }
func (f *fakeShared) Finish(_, _ string, _ [32]byte, o SharedState, _ *Recording, _ time.Duration) {
	f.finished = append(f.finished, o)
}

// Unhappy paths first, table-driven: what a claim elsewhere means here.
func TestSharedClaims(t *testing.T) {
	rec := &Recording{Status: 200, Body: []byte("ok")}
	tests := []struct {
		name   string
		f      fakeShared
		check  func(Claim) bool
		finish []SharedState // after the owner completes, when it owns
	}{
		{"shared store down: refused, nothing shared (TestSharedUnavailable has the rest)", fakeShared{err: errors.New("down")}, func(c Claim) bool { return c.Refused == RefusedUnavailable }, nil},
		{"conflict elsewhere", fakeShared{claim: SharedClaim{State: SharedConflict}}, func(c Claim) bool { return c.Refused == RefusedConflict }, nil},
		{"abandoned elsewhere", fakeShared{claim: SharedClaim{State: SharedAbandoned}}, func(c Claim) bool { return c.Refused == RefusedAbandoned }, nil},
		{"not kept elsewhere", fakeShared{claim: SharedClaim{State: SharedNotKept}}, func(c Claim) bool { return c.Refused == RefusedNotKept }, nil},
		{"failed elsewhere", fakeShared{claim: SharedClaim{State: SharedFailed, Rec: rec}}, func(c Claim) bool { return c.Failed == rec }, nil},
		{"completed elsewhere", fakeShared{claim: SharedClaim{State: SharedCompleted, Rec: rec}}, func(c Claim) bool { return c.Replay == rec }, nil},
		{"owned", fakeShared{claim: SharedClaim{State: SharedOwned}}, func(c Claim) bool { return c.Owner != nil }, []SharedState{SharedCompleted}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Options{})
			s.SetShared(&tc.f)
			c, err := s.Begin(context.Background(), "t", "key", [32]byte{1})
			if err != nil || !tc.check(c) {
				t.Fatalf("Begin = %+v, %v", c, err)
			}
			if c.Owner != nil {
				c.Owner.Complete(rec)
			}
			if len(tc.f.finished) != len(tc.finish) {
				t.Errorf("finished %v, want %v", tc.f.finished, tc.finish)
			}
		})
	}
}

// A key in flight elsewhere waits; the caller's deadline ends the wait.
func TestSharedInFlightWaits(t *testing.T) {
	s := New(Options{})
	s.SetShared(&fakeShared{claim: SharedClaim{State: SharedInFlight}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := s.Begin(ctx, "t", "key", [32]byte{1}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Begin = %v, want the deadline", err)
	}
	if st := s.Stats(); st.InFlight != 0 {
		t.Errorf("a wait left %d keys in flight here", st.InFlight)
	}
}
