package engine

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/clock"
	"github.com/spillway-gw/spillway/internal/failure"
)

// Hedging (a route's hedge). When a request's first attempt has not
// committed (no first token: no semantic event) within the plan's Hedge
// threshold, the next rung starts alongside it. The first of the two to
// commit serves; the other is cancelled (its context, so its provider sees
// the connection close) and recorded as hedged_lost, neutral to health.
// Nothing reaches the caller before a commit, so the caller sees one
// answer: the winner's id, headers and events, none of the loser's.
//
// A whole (non-streamed) answer is decided at the same boundary, the first
// token, not at the first complete answer: the loser is cancelled as early
// as a stream's would be (its cost stays the prompt and a few tokens, not
// a second whole answer), the same request picks the same winner in both
// modes, and the hedge answers the question it is for, a provider that is
// silent, not one that writes more slowly. A winner that fails before its
// answer is whole fails over as any attempt does, to the rung after the
// race's.
//
// One hedge per request at most: only the first attempt arms one, never a
// retry or a last-resort probe, and only when a later rung serves the
// same exact model.

// HedgeOutcome is what a request's hedge did.
type HedgeOutcome string

const (
	// HedgeWon: the hedge committed first and served.
	HedgeWon HedgeOutcome = "won"
	// HedgeLost: the first attempt committed first; the hedge was cancelled.
	HedgeLost HedgeOutcome = "lost"
	// HedgeFailed: neither committed (both failed); the chain went on.
	HedgeFailed HedgeOutcome = "failed"
)

// HedgeObserver is implemented by an Observer that counts hedges: each one
// started, with its outcome once the race is decided.
type HedgeObserver interface {
	ObserveHedge(p *Plan, outcome HedgeOutcome)
}

// errLostRace is the cancel cause of an attempt that lost its race.
var errLostRace = errors.New("the attempt it raced committed first")

// hedgeLost is the failure of an attempt that lost its race.
func hedgeLost() *failure.Error {
	return &failure.Error{Class: failure.HedgedLost, Detail: "cancelled: the attempt it raced committed first", Err: errLostRace}
}

// commitFailure is an attempt's failure when its commit did not happen:
// it lost its race, or the caller could not be written to.
func commitFailure(err error) *failure.Error {
	if fe := failure.As(err); fe != nil && fe.Class == failure.HedgedLost {
		return fe
	}
	return failure.Cancelled(err)
}

// hedges reports whether the attempt about to start on rung i arms a
// hedge: the plan asks for one, it is the request's first attempt (no
// retry, none before it), not a last-resort probe, and a later rung
// exists.
func hedges(p *Plan, i int, retry bool, res *Result) bool {
	return p.Hedge > 0 && !retry && len(res.Attempts) == 0 && !p.Rungs[i].Forced && i+1 < len(p.Rungs)
}

// extra is what one attempt does beyond the plain chain: hold back an
// opening refusal (refusal failover), and claim the commit from its race's
// referee (hedging). The zero value does neither.
type extra struct {
	hold refusalHold
	// refusal is set when the attempt ended as a refusal moved on from.
	refusal *heldAnswer
	// rf and racer are set when the attempt races; claimed once it won.
	rf      *referee
	racer   *racer
	claimed bool
}

func newExtra(p *Plan, i int) *extra {
	return &extra{hold: newHold(p.RefusalBuffer, i+1 < len(p.Rungs))}
}

// claim asks the referee for the commit: nil when the attempt may commit
// (it won, or it races nobody), else its hedged_lost failure.
func (x *extra) claim() *failure.Error {
	if x.racer == nil || x.claimed {
		return nil
	}
	if fe := x.rf.claim(x.racer); fe != nil {
		return fe
	}
	x.claimed = true
	return nil
}

// racer is one attempt of a race, run on its own goroutine against its
// own Result; the referee merges the race into the request's.
type racer struct {
	rung  int
	start time.Time
	res   Result
	col   *collector // a whole answer's own; nil for a stream
	x     extra
	// cancel ends the attempt; the loser's cause is errLostRace.
	cancel context.CancelCauseFunc
	// fe is the attempt's failure (nil: it served); read after over.
	fe   *failure.Error
	over chan struct{}
}

// referee runs a race: it starts the racers, gives the commit to the
// first that claims it, cancels the other, and merges the attempts into
// the request's Result.
type referee struct {
	e    *Engine
	p    *Plan
	req  *canonical.Request
	sink Sink // the caller's; nil for a whole answer
	// main is the request's Result; its first prior attempts came before
	// the race. During the race only the winner writes it (as it finishes
	// the caller's stream), and the hedge's dispatch appends its Skipped
	// before any commit.
	main  *Result
	prior int
	ended chan *racer
	// timer starts the hedge; a commit stops it.
	timer clock.Timer

	mu     sync.Mutex
	winner *racer
	racers []*racer // in dispatch order: the first attempt, then the hedge
}

// race runs the request's first attempt, on rung i, with a hedge armed.
// It returns the race's failure (nil: served) and, as next does, where
// the chain goes on; *refusal receives a refusal a racer moved on from.
func (e *Engine) race(ctx context.Context, p *Plan, i int, req *canonical.Request, sink Sink, col *collector, res *Result, done func(*Attempt), refusal **heldAnswer) (fe *failure.Error, rung int, retry, stop bool) {
	rf := &referee{e: e, p: p, req: req, sink: sink, main: res, prior: len(res.Attempts), ended: make(chan *racer, 2)}
	if col != nil {
		rf.sink = nil
	}
	// The threshold runs from before the first attempt is dispatched, so
	// that it never starts late.
	fire := make(chan struct{}, 1)
	rf.timer = e.clock.AfterFunc(p.Hedge, func() {
		select {
		case fire <- struct{}{}:
		default:
		}
	})
	defer rf.timer.Stop()
	rf.mu.Lock()
	first := rf.launch(ctx, i, done, col != nil)
	rf.mu.Unlock()
	var hedge *racer
	for pending := 1; pending > 0; {
		select {
		case <-fire:
			if hedge == nil {
				if hedge = rf.hedge(ctx, i, col != nil); hedge != nil {
					pending++
				}
			}
		case <-rf.ended:
			pending--
		}
	}
	rf.timer.Stop()
	rf.merge(nil)
	w := rf.winner
	for _, r := range rf.racers {
		*refusal = r.x.keptRefusal(*refusal)
		if r.col != nil && (r != w || r.fe != nil) {
			r.col.release()
		}
	}
	if hedge != nil {
		res.Hedge = rf.outcome()
		if o, ok := e.observer.(HedgeObserver); ok {
			o.ObserveHedge(p, res.Hedge)
		}
	}
	switch {
	case w != nil && (w.fe == nil || res.Committed):
		if w.col != nil && w.fe == nil {
			res.col = w.col
		}
		return w.fe, 0, false, true
	case w != nil:
		// A whole answer's winner failed before its end: nothing reached
		// the caller, so the chain goes on after the race's rungs.
		rung, retry, stop = next(rf.racers[len(rf.racers)-1].rung, true, w.fe)
		return w.fe, rung, retry, stop
	case hedge == nil:
		// The first attempt failed before the hedge was due: as if none
		// had been armed (its same-rung retry included).
		rung, retry, stop = next(i, false, first.fe)
		return first.fe, rung, retry, stop
	case !movesOn(first.fe):
		// The first attempt's failure would have ended the chain.
		return first.fe, 0, false, true
	}
	rung, retry, stop = next(hedge.rung, false, hedge.fe)
	return hedge.fe, rung, retry, stop
}

// launch starts an attempt on rung k on its own goroutine. Caller holds
// rf.mu.
func (rf *referee) launch(ctx context.Context, k int, done func(*Attempt), whole bool) *racer {
	r := &racer{rung: k, start: rf.e.now(), over: make(chan struct{})}
	r.res.Served = -1
	r.x = *newExtra(rf.p, k)
	r.x.rf, r.x.racer = rf, r
	var sink Sink
	if whole {
		r.col = newCollector(rf.e.maxAnswer)
		r.col.mem = rf.e.answers
	} else {
		sink = &raceSink{rf: rf, r: r}
	}
	actx, cancel := context.WithCancelCause(ctx)
	r.cancel = cancel
	rf.racers = append(rf.racers, r)
	go func() {
		r.fe = rf.e.streamAttempt(actx, rf.p, k, false, rf.req, sink, r.col, &r.res, done, &r.x)
		cancel(nil)
		close(r.over)
		rf.ended <- r
	}()
	return r
}

// hedge starts the hedge, on the first rung after i that serves the same
// exact model and that the gate admits, unless an attempt committed or
// the first one ended meanwhile. It returns nil when it started none.
func (rf *referee) hedge(ctx context.Context, i int, whole bool) *racer {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	if rf.winner != nil || isOver(rf.racers[0]) {
		return nil
	}
	for j := i + 1; j < len(rf.p.Rungs); j++ {
		if rf.p.ModelOf(j) != rf.p.ModelOf(i) {
			continue // a hedge never changes the model
		}
		if done, ok := rf.e.admit(rf.p, j, rf.main); ok {
			return rf.launch(ctx, j, done, whole)
		}
	}
	return nil
}

// claim gives the commit to r if nobody has it, cancelling the other
// racer; it returns r's hedged_lost failure when the other has it.
func (rf *referee) claim(r *racer) *failure.Error {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	if rf.winner == nil {
		rf.winner = r
		rf.timer.Stop() // a committed request is never hedged
		for _, o := range rf.racers {
			if o != r {
				o.cancel(errLostRace)
			}
		}
	}
	if rf.winner != r {
		return hedgeLost()
	}
	return nil
}

// outcome is the hedge's outcome so far (the winner is decided).
func (rf *referee) outcome() HedgeOutcome {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	switch {
	case len(rf.racers) < 2:
		return ""
	case rf.winner == nil:
		return HedgeFailed
	case rf.winner == rf.racers[1]:
		return HedgeWon
	}
	return HedgeLost
}

func isOver(r *racer) bool {
	select {
	case <-r.over:
		return true
	default:
		return false
	}
}

func (rf *referee) snapshot() []*racer {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	return slices.Clone(rf.racers)
}

// view is the trail a winner shows at its commit: the attempts before the
// race, then each racer's in dispatch order, the winner's own as own. It
// waits for the other to end: the claim cancelled it, so that takes as
// long as its provider's connection takes to close, and the trail the
// caller sees is the one the ledger will hold (a racer that failed on
// its own at the same moment shows its own failure, not hedged_lost).
func (rf *referee) view(self *racer, own []Attempt) []Attempt {
	out := slices.Clone(rf.main.Attempts[:rf.prior])
	for _, r := range rf.snapshot() {
		if r == self {
			out = append(out, own...)
			continue
		}
		<-r.over
		out = append(out, r.res.Attempts...)
	}
	return out
}

// merge writes the race into the request's Result: every racer's attempt
// in dispatch order, and the winner's outcome. self is the winner when it
// merges before it finishes the caller's stream (it waits for the other
// to end first); nil once every racer ended.
func (rf *referee) merge(self *racer) {
	racers := rf.snapshot()
	m := rf.main
	attempts, skipped := m.Attempts[:rf.prior], m.Skipped
	for _, r := range racers {
		if r != self {
			<-r.over
		}
		attempts = append(attempts, r.res.Attempts...)
	}
	if w := rf.winnerOf(); w != nil {
		col := m.col
		*m = w.res
		m.col = col
	} else {
		m.Served, m.Committed = -1, false
	}
	m.Attempts, m.Skipped = attempts, skipped
	m.Hedge = rf.outcome()
}

func (rf *referee) winnerOf() *racer {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	return rf.winner
}

// raceSink is a racer's side of the caller's stream. Nothing reaches it
// before the racer's commit, and a racer commits only once it won, so the
// caller sees the winner alone.
type raceSink struct {
	rf *referee
	r  *racer
}

func (k *raceSink) Commit(res *Result) error {
	view := *res
	view.Attempts = k.rf.view(k.r, res.Attempts)
	view.Hedge = k.rf.outcome()
	return k.rf.sink.Commit(&view)
}

func (k *raceSink) Event(ev *canonical.Event) error { return k.rf.sink.Event(ev) }

func (k *raceSink) Flush() error { return k.rf.sink.Flush() }

// Finish settles the whole race (the loser's attempt included) before the
// caller's stream ends.
func (k *raceSink) Finish(*Result) error {
	k.rf.merge(k.r)
	return k.rf.sink.Finish(k.rf.main)
}

func (k *raceSink) Interrupt(*Result) error {
	k.rf.merge(k.r)
	return k.rf.sink.Interrupt(k.rf.main)
}
