// Package budget is the gateway's in-memory accounting of budgets and
// limits at org, team, key and model scope: credit balances, daily caps,
// RPM and TPM, with one worst-case hold per customer request that is
// settled exactly once.
//
// A reservation counts against every limit the moment it is made, so
// concurrent requests cannot overspend. All of it is in memory and
// lock-light (one small mutex per scope, taken in a fixed order); the
// ledger is the durable record and seeds the figures at start-up through
// LoadSpend.
package budget

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spillway-gw/spillway/internal/clock"
	"github.com/spillway-gw/spillway/internal/ledger"
)

// Scope names one holder of limits and spend.
type Scope struct {
	// Kind is ledger.ScopeOrg, ScopeTeam, ScopeKey or ScopeModel.
	Kind string `json:"scope"`
	// ID is the org or team name, the key id or the public model name.
	ID string `json:"id"`
}

// limits is one scope's budget, normalised: -1 = no money limit, 0 = no
// rate limit.
type limits struct {
	credit, daily int64
	rpm, tpm      int64
}

var noLimits = limits{credit: -1, daily: -1}

// state is one scope's running figures. Its mutex is held only for a few
// field updates, never across I/O; states are never deleted, so a Hold may
// keep pointers to them.
type state struct {
	seq   uint64 // creation order: the global lock order
	scope Scope

	mu    sync.Mutex
	spent int64 // settled, in total
	held  int64 // reserved and not yet settled
	day   int64 // UTC day number that today counts
	today int64 // settled on day
	win   window
	// downUsed is what this replica held alone while the shared store
	// was down, in outage downEpoch (see DownPolicy).
	downUsed  int64
	downEpoch uint64
}

// roll starts a new UTC day's count and moves the rate window to now.
func (s *state) roll(day, sec int64) {
	if day != s.day {
		s.day, s.today = day, 0
	}
	s.win.advance(sec)
}

// Accountant holds every scope's limits and figures. It is safe for
// concurrent use. Memory grows with the number of distinct scopes seen
// (about 1.5 KiB each), so callers pass only known scopes: authenticated
// keys, their team and org, and configured model names.
type Accountant struct {
	clock clock.Passive
	// limits is replaced whole by SetBudgets, so one Reserve sees one
	// consistent set. Keyed by state: a pointer hashes faster than a Scope.
	limits atomic.Pointer[map[*state]limits]

	mu     sync.RWMutex
	states map[Scope]*state
	seq    uint64

	// shared checks the gates across replicas (nil: this process only;
	// see Shared), downPolicy applies while it cannot answer.
	shared     Shared
	downPolicy DownPolicy
	wasDown    atomic.Bool
	downEpoch  atomic.Uint64
	// sharedHolds maps a *Hold to its *SharedReserve: kept beside the
	// hold, not in it, so a Hold stays as small without a shared store.
	sharedHolds sync.Map
}

// New returns an Accountant with no limits on c (nil = the system clock;
// tests pass a clocktest.Clock).
func New(c clock.Passive) *Accountant {
	if c == nil {
		c = clock.Real{}
	}
	a := &Accountant{clock: c, states: map[Scope]*state{}}
	a.limits.Store(&map[*state]limits{})
	return a
}

// SetBudgets replaces every limit with bs; a scope not in bs has none.
// Spend, holds and rate windows are kept, so open holds settle normally and
// a tightened limit refuses from the next Reserve on. Following the ledger
// contract, a nil money field or a zero (or negative) RPM/TPM is no limit; a
// credit or daily cap pointing at 0 or less allows nothing. A scope listed
// twice takes its last entry.
func (a *Accountant) SetBudgets(bs []ledger.Budget) {
	m := make(map[*state]limits, len(bs))
	for _, b := range bs {
		l := noLimits
		if b.CreditMicroUSD != nil {
			l.credit = max(*b.CreditMicroUSD, 0)
		}
		if b.DailyCapMicroUSD != nil {
			l.daily = max(*b.DailyCapMicroUSD, 0)
		}
		l.rpm, l.tpm = int64(max(b.RPM, 0)), int64(max(b.TPM, 0))
		m[a.state(Scope{b.Scope, b.ID})] = l
	}
	a.limits.Store(&m)
}

// LoadSpend seeds settled spend from the ledger, normally once at start-up
// before traffic: each named scope's total becomes TotalMicro and, when day
// falls on the current UTC day, its today figure becomes TodayMicro (a
// seed from an earlier day only sets totals). Holds and rate windows are
// untouched; scopes not named keep their figures.
func (a *Accountant) LoadSpend(spends []ledger.Spend, day time.Time) {
	now := a.clock.Now()
	seedDay, curDay, sec := dayOf(day), dayOf(now), now.Unix()
	for _, sp := range spends {
		st := a.state(Scope{sp.Scope, sp.ID})
		st.mu.Lock()
		st.roll(curDay, sec)
		st.spent = max(sp.TotalMicro, 0)
		if seedDay == curDay {
			st.today = max(sp.TodayMicro, 0)
		}
		st.mu.Unlock()
	}
}

// state returns the state of sc, creating it on first use.
func (a *Accountant) state(sc Scope) *state {
	a.mu.RLock()
	st := a.states[sc]
	a.mu.RUnlock()
	if st != nil {
		return st
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if st = a.states[sc]; st == nil {
		a.seq++
		st = &state{seq: a.seq, scope: sc}
		a.states[sc] = st
	}
	return st
}

// Hold is one request's reservation at every scope it was made against.
// Settle or Release it exactly once; later calls do nothing.
type Hold struct {
	a      *Accountant
	amount int64
	tokens int64
	sec    int64 // the Unix second the tokens were counted in
	done   atomic.Bool
	states []*state
	inline [4]*state // backs states for the usual org/team/key/model
}

// AmountMicro is the amount held at every scope (what the ledger's
// reservation row records).
func (h *Hold) AmountMicro() int64 { return h.amount }

// Reserve checks every scope's gates and, only if all pass, holds
// amountMicro (the request's worst case) against each scope's credit and
// daily cap, counts one request against its RPM and tokens (input estimate
// plus output ceiling) against its TPM. It is all or nothing: on refusal
// nothing is held or counted anywhere. Scopes without limits are counted
// too, so a limit set later sees their spend. Duplicate scopes count once;
// negative amounts count as 0.
//
// A gate passes while spent+held+amount stays within credit (and today's
// settled+held+amount within the daily cap: holds made on an earlier day
// still count), requests in the last 60 s stay under RPM, and tokens in
// the last 60 s plus tokens stay within TPM. When several gates refuse,
// the refusal reported is the most lasting one (credit, then daily cap,
// then RPM, then TPM), at the first such scope in the order given.
func (a *Accountant) Reserve(scopes []Scope, amountMicro int64, tokens int) (*Hold, *Refusal) {
	if a.shared != nil {
		return a.reserveShared(scopes, amountMicro, tokens)
	}
	return a.reserve(scopes, amountMicro, tokens, true)
}

// reserve is Reserve in this process; gates false counts without checking
// (what the shared store already checked).
func (a *Accountant) reserve(scopes []Scope, amountMicro int64, tokens int, gates bool) (*Hold, *Refusal) {
	now := a.clock.Now()
	day, sec := dayOf(now), now.Unix()
	amount, toks := max(amountMicro, 0), int64(max(tokens, 0))
	lim := *a.limits.Load()

	// Resolve states in the caller's order (for reporting) and lock them in
	// creation order (to never deadlock against another Reserve).
	var sbuf, obuf [4]*state
	var lbuf [4]limits
	sts, ord, ls := sbuf[:0], obuf[:0], lbuf[:0]
	for _, sc := range scopes {
		st := a.state(sc)
		if slices.Contains(sts, st) {
			continue
		}
		l, ok := lim[st]
		if !ok {
			l = noLimits
		}
		sts, ls = append(sts, st), append(ls, l)
	}
	ord = append(ord, sts...)
	if len(ord) > 1 {
		sortStates(ord)
	}
	for _, st := range ord {
		st.mu.Lock()
		st.roll(day, sec)
	}
	if !gates {
		// Checked across replicas already.
	} else if r := check(now, sts, ls, amount, toks); r != nil {
		for _, st := range ord {
			st.mu.Unlock()
		}
		return nil, r
	}
	h := &Hold{a: a, amount: amount, tokens: toks, sec: sec}
	for _, st := range ord {
		st.held = addSat(st.held, amount)
		st.win.add(sec, 1, toks)
		st.mu.Unlock()
	}
	h.states = append(h.inline[:0], sts...)
	return h, nil
}

// check runs every gate over the locked states, most lasting gate first.
func check(now time.Time, sts []*state, ls []limits, amount, toks int64) *Refusal {
	for i, st := range sts {
		if l := ls[i].credit; l >= 0 && addSat(addSat(st.spent, st.held), amount) > l {
			return refuse(st.scope, gateCredit, l, amount, amount > l, 0)
		}
	}
	for i, st := range sts {
		if l := ls[i].daily; l >= 0 && addSat(addSat(st.today, st.held), amount) > l {
			if amount > l {
				return refuse(st.scope, gateDaily, l, amount, true, 0)
			}
			next := time.Unix((st.day+1)*secsPerDay, 0)
			return refuse(st.scope, gateDaily, l, amount, false, next.Sub(now))
		}
	}
	for i, st := range sts {
		if l := ls[i].rpm; l > 0 && st.win.reqs+1 > l {
			return refuse(st.scope, gateRPM, l, 1, false, st.win.freeIn(now, st.win.reqs+1-l, false))
		}
	}
	for i, st := range sts {
		if l := ls[i].tpm; l > 0 && addSat(st.win.tokens, toks) > l {
			if toks > l {
				return refuse(st.scope, gateTPM, l, toks, true, 0)
			}
			return refuse(st.scope, gateTPM, l, toks, false, st.win.freeIn(now, st.win.tokens+toks-l, true))
		}
	}
	return nil
}

// Settle closes the hold with what the serving rung actually cost and the
// tokens it actually used: the hold is released at every scope and
// actualMicro becomes spend (in total and on the current UTC day), and the
// tokens counted at Reserve are corrected to actualTokens if that second is
// still in the TPM window. The actual cost is recorded as it is, even above
// the reservation (the ledger records it so, and the next Reserve then sees
// it): an input estimate can fall short. Negative figures count as 0.
//
// Only the first call counts and returns true; any later Settle or Release
// (or any call on a nil Hold) does nothing and returns false.
func (h *Hold) Settle(actualMicro int64, actualTokens int) bool {
	if h == nil || !h.done.CompareAndSwap(false, true) {
		return false
	}
	now := h.a.clock.Now()
	day, sec := dayOf(now), now.Unix()
	actual, delta := max(actualMicro, 0), int64(max(actualTokens, 0))-h.tokens
	if h.a.shared != nil {
		h.a.settleShared(h, actual, delta)
	}
	for _, st := range h.states {
		st.mu.Lock()
		st.roll(day, sec)
		st.held -= h.amount
		st.spent = addSat(st.spent, actual)
		st.today = addSat(st.today, actual)
		st.win.correct(h.sec, delta)
		st.mu.Unlock()
	}
	return true
}

// Release settles the hold at zero (every rung failed, or nothing billable
// happened): the amount and tokens are given back; the request still
// counts against RPM. It reports whether this call closed the hold.
func (h *Hold) Release() bool { return h.Settle(0, 0) }

// ScopeState is one scope's limits and figures, for admin and usage views.
type ScopeState struct {
	Scope
	// CreditMicro and DailyCapMicro are nil when there is no such limit.
	CreditMicro   *int64 `json:"credit_micro_usd,omitempty"`
	DailyCapMicro *int64 `json:"daily_cap_micro_usd,omitempty"`
	// RPM and TPM are 0 when there is no such limit.
	RPM int64 `json:"rpm,omitempty"`
	TPM int64 `json:"tpm,omitempty"`
	// SpentMicro is settled spend in total, TodayMicro on the current UTC
	// day, HeldMicro reserved by requests in flight.
	SpentMicro int64 `json:"spent_micro_usd"`
	TodayMicro int64 `json:"today_micro_usd"`
	HeldMicro  int64 `json:"held_micro_usd"`
	// Requests and Tokens are counted in the last 60 s.
	Requests int64 `json:"requests_last_minute"`
	Tokens   int64 `json:"tokens_last_minute"`
}

// Snapshot returns every scope that has (or had) limits or has been
// counted, sorted
// by kind then id. Each scope is read consistently; the set is not one
// instant across scopes.
func (a *Accountant) Snapshot() []ScopeState {
	now := a.clock.Now()
	day, sec := dayOf(now), now.Unix()
	lim := *a.limits.Load()
	a.mu.RLock()
	sts := make([]*state, 0, len(a.states))
	for _, st := range a.states {
		sts = append(sts, st)
	}
	a.mu.RUnlock()

	out := make([]ScopeState, 0, len(sts))
	for _, st := range sts {
		st.mu.Lock()
		st.roll(day, sec)
		ss := ScopeState{Scope: st.scope, SpentMicro: st.spent, TodayMicro: st.today, HeldMicro: st.held,
			Requests: st.win.reqs, Tokens: st.win.tokens}
		st.mu.Unlock()
		l, ok := lim[st]
		if !ok {
			l = noLimits
		}
		out = append(out, withLimits(ss, l))
	}
	sort.Slice(out, func(i, j int) bool {
		return cmp.Or(cmp.Compare(out[i].Kind, out[j].Kind), cmp.Compare(out[i].ID, out[j].ID)) < 0
	})
	return out
}

func withLimits(ss ScopeState, l limits) ScopeState {
	if l.credit >= 0 {
		ss.CreditMicro = &l.credit
	}
	if l.daily >= 0 {
		ss.DailyCapMicro = &l.daily
	}
	ss.RPM, ss.TPM = l.rpm, l.tpm
	return ss
}

// sortStates orders states by creation: insertion sort, as there are
// usually four.
func sortStates(s []*state) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j].seq < s[j-1].seq; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

const secsPerDay = 86400

// dayOf is t's UTC day number since the Unix epoch.
func dayOf(t time.Time) int64 {
	s := t.Unix()
	d := s / secsPerDay
	if s%secsPerDay < 0 {
		d--
	}
	return d
}

// addSat adds two non-negative figures, saturating instead of wrapping to a
// small or negative total that would pass a gate.
func addSat(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
