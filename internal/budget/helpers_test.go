package budget

import (
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/clock/clocktest"
	"github.com/spillway-gw/spillway/internal/ledger"
)

// t0 is a Tuesday noon, UTC, on a whole second.
var t0 = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)

func newTest(at time.Time) (*Accountant, *clocktest.Clock) {
	c := clocktest.New(at)
	return New(c), c
}

func i64(v int64) *int64 { return &v }

var (
	org   = Scope{ledger.ScopeOrg, "acme"}
	team  = Scope{ledger.ScopeTeam, "research"}
	key   = Scope{ledger.ScopeKey, "key_1"}
	model = Scope{ledger.ScopeModel, "claude-sonnet-4-5"}
	all4  = []Scope{org, team, key, model}
)

// stateOf finds sc in a snapshot; the zero state (with the scope) if absent.
func stateOf(a *Accountant, sc Scope) ScopeState {
	for _, s := range a.Snapshot() {
		if s.Scope == sc {
			return s
		}
	}
	return ScopeState{Scope: sc}
}

func mustReserve(t testing.TB, a *Accountant, scopes []Scope, amount int64, tokens int) *Hold {
	t.Helper()
	h, r := a.Reserve(scopes, amount, tokens)
	if r != nil {
		t.Fatalf("Reserve(%d, %d) refused: %s", amount, tokens, r)
	}
	return h
}
