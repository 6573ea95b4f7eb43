package server

import (
	"net/http"
	"time"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/engine"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/quality"
)

// stream runs a streamed request. Until commit nothing is written, so a
// request that fails on every rung still gets a plain HTTP error.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, c *call, p *engine.Plan) {
	// A stream holds its buffer for its whole life, often minutes: a small
	// one rather than a pooled 4 KiB. An event is a few hundred bytes;
	// 1 KiB also holds the usual ending (finish, usage, [DONE]).
	buf := s.streamBufs.Get().(*[]byte)
	defer func() {
		if cap(*buf) <= maxPooledStreamBuf { // a rare giant event's buffer is dropped
			*buf = (*buf)[:0]
			s.streamBufs.Put(buf)
		}
	}()
	sink := &streamSink{s: s, r: r, w: w, rc: http.NewResponseController(w), enc: c.d.NewEncoder(c.meta, c.req), buf: buf, c: c, p: p,
		writeTimeout: s.opts.Catalog.Load().Config().Server.WriteTimeout.D()}
	res := s.engine.Stream(r.Context(), p, c.req, sink)
	c.ran(p, res)
	// The stream's end: Finish or Interrupt settled it if it got that far;
	// one that failed before commit, or whose caller left, settles here.
	c.bill.Settle(r.Context(), res)
	switch {
	case sink.withheld:
		c.status, c.outcome = http.StatusOK, "interrupted_ledger_unavailable"
		s.finishIdempotency(c, http.StatusOK, true, true)
	case res.Err != nil && res.Err.Class == failure.ClientCancelled:
		// Nobody is listening: what was delivered was settled, without
		// waiting.
		c.status, c.outcome = failure.StatusClientClosedRequest, "client_closed_request"
	case !res.Committed && res.Err != nil:
		pub := publicOf(res)
		s.writeError(w, c, pub, res)
		s.finishIdempotency(c, pub.Status, false, len(res.Attempts) > 0)
	case res.Err != nil:
		c.status, c.outcome = http.StatusOK, "interrupted_"+string(res.Err.Class)
		s.finishIdempotency(c, http.StatusOK, true, true)
	default:
		c.status, c.outcome = http.StatusOK, "ok"
		s.observeQuality(c, res, &sink.tap)
		s.finishIdempotency(c, http.StatusOK, false, true)
	}
}

// maxPooledStreamBuf bounds the stream buffers kept for reuse.
const maxPooledStreamBuf = 4 << 10

// streamSink writes one answer's events to the caller, one flush per event.
type streamSink struct {
	s   *Server
	r   *http.Request
	w   http.ResponseWriter
	rc  *http.ResponseController
	enc dialect.Encoder
	buf *[]byte
	c   *call
	p   *engine.Plan
	// writeTimeout bounds each write to the caller: one that stops
	// reading is cut off, as a caller that left (never the provider's
	// fault).
	writeTimeout time.Duration
	// until is the connection's write deadline as last set; zero: none yet.
	until time.Time
	// wrote: a write set the deadline since the last flush.
	wrote bool
	// withheld: the ledger could not record the answer, so its terminator
	// was replaced by a ledger_unavailable error event.
	withheld bool
	// tap keeps what quality signals need of the answer (bounded).
	tap quality.Tap
}

func (k *streamSink) Commit(res *engine.Result) error {
	// The rung serves from here on: its conversation's next turn may be
	// sent as soon as this stream ends, so the pin is recorded now.
	k.s.recordPin(k.c.plan, k.p, res)
	hv := newHeaderValues(k.w.Header(), 8)
	hv.set("Content-Type", "text/event-stream; charset=utf-8")
	hv.set("Cache-Control", "no-cache")
	hv.set("X-Accel-Buffering", "no")
	// The cost is known only once the stream ends: it follows as trailers.
	hv.set("Trailer", hdrCostUSD+", "+hdrCostStatus)
	setRouteHeaderValues(&hv, k.c, res)
	if m := servedModel(k.c, res); m != k.c.meta.Model {
		// A fallback pool's rung serves: the answer names its model.
		k.c.meta.Model = m
		k.enc = k.c.d.NewEncoder(k.c.meta, k.c.req)
	}
	k.w.WriteHeader(http.StatusOK)
	if su, ok := k.enc.(dialect.StartUsage); ok && res.UsageReported {
		su.StartUsage(res.Usage)
	}
	*k.buf = k.enc.Start((*k.buf)[:0])
	return k.write()
}

func (k *streamSink) Event(ev *canonical.Event) error {
	k.tap.Event(k.c.req, ev)
	*k.buf = k.enc.Event((*k.buf)[:0], ev)
	return k.write()
}

// Flush sends what was written; the engine calls it when the provider has
// no further event ready.
func (k *streamSink) Flush() error {
	if !k.wrote {
		k.deadline()
	}
	k.wrote = false
	return k.rc.Flush()
}

// deadline gives the next write its bound.
func (k *streamSink) deadline() {
	if k.writeTimeout <= 0 {
		return
	}
	// time.Until reads only the monotonic clock (k.until came from
	// time.Now): half the cost of time.Now, paid once per event.
	if !k.until.IsZero() && keepWriteDeadline(time.Until(k.until), k.writeTimeout) {
		return
	}
	k.until = time.Now().Add(k.writeTimeout)
	_ = k.rc.SetWriteDeadline(k.until)
}

// keepWriteDeadline reports whether a write deadline with left to go
// stands for the next write: while at least three quarters of timeout is
// left. Moving a connection's deadline re-arms a runtime timer under its
// lock; done for every write and flush, twice per event, it cost 3-4% of
// a 20-event stream's CPU, so it moves only once a quarter of the bound
// has passed: about once per stream. Every write keeps at least three
// quarters of the bound.
func keepWriteDeadline(left, timeout time.Duration) bool {
	return left > timeout-timeout/4
}

// Finish settles (durably) before the success terminator goes out, so a
// caller who saw the terminator has a settled row.
func (k *streamSink) Finish(res *engine.Result) error {
	if err := k.c.bill.Settle(k.r.Context(), res); err != nil {
		// The ledger could not record the answer: no terminator, so the
		// caller's client reports the answer incomplete, and nothing is
		// charged.
		k.withheld = true
		pub := errLedgerUnavailable(true)
		*k.buf = k.enc.Interrupt((*k.buf)[:0], pub, res.DeliveredTokens)
		ferr := k.flush()
		setCostHeaders(k.w.Header(), k.c)
		if ferr != nil {
			return ferr
		}
		return err
	}
	u := res.Usage
	if !res.UsageReported {
		u = k.c.billed // what the answer was billed at, as for a whole answer
	}
	*k.buf = k.enc.Finish((*k.buf)[:0], res.Stop, res.StopSequence, u)
	err := k.flush()
	setCostHeaders(k.w.Header(), k.c)
	return err
}

// Interrupt settles the delivered tokens, then ends the stream with the
// typed error event.
func (k *streamSink) Interrupt(res *engine.Result) error {
	k.c.bill.Settle(k.r.Context(), res)
	fe, delivered := res.Err, res.DeliveredTokens
	pub := fe.ToPublic()
	pub.Code = "stream_interrupted"
	// A provider that rejected the request itself would reject it again.
	pub.Retryable = fe.Class != failure.InvalidRequest
	advice := "retry the request"
	if !pub.Retryable {
		advice = "the provider rejected the request, so sending it again would fail the same way"
	}
	pub.Message = "the model provider failed after the answer began; the answer is incomplete (" + string(fe.Class) + "); " + advice
	*k.buf = k.enc.Interrupt((*k.buf)[:0], pub, delivered)
	err := k.flush()
	setCostHeaders(k.w.Header(), k.c)
	return err
}

// write hands the buffer to the response writer without flushing.
func (k *streamSink) write() error {
	if len(*k.buf) == 0 {
		return nil
	}
	k.deadline()
	k.wrote = true // the flush that follows needs no deadline of its own
	_, err := k.w.Write(*k.buf)
	return err
}

// flush writes the buffer and sends everything.
func (k *streamSink) flush() error {
	if err := k.write(); err != nil {
		return err
	}
	return k.rc.Flush()
}
