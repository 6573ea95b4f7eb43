package engine

import (
	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/failure"
)

// Refusal failover (a route's refusal_failover). A refusal is model
// behaviour, not a provider fault, so by default it is the answer. A route
// may ask for the next rung instead, and for that an answer is held back
// from the caller while all it holds is refusal, within the route's
// buffer: at its first other content (text, a tool call, reasoning), or
// once the refusal outgrows the buffer, it commits and what was held goes
// out first, in order. An answer that ends as a refusal within the buffer
// while a later rung exists ends its attempt as refused, and the chain
// moves on; nothing of it reached the caller. A refusal held back is never
// lost: when no later rung answers, it is the answer after all.
//
// A whole (non-streamed) answer follows the same rule, so that the same
// request fails over the same way in both modes.

// maxHeldEvents bounds the events one hold keeps, whatever their size: a
// provider streaming a refusal a byte at a time commits after this many.
const maxHeldEvents = 256

// refusalHold is one attempt's refusal failover state. The zero value
// holds nothing back.
type refusalHold struct {
	limit int
	// later: a later rung exists, so a refusal may move on.
	later bool
	// open: the answer so far is refusal alone, within the bounds.
	open bool
	// n and bytes count the refusal events held and their text.
	n, bytes int
	// events are the held events (streams only; a whole answer is in its
	// collector anyway).
	events []canonical.Event
}

func newHold(limit int, later bool) refusalHold {
	limit = min(limit, catalog.MaxRefusalBuffer) // as the config is validated
	return refusalHold{limit: limit, later: later, open: limit > 0}
}

// keep reports whether ev, a semantic event before the commit, is held
// back: a refusal delta that still fits. Anything else ends the hold, and
// the answer commits. store keeps a copy of ev for flush.
func (h *refusalHold) keep(ev *canonical.Event, store bool) bool {
	if !h.open {
		return false
	}
	if ev.Kind != canonical.EventRefusalDelta || h.bytes+len(ev.Text) > h.limit || h.n >= maxHeldEvents {
		h.open = false
		return false
	}
	h.n++
	h.bytes += len(ev.Text)
	if store {
		h.events = append(h.events, *ev)
	}
	return true
}

// refused reports, when the provider's answer ended, whether it is a
// refusal to move on from: refusal alone (refusal text, or no content and
// the refusal stop reason) within the buffer, with a later rung to try.
func (h *refusalHold) refused(stop canonical.StopReason) bool {
	return h.open && h.later && (h.n > 0 || stop == canonical.StopRefusal)
}

// flush sends the held events to the caller right after the commit, in
// order, counting them as delivered.
func (h *refusalHold) flush(sink Sink, res *Result) error {
	for k := range h.events {
		if err := sink.Event(&h.events[k]); err != nil {
			return err
		}
		res.DeliveredTokens += TokensOf(&h.events[k])
		res.DeliveredEvents++
	}
	h.events = nil
	return nil
}

// heldAnswer is a refusal moved on from, kept in case no later rung gives
// an answer. It holds at most a buffer's worth of refusal.
type heldAnswer struct {
	rung     int
	events   []canonical.Event   // a stream's
	resp     *canonical.Response // a whole answer's
	usage    canonical.Usage
	reported bool
	stop     canonical.StopReason
	stopSeq  string
}

// refuse ends an attempt on rung i as a refusal moved on from, keeping it
// (with col, the whole answer assembled there) in x. It returns the
// attempt's failure.
func (x *extra) refuse(i int, col *collector, u canonical.Usage, reported bool, stop canonical.StopReason, stopSeq string) *failure.Error {
	x.refusal = &heldAnswer{rung: i, events: x.hold.events, usage: u, reported: reported, stop: stop, stopSeq: stopSeq}
	if col != nil {
		x.refusal.resp = col.response(stop, stopSeq, u)
	}
	x.hold.events = nil
	return &failure.Error{Class: failure.Refused, Detail: "the model refused; the route's refusal failover tries the next rung"}
}

// keptRefusal is the refusal the chain keeps after x's attempt: x's own
// when it refused, else prev.
func (x *extra) keptRefusal(prev *heldAnswer) *heldAnswer {
	if x.refusal != nil && (prev == nil || x.refusal.rung >= prev.rung) {
		return x.refusal
	}
	return prev
}

// deliverRefusal makes a kept refusal the answer, when every rung after it
// failed: its attempt becomes the serving one (the trail shows it "ok",
// before the rungs that failed after it) and the caller gets it as it
// would have without refusal failover.
func (e *Engine) deliverRefusal(res *Result, h *heldAnswer, sink Sink, col *collector) *Result {
	k := -1
	for j := len(res.Attempts) - 1; j >= 0; j-- {
		if a := &res.Attempts[j]; a.Rung == h.rung && a.Err != nil && a.Err.Class == failure.Refused {
			k = j
			break
		}
	}
	if k < 0 {
		return e.exhausted(res)
	}
	res.Attempts[k].Err = nil
	res.Served, res.Committed, res.Err = h.rung, true, nil
	res.Usage, res.UsageReported, res.Stop, res.StopSequence = h.usage, h.reported, h.stop, h.stopSeq
	if col != nil {
		col.reset() // the failed rungs' partial answers
		res.Response = h.resp
		return res
	}
	if err := sink.Commit(res); err != nil {
		res.Err = failure.Cancelled(err)
		return res
	}
	for i := range h.events {
		if err := sink.Event(&h.events[i]); err != nil {
			res.Err = failure.Cancelled(err)
			return res
		}
		res.DeliveredTokens += TokensOf(&h.events[i])
		res.DeliveredEvents++
	}
	if err := sink.Flush(); err != nil {
		res.Err = failure.Cancelled(err)
		return res
	}
	if err := sink.Finish(res); err != nil {
		res.Err = failure.Cancelled(err)
	}
	return res
}
