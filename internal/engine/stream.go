package engine

import (
	"context"
	"io"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/clock"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/tokens"
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
// per delta, so at least one, and tokens.Estimate of its text.
func TokensOf(ev *canonical.Event) int {
	switch {
	case !ev.Kind.Semantic(), ev.Kind == canonical.EventToolCallStart && ev.Text == "",
		ev.Kind == canonical.EventThinkingSignature, ev.Kind == canonical.EventRedactedThinking,
		ev.Kind == canonical.EventEmbedding:
		// Signatures and redacted blocks are opaque: the provider's usage
		// counts them, the gateway cannot.
		return 0
	}
	return max(tokens.Estimate(len(ev.Text)), 1)
}

// MaxUsageTokens bounds every count a provider may report for one answer:
// no context window comes near it, and sums of such counts stay far from
// overflowing.
const MaxUsageTokens = 100_000_000

// impossibleUsage says what is wrong with a provider's reported usage: a
// negative or absurd count, or a part larger than its whole; "" when it is
// possible.
func impossibleUsage(u *canonical.Usage) string {
	for _, n := range [...]int{u.InputTokens, u.CachedInputTokens, u.CacheWriteTokens, u.OutputTokens, u.ReasoningTokens} {
		if n < 0 || n > MaxUsageTokens {
			return "a count is negative or above " + strconv.Itoa(MaxUsageTokens)
		}
	}
	switch {
	case u.CachedInputTokens+u.CacheWriteTokens > u.InputTokens:
		return "more cached input than input"
	case u.ReasoningTokens > u.OutputTokens:
		return "more reasoning than output"
	}
	return ""
}

// capped is the request as rung r is sent it: max tokens at most the
// deployment's output cap (the reservation was made at that cap, so the
// provider must not be asked for more). limit is the output limit the rung
// is held to, 0 when none is known.
func capped(req *canonical.Request, r *Rung) (*canonical.Request, int) {
	limit := r.Deployment.OutputCeiling(req.MaxTokens)
	if c := r.Deployment.MaxOutputTokens; c > 0 && req.MaxTokens > c {
		cp := *req
		cp.MaxTokens = c
		req = &cp
	}
	if req.Embed != nil {
		limit = 0
	}
	return req, limit
}

// runawayAt is how many output tokens (as the gateway estimates them)
// past which a provider is taken to ignore its limit: half again the
// limit, so that the estimate's error never cuts an honest answer.
func runawayAt(limit int) int { return limit + limit/2 + 16 }

// The causes a watchdog cancels with; never modified.
var (
	causeFirstByte = &timeoutCause{failure.TimeoutFirstByte}
	causeIdle      = &timeoutCause{failure.TimeoutIdle}
	causeTotal     = &timeoutCause{failure.TimeoutTotal}
)

// watchdog cancels an attempt when one of its bounds passes: the first-byte
// bound until the first event, then the idle bound between events, and the
// total bound throughout. One timer serves all three, and an event does not
// touch it: it only notes the time, and the timer, when it fires, checks
// whether a bound really passed and otherwise sets itself for the next
// one. Per streamed attempt that is one context and one timer, and per
// event a clock read instead of a timer reset. Time, timer included, comes
// from the engine's clock, so tests drive the bounds with a fake one.
type watchdog struct {
	clock     clock.Clock
	timer     clock.Timer
	start     time.Time     // offsets below are from here (monotonic on clock.Real)
	firstByte time.Duration // 0: none
	idle      time.Duration // 0: none
	end       time.Duration // the total bound; 0: none
	last      atomic.Int64  // offset of the latest event, -1 before the first
	first     bool          // no event yet; the attempt's goroutine only
	stopped   atomic.Bool
	// writing is set while the caller is being written to: a caller that
	// reads slowly (or not at all) holds the provider's stream unread, and
	// that silence is not the provider's. The write's own deadline bounds
	// it.
	writing atomic.Bool
	cancel  context.CancelCauseFunc
}

func startWatchdog(c clock.Clock, cancel context.CancelCauseFunc, firstByte, idle, total time.Duration) *watchdog {
	w := &watchdog{clock: c, start: c.Now(), firstByte: firstByte, idle: idle, end: total, first: true, cancel: cancel}
	w.last.Store(-1)
	if d, ok := w.due(0, firstByte); ok {
		w.arm(d)
	}
	return w
}

// arm sets w.timer to fire in d. It is made stopped, stored, then started,
// so that fire always sees w.timer.
func (w *watchdog) arm(d time.Duration) {
	w.timer = w.clock.AfterFunc(time.Duration(math.MaxInt64), w.fire)
	w.timer.Reset(d)
}

// elapsed is the offset of now from the start (read twice per event, so
// through clock.Since: the monotonic clock alone on the real clock).
func (w *watchdog) elapsed() time.Duration { return clock.Since(w.clock, w.start) }

// due is the wait from now (an offset) until the earlier of the silence
// bound at offset silence (0: none) and the total bound; false: neither.
func (w *watchdog) due(now, silence time.Duration) (time.Duration, bool) {
	at := silence
	if w.end > 0 && (at <= 0 || w.end < at) {
		at = w.end
	}
	if at <= 0 {
		return 0, false
	}
	return max(at-now, 1), true
}

func (w *watchdog) fire() {
	if w.stopped.Load() {
		return
	}
	now := w.elapsed()
	if w.writing.Load() {
		// Look again later; release restarts the idle clock.
		w.timer.Reset(max(w.idle, w.firstByte, time.Second))
		if w.stopped.Load() {
			w.timer.Stop()
		}
		return
	}
	if w.end > 0 && now >= w.end {
		w.cancel(causeTotal)
		return
	}
	bound, cause := w.firstByte, causeFirstByte
	if last := time.Duration(w.last.Load()); last >= 0 {
		bound, cause = 0, causeIdle
		if w.idle > 0 {
			bound = last + w.idle
		}
	}
	if bound > 0 && now >= bound {
		w.cancel(cause)
		return
	}
	if d, ok := w.due(now, bound); ok {
		w.timer.Reset(d)
		if w.stopped.Load() {
			// stop ran meanwhile: do not keep the attempt alive in a timer.
			w.timer.Stop()
		}
	}
}

// event notes that an event arrived. Only the first one may move the timer
// earlier (an idle bound shorter than what is left of the first-byte one).
func (w *watchdog) event() {
	now := w.elapsed()
	w.last.Store(int64(now))
	if !w.first {
		return
	}
	w.first = false
	var idleAt time.Duration
	if w.idle > 0 {
		idleAt = now + w.idle
	}
	d, ok := w.due(now, idleAt)
	switch {
	case !ok:
		w.stop()
	case w.timer == nil:
		w.arm(d)
	default:
		w.timer.Reset(d)
	}
}

// hold pauses the silence bounds while the caller is written to.
func (w *watchdog) hold() { w.writing.Store(true) }

// release resumes them, the idle clock restarting now: the provider had
// no chance to speak while its stream went unread.
func (w *watchdog) release() {
	w.last.Store(int64(w.elapsed()))
	w.writing.Store(false)
}

func (w *watchdog) stop() {
	w.stopped.Store(true)
	if w.timer != nil {
		w.timer.Stop()
	}
}

// Stream runs a streamed request. Before commit every failure the table
// allows moves on (retry once or next rung) invisibly; after commit a
// failure ends the caller's stream with a typed error event.
func (e *Engine) Stream(ctx context.Context, p *Plan, req *canonical.Request, sink Sink) *Result {
	return e.run(ctx, p, req, sink, nil)
}

// run walks the plan's rungs. Exactly one of sink (a stream to the caller)
// and col (an answer assembled for a non-streaming caller) is set. The
// request's first attempt races a hedge when the plan asks for one; a
// refusal held back is the answer when no later rung gives one.
func (e *Engine) run(ctx context.Context, p *Plan, req *canonical.Request, sink Sink, col *collector) *Result {
	res := &Result{Served: -1}
	var refusal *heldAnswer
	retry := false
	for i := 0; i < len(p.Rungs); {
		done, ok := e.admit(p, i, res)
		if !ok {
			i, retry = i+1, false
			continue
		}
		var fe *failure.Error
		var stop bool
		if hedges(p, i, retry, res) {
			fe, i, retry, stop = e.race(ctx, p, i, req, sink, col, res, done, &refusal)
		} else {
			x := newExtra(p, i)
			fe = e.streamAttempt(ctx, p, i, retry, req, sink, col, res, done, x)
			refusal = x.keptRefusal(refusal)
			if fe != nil && !res.Committed {
				i, retry, stop = next(i, retry, fe)
			}
		}
		if fe == nil || res.Committed {
			return res
		}
		res.Err = fe
		if stop {
			break
		}
	}
	if refusal != nil && res.Err != nil && res.Err.Class != failure.ClientCancelled {
		return e.deliverRefusal(res, refusal, sink, col)
	}
	return e.exhausted(res)
}

// streamAttempt makes one attempt on rung i. It returns nil when the rung
// served the whole answer; otherwise the failure, with res.Err and the
// caller's stream already finished when the failure came after commit.
// With col set, events are assembled there instead of sent, and the attempt
// commits only once the provider's stream ended cleanly. x holds back an
// opening refusal and claims the commit from a hedge race (see extra).
func (e *Engine) streamAttempt(ctx context.Context, p *Plan, i int, retry bool, req *canonical.Request, sink Sink, col *collector, res *Result, done func(*Attempt), x *extra) *failure.Error {
	r := &p.Rungs[i]
	to := r.Deployment.Timeouts
	a := Attempt{Rung: i, Deployment: r.Deployment.ID, Retry: retry, Start: e.now()}
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	wd := startWatchdog(e.clock, cancel, to.FirstByte.D(), to.Idle.D(), to.Total.D())
	defer wd.stop()

	var (
		usage    canonical.Usage
		reported bool
		stop     canonical.StopReason
		stopSeq  string
		// tokens counts the output seen, to cut a provider that ignores
		// the output limit it was sent.
		tokens int
	)
	// fail records the attempt's failure; after commit it also ends the
	// caller's stream with the typed error event.
	fail := func(fe *failure.Error) *failure.Error {
		a.Err = fe
		a.Usage, a.UsageReported, a.OutputSeen = usage, reported, tokens
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

	if col != nil {
		col.reset()
	}
	req, limit := capped(req, r)
	st, err := r.Adapter.Stream(actx, e.target(p, i), req)
	if err != nil {
		return fail(classify(ctx, actx, err, true))
	}
	defer st.Close()
	pender, _ := st.(canonical.Pender)

	// commit fixes the route on this rung (when no hedge committed first),
	// tells the caller, and sends what the refusal hold kept back.
	commit := func() error {
		if fe := x.claim(); fe != nil {
			return fe
		}
		res.Served = i
		res.Committed = true
		// What the provider reported so far (its input counts, usually),
		// for dialects that show usage at the stream's start.
		res.Usage, res.UsageReported = usage, reported
		a.FirstToken = e.now().Sub(a.Start)
		// The trail shown at commit includes this attempt as the winner.
		res.Attempts = append(res.Attempts, a)
		wd.hold()
		err := sink.Commit(res)
		res.Attempts = res.Attempts[:len(res.Attempts)-1]
		if err == nil {
			err = x.hold.flush(sink, res)
		}
		wd.release()
		return err
	}
	// One event variable for the whole attempt: the sink gets its address
	// and must not keep it, so it escapes once, not once per event.
	var ev canonical.Event
	for {
		var err error
		ev, err = st.Next()
		if err == nil && limit > 0 && ev.Kind.Semantic() && tokens > runawayAt(limit) {
			// The answer is whole up to the limit; the rest never reaches
			// the caller, and the answer ends as max_tokens does.
			e.log.Warn("provider ignored the output limit; answer cut", "request_id", p.RequestID, "deployment", a.Deployment, "limit", limit)
			err, stop, stopSeq = io.EOF, canonical.StopMaxTokens, ""
			res.UsageCut = true
		}
		if err == io.EOF && col != nil {
			if fe := col.check(req); fe != nil {
				return fail(fe)
			}
			if x.hold.refused(stop) {
				return fail(x.refuse(i, col, usage, reported, stop, stopSeq))
			}
			if fe := x.claim(); fe != nil {
				return fail(fe)
			}
			res.Served, res.Committed = i, true
			if a.FirstToken == 0 {
				a.FirstToken = e.now().Sub(a.Start)
			}
			res.Usage, res.UsageReported, res.Stop, res.StopSequence = usage, reported, stop, stopSeq
			res.Response = col.response(stop, stopSeq, usage)
			res.Err = nil
			e.finishAttempt(p, res, &a, done)
			return nil
		}
		if err == io.EOF {
			if !res.Committed {
				if x.hold.refused(stop) {
					return fail(x.refuse(i, nil, usage, reported, stop, stopSeq))
				}
				if cerr := commit(); cerr != nil {
					return fail(commitFailure(cerr))
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
			if res.UsageInvalid {
				continue
			}
			if why := impossibleUsage(&ev.Usage); why != "" {
				fe := &failure.Error{Class: failure.ProviderUnavailable, Detail: "impossible usage: " + why}
				if col != nil || !res.Committed {
					// Nothing reached the caller: the next rung answers.
					return fail(fe)
				}
				// The answer is out: it stands, and is priced at the
				// reservation rather than at the provider's figure.
				e.log.Warn("provider reported impossible usage", "request_id", p.RequestID, "deployment", a.Deployment, "detail", fe.Detail)
				res.UsageInvalid = true
				usage, reported = canonical.Usage{}, false
				continue
			}
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
		if stop != "" {
			// The provider ended the answer; anything after its stop
			// reason is not part of it (the answer stands as ended).
			continue
		}
		tokens += TokensOf(&ev)
		// An opening refusal is held back (refusal failover); anything
		// else is the commit boundary.
		held := !res.Committed && x.hold.keep(&ev, col == nil)
		if col != nil {
			if a.FirstToken == 0 {
				a.FirstToken = e.now().Sub(a.Start)
			}
			if !held {
				if fe := x.claim(); fe != nil {
					return fail(fe)
				}
			}
			if fe := col.add(&ev); fe != nil {
				return fail(fe)
			}
			continue
		}
		if held {
			continue
		}
		if !res.Committed {
			if cerr := commit(); cerr != nil {
				return fail(commitFailure(cerr))
			}
		}
		wd.hold()
		werr := sink.Event(&ev)
		// Flush only when the provider has nothing more ready: a burst goes
		// out in one write, a lone event at once.
		if werr == nil && (pender == nil || !pender.Pending()) {
			werr = sink.Flush()
		}
		wd.release()
		if werr != nil {
			res.Usage, res.UsageReported = usage, reported
			return fail(failure.Cancelled(werr))
		}
		res.DeliveredTokens += TokensOf(&ev)
		res.DeliveredEvents++
	}
}
