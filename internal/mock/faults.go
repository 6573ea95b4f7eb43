package mock

import (
	"net/http"
	"time"
)

// effective picks the script for one request: the per-request one when the
// X-Mock-Fault header was given, else the mock-wide one (consuming one of its
// times=). When p= rolls against the fault, only the shaping items remain.
// It never returns nil.
func (m *Mock) effective(perRequest *Script, overridden bool) *Script {
	m.mu.Lock()
	defer m.mu.Unlock()
	sc := perRequest
	if !overridden {
		sc = m.script
		if sc != nil && m.remaining > 0 {
			m.remaining--
			if m.remaining == 0 {
				m.script = nil
			}
		}
	}
	if sc == nil {
		return healthyScript()
	}
	if sc.p < 1 && m.rng.Float64() >= sc.p {
		return sc.healthy()
	}
	return sc
}

// wait sleeps d, or less if the client goes away (false). If the mock is
// closed meanwhile the connection is cut.
func (m *Mock) wait(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	case <-m.done:
		panic(http.ErrAbortHandler)
	}
}

// hold keeps a request open without sending anything until the client goes
// away, or cuts the connection when the mock is closed, so a stalled handler
// never outlives its client or its server.
func (m *Mock) hold(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-m.done:
		panic(http.ErrAbortHandler)
	}
}

// stream sends a streaming answer event by event, flushing each, and injects
// the script's stream faults.
func (m *Mock) stream(c *call, w http.ResponseWriter, r *http.Request, f *Script, evs []event) {
	h := w.Header()
	m.wire.headers(c, h, http.StatusOK)
	h.Set("Content-Type", m.wire.streamContentType())
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	write := func(b []byte) bool {
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !write(nil) { // headers go out before the first event, even if it waits
		return
	}
	after, sent := f.after, 0
	for i, ev := range evs {
		if ev.kind == evTerminal && f.noTerminal {
			continue
		}
		if after != afterNone && (ev.kind == evContent && sent == f.afterK || ev.kind >= evFinal) {
			switch after {
			case afterStall:
				m.hold(r)
				return
			case afterDie:
				// Abort without the chunked terminator: the client reads an
				// unexpected EOF, never a clean end.
				panic(http.ErrAbortHandler)
			case afterError:
				write(m.wire.errorEvent(c, m.wire.streamError(c, f)))
				return
			case afterMalformed:
				if !write(m.wire.malformedEvent(c)) {
					return
				}
				after = afterNone // one broken event, then the stream goes on
			}
		}
		if i > 0 && f.eventDelay > 0 && !m.wait(r, f.eventDelay) {
			return
		}
		if !write(ev.data) {
			return
		}
		if ev.kind == evContent {
			sent++
		}
	}
}

// complete sends a non-streaming answer, with the non-streaming variants of
// the stream faults (see the package documentation).
func (m *Mock) complete(c *call, w http.ResponseWriter, r *http.Request, f *Script, a *answer) {
	body := m.wire.body(c, a)
	half := body[:len(body)/2]
	switch f.after {
	case afterError:
		m.wire.writeError(c, w, m.wire.streamError(c, f))
	case afterDie:
		m.writeBody(c, w, half, len(body))
		http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler)
	case afterStall:
		m.writeBody(c, w, half, len(body))
		http.NewResponseController(w).Flush()
		m.hold(r)
	case afterMalformed:
		m.writeBody(c, w, half, len(half))
	default:
		m.writeBody(c, w, body, len(body))
	}
}
