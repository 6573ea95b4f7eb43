// Package engine runs one customer request against an ordered list of rungs:
// it dispatches attempts, classifies failures, fails over only where the
// classification table allows, and holds the streaming commit boundary so
// that a swap before the first semantic event is invisible to the caller.
package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"time"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/clock"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/provider"
)

// Rung is one candidate deployment, ready to dispatch.
type Rung struct {
	Deployment *catalog.Deployment
	Adapter    provider.Adapter
	// Target is the template for this rung's attempts; the engine copies it
	// and fills in the per-rung idempotency key.
	Target provider.Target
	// Forced marks a last-resort probe: the gate admits it whatever the
	// rung's health says.
	Forced bool
	// Model is the exact model the rung serves: the plan's, or another
	// for a rung of a route's fallback pool. Empty: the plan's Model.
	Model string
	// Tokens is what an attempt counts against the deployment's
	// provisioned TPM (prompt estimate plus max_tokens), for the gate.
	Tokens int
	// Counted: the rung's first attempt was counted against its quota
	// when the request was admitted; the gate counts the attempts after.
	Counted bool
}

// Plan is the ordered candidate list for one request.
type Plan struct {
	// RequestID identifies the customer request.
	RequestID string
	// IdempotencyBase seeds the per-rung upstream idempotency keys: the
	// caller's Idempotency-Key when it sent one, else the request id.
	IdempotencyBase string
	// Model is the exact model the route serves; a rung of its fallback
	// pool names its own (Rung.Model).
	Model string
	Rungs []Rung
	// Hedge, when above zero, is how long the request's first attempt may
	// go without committing (no first token) before the next rung starts
	// alongside it; the first to commit serves (hedge.go). Zero: no hedge.
	Hedge time.Duration
	// RefusalBuffer, when above zero, turns on refusal failover: an answer
	// that opens with a refusal is held back, up to this many bytes of
	// refusal, and one that ends as a refusal moves on to the next rung
	// (refusal.go). Zero: a refusal is the answer.
	RefusalBuffer int
}

// Attempt is one physical dispatch to one rung.
type Attempt struct {
	// Rung is the index of the rung in the plan.
	Rung       int
	Deployment string
	// Retry is true for the one same-rung retry after a transport blip.
	Retry bool
	// Err is nil when the attempt served the request.
	Err *failure.Error
	// Start is when the attempt was dispatched.
	Start time.Time
	// FirstByte is the time to the first stream event (streams) or to the
	// whole answer (non-streaming); 0 when none arrived.
	FirstByte time.Duration
	// FirstToken is the time to the first semantic event (streams) or to
	// the whole answer (non-streaming); 0 when none arrived.
	FirstToken time.Duration
	// Duration is the whole attempt.
	Duration time.Duration
	// Usage is what the provider had reported for a failed attempt when it
	// ended (UsageReported says whether it reported any), and OutputSeen
	// the output tokens read from it, as TokensOf estimates them: what a
	// hedged_lost or refused attempt consumed, which the operator pays.
	// A served attempt's usage is the Result's.
	Usage         canonical.Usage
	UsageReported bool
	OutputSeen    int
}

// Outcome is the attempt's trail label: "ok" or its failure class.
func (a *Attempt) Outcome() string {
	if a.Err == nil {
		return "ok"
	}
	return string(a.Err.Class)
}

// Result is what happened to a customer request.
type Result struct {
	Attempts []Attempt
	// Served is the index of the serving rung, -1 when none served.
	Served int
	// Response is the answer of a non-streamed request that succeeded.
	Response *canonical.Response
	// Usage is the provider's last reported usage; UsageReported says
	// whether any was reported at all.
	Usage         canonical.Usage
	UsageReported bool
	// UsageInvalid: the provider reported impossible usage after the
	// answer reached the caller; it is priced at the reservation.
	UsageInvalid bool
	// UsageCut: the provider ran past the output limit it was sent and
	// the answer was cut there.
	UsageCut     bool
	Stop         canonical.StopReason
	StopSequence string
	// Committed is true once a stream's first byte of content (or its empty
	// completion) reached the caller: the route was fixed.
	Committed bool
	// DeliveredTokens estimates the output tokens that reached the caller.
	DeliveredTokens int
	// DeliveredEvents counts the semantic events that reached the caller.
	DeliveredEvents int
	// Err is the final failure; nil when the request was served in full.
	Err *failure.Error
	// Skipped lists rungs the gate refused at dispatch time (no attempt).
	Skipped []Skip
	// Hedge is what the request's hedge did; "" when none started.
	Hedge HedgeOutcome

	// col assembled a non-streamed answer and holds its share of the
	// gateway's answer memory until Release.
	col *collector
}

// ServingAttempt is the index in Attempts of the attempt that served (or,
// after a commit, broke): the last one on the serving rung; -1 when no
// rung served. It is usually the last attempt, but not always: a hedge's
// loser may follow its winner, and a held-back refusal that became the
// answer precedes the rungs that failed after it.
func (r *Result) ServingAttempt() int {
	if r.Served < 0 {
		return -1
	}
	for i := len(r.Attempts) - 1; i >= 0; i-- {
		if r.Attempts[i].Rung == r.Served {
			return i
		}
	}
	return -1
}

// Release gives back the answer memory a non-streamed Result holds:
// Complete's caller calls it once the answer is written to the caller (or
// dropped). Safe on any Result, and more than once.
func (r *Result) Release() {
	if r.col != nil {
		r.col.release()
	}
}

// Skip is a rung the gate refused right before dispatch.
type Skip struct {
	Deployment string
	Reason     string
}

// Observer receives every finished attempt, e.g. for metrics. It must not
// block.
type Observer interface {
	ObserveAttempt(d *catalog.Deployment, a *Attempt)
}

// Gate admits attempts, e.g. health circuits. Admit is called right before
// each attempt; a non-empty skip refuses the rung without an attempt.
// Otherwise done is called exactly once with the finished attempt.
type Gate interface {
	Admit(r *Rung) (done func(*Attempt), skip string)
}

// Engine dispatches plans. The zero value is not usable; use New.
type Engine struct {
	log      *slog.Logger
	observer Observer
	gate     Gate
	// clock times attempts and runs their watchdogs (never nil).
	clock clock.Clock
	// maxAnswer bounds an assembled non-streamed answer, in bytes.
	maxAnswer int
	// answers bounds the memory all non-streamed answers hold together.
	answers *answerMemory
}

// Option configures an Engine.
type Option func(*Engine)

// WithObserver sets the attempt observer (default none).
func WithObserver(o Observer) Option { return func(e *Engine) { e.observer = o } }

// WithGate sets the attempt gate (default none: every attempt admitted).
func WithGate(g Gate) Option { return func(e *Engine) { e.gate = g } }

// WithClock sets the clock that times attempts and runs the watchdog's
// first-byte, idle and total bounds (default and nil: clock.Real).
func WithClock(c clock.Clock) Option { return func(e *Engine) { e.clock = c } }

// WithMaxAnswerBytes bounds a non-streamed answer assembled in memory
// (default DefaultMaxAnswerBytes); a provider sending more fails the
// attempt as provider_unavailable.
func WithMaxAnswerBytes(n int) Option { return func(e *Engine) { e.maxAnswer = n } }

// WithAnswerMemory bounds the memory that non-streamed answers being
// assembled and written hold together (default DefaultAnswerMemory): an
// answer that would pass it fails as gateway_busy.
func WithAnswerMemory(n int64) Option { return func(e *Engine) { e.answers = newAnswerMemory(n) } }

// New returns an Engine logging to log (operator logs: never content).
func New(log *slog.Logger, opts ...Option) *Engine {
	e := &Engine{log: log}
	for _, o := range opts {
		o(e)
	}
	if e.clock == nil {
		e.clock = clock.Real{}
	}
	if e.answers == nil {
		e.answers = newAnswerMemory(0)
	}
	return e
}

func (e *Engine) now() time.Time { return e.clock.Now() }

// UpstreamKey derives the idempotency key sent to rung i: stable for a
// same-rung retry, different for every rung.
func UpstreamKey(base string, rung int, deployment string) string {
	h := sha256.New()
	h.Write([]byte(base))
	h.Write([]byte{0, byte(rung), byte(rung >> 8), 0})
	h.Write([]byte(deployment))
	var sum [sha256.Size]byte
	return "spw-" + hex.EncodeToString(h.Sum(sum[:0])[:16])
}

// timeoutCause marks an attempt context cancelled by a silence bound.
type timeoutCause struct{ kind failure.Timeout }

func (t *timeoutCause) Error() string { return string(t.kind) + " timeout" }

// classify decides what an attempt error means, looking first at who
// cancelled: the caller (never the provider's fault) or a silence bound.
func classify(parent, attempt context.Context, err error, noResponse bool) *failure.Error {
	if parent.Err() != nil {
		if context.Cause(parent) == errLostRace {
			return hedgeLost()
		}
		return failure.Cancelled(context.Cause(parent))
	}
	var tc *timeoutCause
	if errors.As(context.Cause(attempt), &tc) {
		return failure.TimedOut(tc.kind, noResponse)
	}
	if fe := failure.As(err); fe != nil {
		return fe
	}
	return failure.Transport(err, noResponse)
}

// retrySameRung reports whether a failure allows the one same-rung retry:
// a transport blip before any response byte, not a silence bound.
func retrySameRung(fe *failure.Error) bool {
	return fe.Class == failure.ProviderUnavailable && fe.NoResponse && fe.Timeout == ""
}

func (e *Engine) target(p *Plan, i int) *provider.Target {
	t := p.Rungs[i].Target
	t.IdempotencyKey = UpstreamKey(p.IdempotencyBase, i, p.Rungs[i].Deployment.ID)
	return &t
}

// admit asks the gate whether rung i may be tried now.
func (e *Engine) admit(p *Plan, i int, res *Result) (func(*Attempt), bool) {
	if e.gate == nil {
		return nil, true
	}
	done, skip := e.gate.Admit(&p.Rungs[i])
	if skip != "" {
		res.Skipped = append(res.Skipped, Skip{Deployment: p.Rungs[i].Deployment.ID, Reason: skip})
		return nil, false
	}
	return done, true
}

func (e *Engine) finishAttempt(p *Plan, res *Result, a *Attempt, done func(*Attempt)) {
	a.Duration = e.now().Sub(a.Start)
	if done != nil {
		done(a)
	}
	res.Attempts = append(res.Attempts, *a)
	if a.Err != nil && a.Err.Class != failure.ClientCancelled {
		e.log.Warn("attempt failed", "request_id", p.RequestID, "deployment", a.Deployment,
			"class", a.Err.Class, "status", a.Err.Status, "timeout", a.Err.Timeout,
			"retry", a.Retry, "detail", a.Err.Error())
	}
	if e.observer != nil {
		e.observer.ObserveAttempt(p.Rungs[a.Rung].Deployment, &res.Attempts[len(res.Attempts)-1])
	}
}

// next decides, after a failed attempt on rung i, whether to retry it, move
// on, or stop. It returns the next rung index and whether it is a retry;
// stop is true when the chain must end with res.Err.
func next(i int, retried bool, fe *failure.Error) (rung int, retry, stop bool) {
	if !retried && retrySameRung(fe) {
		return i, true, false
	}
	if !movesOn(fe) {
		return i, false, true
	}
	return i + 1, false, false
}

// movesOn reports whether the chain goes on to the next rung after fe: a
// class that fails over, or a refusal (an attempt ends as refused only
// where the route's refusal failover asked for the next rung).
func movesOn(fe *failure.Error) bool {
	return fe.Class.FailsOver() || fe.Class == failure.Refused
}

// Complete runs a non-streamed request. Upstream it is streamed, and the
// events are assembled into the whole answer before anything reaches the
// caller: the first-byte and idle bounds hold as they do for a stream (a
// provider's non-streaming API says nothing until the answer is done), and
// a provider that dies halfway fails over invisibly, since nothing was sent.
//
// The Result holds its share of the gateway's answer memory until its
// Release is called.
func (e *Engine) Complete(ctx context.Context, p *Plan, req *canonical.Request) *Result {
	col := newCollector(e.maxAnswer)
	col.mem = e.answers
	res := e.run(ctx, p, req, nil, col)
	if res.col == nil { // a hedge's winner brings its own
		res.col = col
	}
	if res.Err != nil {
		res.Release() // no answer to write
	}
	return res
}

// exhausted finishes a result whose every rung was tried or skipped.
func (e *Engine) exhausted(res *Result) *Result {
	if res.Err == nil {
		res.Err = &failure.Error{Class: failure.ProviderUnavailable, Detail: "no rung could be tried", NoResponse: true}
		if len(res.Attempts) == 0 {
			res.Err = ErrAllSkipped
		}
	}
	return res
}

// ErrAllSkipped is the result's error when the gate refused every rung and
// no attempt was made.
var ErrAllSkipped = &failure.Error{Class: failure.ProviderUnavailable, Detail: "every rung was skipped by the gate", NoResponse: true}
