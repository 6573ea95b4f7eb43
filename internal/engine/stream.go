package engine

import (
	"context"
	"io"
	"time"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/failure"
)

// Sink is the caller's side of a stream: a dialect encoder bound to the
// response writer. Every method returns an error when the caller can no
// longer be written to, which the engine treats as a disconnect.
type Sink interface {
	// Commit is called once, when the first semantic event is about to be
	// sent (or before Finish for an empty answer). res says which rung
	// serves and every attempt so far; the sink writes headers then.
	Commit(res *Result) error
	// Event receives semantic events only, in order; ev is valid only for
	// the call. It need not flush:
	// the engine calls Flush when no further event is ready.
	Event(ev *canonical.Event) error
	// Flush sends what Commit and Event wrote.
	Flush() error
	// Finish ends a complete answer. res is final: its attempts, usage,
	// stop reason and serving rung are set, so the sink can settle before
	// it writes the success terminator.
	Finish(res *Result) error
	// Interrupt ends a committed stream that broke, with a typed error
	// event. res is final: res.Err is the failure and res.DeliveredTokens
	// what reached the caller.
	Interrupt(res *Result) error
}

// TokensOf estimates the tokens in one delta: providers stream about a token
// per delta, and about four bytes make a token.
func TokensOf(ev *canonical.Event) int {
	if !ev.Kind.Semantic() || (ev.Kind == canonical.EventToolCallStart && ev.Text == "") {
		return 0
	}
	n := (len(ev.Text) + 3) / 4
	if n < 1 {
		n = 1
	}
	return n
}

// watchdog cancels an attempt when a silence bound passes: first the
// first-byte bound until the first event, then the idle bound between events.
type watchdog struct {
	timer  *time.Timer
	idle   time.Duration
	first  bool
	cancel context.CancelCauseFunc
}

func startWatchdog(cancel context.CancelCauseFunc, firstByte, idle time.Duration) *watchdog {
	w := &watchdog{idle: idle, first: true, cancel: cancel}
	if firstByte > 0 {
		w.timer = time.AfterFunc(firstByte, func() { cancel(&timeoutCause{failure.TimeoutFirstByte}) })
	}
	return w
}

// event notes that an event arrived: the next bound is the idle one.
func (w *watchdog) event() {
	if w.first {
		w.first = false
		if w.timer != nil {
			w.timer.Stop()
		}
		if w.idle > 0 {
			w.timer = time.AfterFunc(w.idle, func() { w.cancel(&timeoutCause{failure.TimeoutIdle}) })
		} else {
			w.timer = nil
		}
		return
	}
	if w.timer != nil {
		w.timer.Reset(w.idle)
	}
}

func (w *watchdog) stop() {
	if w.timer != nil {
		w.timer.Stop()
	}
}

// Stream runs a streamed request. Before commit every failure the table
// allows moves on (retry once or next rung) invisibly; after commit a
// failure ends the caller's stream with a typed error event.
func (e *Engine) Stream(ctx context.Context, p *Plan, req *canonical.Request, sink Sink) *Result {
	res := &Result{Served: -1}
	retry := false
	for i := 0; i < len(p.Rungs); {
		done, ok := e.admit(p, i, res)
		if !ok {
			i, retry = i+1, false
			continue
		}
		fe := e.streamAttempt(ctx, p, i, retry, req, sink, res, done)
		if fe == nil {
			return res
		}
		if res.Committed {
			return res
		}
		res.Err = fe
		var stop bool
		i, retry, stop = next(i, retry, fe)
		if stop {
			return res
		}
	}
	return e.exhausted(res)
}

// streamAttempt makes one attempt on rung i. It returns nil when the rung
// served the whole answer; otherwise the failure, with res.Err and the
// caller's stream already finished when the failure came after commit.
func (e *Engine) streamAttempt(ctx context.Context, p *Plan, i int, retry bool, req *canonical.Request, sink Sink, res *Result, done func(*Attempt)) *failure.Error {
	r := &p.Rungs[i]
	to := r.Deployment.Timeouts
	a := Attempt{Rung: i, Deployment: r.Deployment.ID, Retry: retry, Start: e.now()}
	tctx, tcancel := context.WithTimeoutCause(ctx, to.Total.D(), &timeoutCause{failure.TimeoutTotal})
	defer tcancel()
	actx, cancel := context.WithCancelCause(tctx)
	defer cancel(nil)
	wd := startWatchdog(cancel, to.FirstByte.D(), to.Idle.D())
	defer wd.stop()

	// fail records the attempt's failure; after commit it also ends the
	// caller's stream with the typed error event.
	fail := func(fe *failure.Error) *failure.Error {
		a.Err = fe
		e.finishAttempt(p, res, &a, done)
		if res.Committed {
			res.Err = fe
			if fe.Class != failure.ClientCancelled {
				// A write error here means the caller left too; nothing more to do.
				_ = sink.Interrupt(res)
			}
		}
		return fe
	}

	st, err := r.Adapter.Stream(actx, e.target(p, i), req)
	if err != nil {
		return fail(classify(ctx, actx, err, true))
	}
	defer st.Close()
	pender, _ := st.(canonical.Pender)

	var (
		usage    canonical.Usage
		reported bool
		stop     canonical.StopReason
		stopSeq  string
	)
	commit := func() error {
		res.Served = i
		res.Committed = true
		a.FirstToken = e.now().Sub(a.Start)
		// The trail shown at commit includes this attempt as the winner.
		res.Attempts = append(res.Attempts, a)
		err := sink.Commit(res)
		res.Attempts = res.Attempts[:len(res.Attempts)-1]
		return err
	}
	// One event variable for the whole attempt: the sink gets its address
	// and must not keep it, so it escapes once, not once per event.
	var ev canonical.Event
	for {
		var err error
		ev, err = st.Next()
		if err == io.EOF {
			if !res.Committed {
				if cerr := commit(); cerr != nil {
					return fail(failure.Cancelled(cerr))
				}
			}
			res.Usage, res.UsageReported, res.Stop, res.StopSequence = usage, reported, stop, stopSeq
			e.finishAttempt(p, res, &a, done)
			res.Err = nil
			if ferr := sink.Finish(res); ferr != nil {
				// The provider finished; only the terminator missed the caller.
				res.Err = failure.Cancelled(ferr)
			}
			return nil
		}
		if err != nil {
			if res.Committed {
				res.Usage, res.UsageReported = usage, reported
			}
			return fail(classify(ctx, actx, err, false))
		}
		wd.event()
		if a.FirstByte == 0 {
			a.FirstByte = e.now().Sub(a.Start)
		}
		switch ev.Kind {
		case canonical.EventUsage:
			usage, reported = ev.Usage, true
			continue
		case canonical.EventStop:
			stop, stopSeq = ev.Stop, ev.StopSequence
			continue
		case canonical.EventStart:
			continue
		}
		if !ev.Kind.Semantic() {
			continue
		}
		if !res.Committed {
			if cerr := commit(); cerr != nil {
				return fail(failure.Cancelled(cerr))
			}
		}
		werr := sink.Event(&ev)
		// Flush only when the provider has nothing more ready: a burst goes
		// out in one write, a lone event at once.
		if werr == nil && (pender == nil || !pender.Pending()) {
			werr = sink.Flush()
		}
		if werr != nil {
			res.Usage, res.UsageReported = usage, reported
			return fail(failure.Cancelled(werr))
		}
		res.DeliveredTokens += TokensOf(&ev)
		res.DeliveredEvents++
	}
}
