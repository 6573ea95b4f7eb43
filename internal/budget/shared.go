package budget

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"time"
)

// Shared keeps the gates' figures across the replicas of a gateway
// (internal/redisstate implements it with atomic scripts): one Reserve
// checks and counts every scope's credit, daily cap, RPM and TPM for all
// replicas at once, so requests spread over replicas cannot overspend a
// budget or pass a rate limit. Nil (the default): this process only.
type Shared interface {
	// Reserve checks and, only if every gate passes, holds and counts the
	// request across replicas. An error means the shared store could not
	// answer (in its bounded time): the Accountant applies its DownPolicy.
	Reserve(r *SharedReserve) (SharedVerdict, error)
	// Settle closes a shared hold: the hold given back, actual spent, the
	// tokens counted at sec corrected by tokenDelta. It must not block.
	Settle(r *SharedReserve, actualMicro, tokenDelta int64)
}

// SharedScope is one scope's limits as Reserve sends them, with this
// replica's figures to seed the shared ones when the store has none (a
// fresh Redis, or one that lost its data).
type SharedScope struct {
	// Key names the scope ("org:acme").
	Key string
	// Credit and Daily: -1 no limit. RPM and TPM: 0 no limit.
	Credit, Daily, RPM, TPM int64
	// SeedSpent and SeedToday are this replica's settled figures.
	SeedSpent, SeedToday int64
}

// SharedReserve is one request's shared reservation.
type SharedReserve struct {
	Scopes []SharedScope
	Amount int64 // micro-USD held at every scope
	Tokens int64 // counted against every TPM
	Now    time.Time
	// HoldID names the hold; it expires after HoldTTL if no replica
	// settles it (the replica died).
	HoldID  string
	HoldTTL time.Duration
}

// SharedVerdict is Reserve's answer: OK, or the gate that refused, at
// Scopes[Index], and when retrying can succeed.
type SharedVerdict struct {
	OK    bool
	Index int
	Gate  int // gateCredit, gateDaily, gateRPM or gateTPM
	Retry time.Duration
}

// DownPolicy is what budgets do while the shared store cannot answer.
type DownPolicy struct {
	// Allowance (0..1): each replica may spend, on its own, this share of
	// each money limit (credit and daily cap) while the store is down,
	// counted from the first request it served so. 0 (the default):
	// requests under a money limit are refused with 503
	// budget_unavailable. Rate limits fall back to this replica's own
	// windows either way.
	Allowance float64
}

// HoldTTL bounds a shared hold a dead replica never settled.
const HoldTTL = 15 * time.Minute

// SetShared makes the gates shared across replicas through sh, with
// policy p while it is down (nil sh: this process only). Call it before
// serving.
func (a *Accountant) SetShared(sh Shared, p DownPolicy) {
	a.shared, a.downPolicy = sh, p
}

// unavailable is the refusal while the shared budgets cannot be checked.
func unavailable(sc Scope) *Refusal {
	return &Refusal{Scope: sc, Code: "budget_unavailable", status: http.StatusServiceUnavailable, RetryAfter: time.Second,
		Message: "budgets are shared between this gateway's replicas and cannot be checked right now; retry after the delay in the Retry-After header"}
}

// reserveShared is Reserve with a shared store.
func (a *Accountant) reserveShared(scopes []Scope, amountMicro int64, tokens int) (*Hold, *Refusal) {
	lim := *a.limits.Load()
	amount, toks := max(amountMicro, 0), int64(max(tokens, 0))
	now := a.clock.Now()
	req := &SharedReserve{Amount: amount, Tokens: toks, Now: now, HoldTTL: HoldTTL}
	var idx []Scope // req.Scopes[i] is idx[i]
	money := -1     // a scope with a money limit
	for _, sc := range scopes {
		st := a.state(sc)
		l, ok := lim[st]
		if !ok || l == noLimits || containsScope(idx, sc) {
			continue
		}
		st.mu.Lock()
		st.roll(dayOf(now), now.Unix())
		spent, today := st.spent, st.today
		st.mu.Unlock()
		req.Scopes = append(req.Scopes, SharedScope{Key: sc.Kind + ":" + sc.ID, Credit: l.credit, Daily: l.daily,
			RPM: l.rpm, TPM: l.tpm, SeedSpent: spent, SeedToday: today})
		idx = append(idx, sc)
		if money < 0 && (l.credit >= 0 || l.daily >= 0) {
			money = len(idx) - 1
		}
	}
	if len(req.Scopes) == 0 {
		return a.reserve(scopes, amountMicro, tokens, true)
	}
	req.HoldID = newHoldID()
	v, err := a.shared.Reserve(req)
	if err != nil {
		return a.reserveDown(scopes, amountMicro, tokens, idx, money)
	}
	if !v.OK {
		sc := req.Scopes[v.Index]
		switch v.Gate {
		case gateCredit:
			return nil, refuse(idx[v.Index], gateCredit, sc.Credit, amount, amount > sc.Credit, 0)
		case gateDaily:
			return nil, refuse(idx[v.Index], gateDaily, sc.Daily, amount, amount > sc.Daily, v.Retry)
		case gateRPM:
			return nil, refuse(idx[v.Index], gateRPM, sc.RPM, 1, false, v.Retry)
		}
		return nil, refuse(idx[v.Index], gateTPM, sc.TPM, toks, toks > sc.TPM, v.Retry)
	}
	// Counted across replicas: count it here too, unchecked, so this
	// replica's figures (seeds, admin views) follow.
	h, _ := a.reserve(scopes, amountMicro, tokens, false)
	a.sharedHolds.Store(h, req)
	if a.wasDown.Load() && a.wasDown.CompareAndSwap(true, false) {
		a.downEpoch.Add(1) // the store answers: the next outage starts afresh
	}
	return h, nil
}

// reserveDown applies the DownPolicy: rate limits on this replica's own
// windows; money limits refused, or allowed up to the allowance.
func (a *Accountant) reserveDown(scopes []Scope, amountMicro int64, tokens int, idx []Scope, money int) (*Hold, *Refusal) {
	if money < 0 {
		return a.reserve(scopes, amountMicro, tokens, true)
	}
	p := a.downPolicy
	if p.Allowance <= 0 {
		return nil, unavailable(idx[money])
	}
	a.wasDown.Store(true)
	lim := *a.limits.Load()
	amount := max(amountMicro, 0)
	epoch := a.downEpoch.Load()
	// Each money-limited scope lets this replica spend alone its share
	// of its smallest money limit since the outage began here.
	var taken []*state
	undo := func() {
		for _, st := range taken {
			st.mu.Lock()
			st.downUsed -= amount
			st.mu.Unlock()
		}
	}
	for _, sc := range idx {
		st := a.state(sc)
		l := lim[st]
		allow := int64(-1)
		for _, v := range [2]int64{l.credit, l.daily} {
			if v >= 0 && (allow < 0 || v < allow) {
				allow = v
			}
		}
		if allow < 0 {
			continue
		}
		allow = int64(float64(allow) * p.Allowance)
		st.mu.Lock()
		if st.downEpoch != epoch {
			st.downEpoch, st.downUsed = epoch, 0
		}
		ok := st.downUsed+amount <= allow
		if ok {
			st.downUsed += amount
		}
		st.mu.Unlock()
		if !ok {
			undo()
			return nil, unavailable(sc)
		}
		taken = append(taken, st)
	}
	h, r := a.reserve(scopes, amountMicro, tokens, true)
	if r != nil {
		undo()
	}
	return h, r
}

func containsScope(s []Scope, sc Scope) bool {
	for _, x := range s {
		if x == sc {
			return true
		}
	}
	return false
}

func newHoldID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// settleShared closes h's shared hold, if it has one.
func (a *Accountant) settleShared(h *Hold, actual, tokenDelta int64) {
	if v, ok := a.sharedHolds.LoadAndDelete(h); ok {
		a.shared.Settle(v.(*SharedReserve), actual, tokenDelta)
	}
}
