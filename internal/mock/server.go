package mock

import (
	"errors"
	"io"
	"net/http"
	"strconv"
)

// maxBodyDefault is the largest request body accepted: Anthropic's
// documented 32 MB Messages limit (OpenAI's is not documented; the same
// bound is used).
const maxBodyDefault = 32 << 20

// generate answers one generation request: record it, check it as the real
// provider would, then apply the fault script and answer.
func (m *Mock) generate(c *call, w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, m.maxBody))
	m.record(r, body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			m.wire.writeError(c, w, m.wire.statusError(c, http.StatusRequestEntityTooLarge, nil))
		}
		return // the client went away mid-body: nobody to answer
	}
	perRequest, err := m.parseHeaderScript(r)
	if err != nil {
		m.wire.writeError(c, w, m.wire.badRequest(c, "mock: bad X-Mock-Fault header: "+err.Error()))
		return
	}
	if e := m.wire.admit(c, r, m.opts.APIKey); e != nil {
		m.wire.writeError(c, w, e)
		return
	}
	req, e := m.wire.decode(c, body)
	if e != nil {
		m.wire.writeError(c, w, e)
		return
	}
	req.stream = req.stream || c.stream
	c.req = req
	f := m.effective(perRequest, r.Header.Get(headerFault) != "")

	if f.delay > 0 && !m.wait(r, f.delay) {
		return
	}
	if f.stall {
		m.hold(r)
		return
	}
	if f.status != 0 {
		ae := m.wire.statusError(c, f.status, f)
		ae.retryAfter, ae.retryMS = f.retryAfter, f.retryMS
		m.wire.writeError(c, w, ae)
		return
	}
	a := plan(m.opts.Name, m.opts.Model, req, body, f, f.refusal, m.wire.refusalDeltas())
	if req.stream {
		m.stream(c, w, r, f, m.wire.events(c, a))
		return
	}
	m.complete(c, w, r, f, a)
}

const headerFault = "X-Mock-Fault"

func (m *Mock) parseHeaderScript(r *http.Request) (*Script, error) {
	v := r.Header.Get(headerFault)
	if v == "" {
		return nil, nil
	}
	sc, err := m.parse(v)
	if err != nil {
		return nil, err
	}
	if sc != nil && sc.times > 0 {
		return nil, errors.New("times= only applies to the mock-wide script")
	}
	return sc, nil
}

// writeBody writes a non-streaming success answer with the provider headers.
func (m *Mock) writeBody(c *call, w http.ResponseWriter, body []byte, length int) {
	h := w.Header()
	m.wire.headers(c, h, http.StatusOK)
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(length))
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}
