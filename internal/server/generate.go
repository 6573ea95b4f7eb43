package server

import (
	"errors"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spillway-gw/spillway/internal/billing"
	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/engine"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/idempotency"
	"github.com/spillway-gw/spillway/internal/json/jsonwrite"
	"github.com/spillway-gw/spillway/internal/keys"
	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/provider"
	"github.com/spillway-gw/spillway/internal/route"
	"github.com/spillway-gw/spillway/internal/tokens"
	"github.com/spillway-gw/spillway/internal/tracing"
)

// Response headers that say what happened.
const (
	hdrRequestID  = "X-Request-Id"
	hdrModel      = "X-Spillway-Model"
	hdrDeployment = "X-Spillway-Deployment"
	hdrAttempts   = "X-Spillway-Attempts"
	hdrTrail      = "X-Spillway-Trail"
	// hdrConfig names the routing table's version (its file's short hash).
	hdrConfig = "X-Spillway-Config"
)

// generateHandler serves one generation endpoint in one dialect.
type generateHandler struct {
	s *Server
	d dialect.Dialect
	// endpoint names the endpoint in idempotency hashes, so one key can
	// never replay one endpoint's answer to another.
	endpoint string
}

// call is one customer request in flight.
type call struct {
	id      string
	start   time.Time
	d       dialect.Dialect
	key     *ledger.Key
	req     *canonical.Request
	route   *catalog.ResolvedRoute
	plan    *route.Plan
	meta    dialect.Meta
	status  int
	outcome string

	// Money: the prompt's estimate, the request's settlement (set once
	// its worst case is reserved), and what it settled at.
	inputEst   int
	bill       *billing.Settlement
	cost       int64
	costStatus string
	// billed is the usage the request was charged for: the provider's, or
	// the gateway's estimate where the provider reported none.
	billed canonical.Usage

	// deployment served the request ("" when none did).
	deployment string
	// exercise is the secondary rung routing sent the request to first to
	// exercise it ("" when none).
	exercise string

	// Idempotency: the key's owner and the recorder of its answer.
	owner *idempotency.Owner
	rec   *idempotency.RecordingWriter

	// What observe reads (observe.go): the engine's plan and result, and
	// the request's span (nil: tracing off).
	eplan *engine.Plan
	res   *engine.Result
	span  *tracing.Span
}

func (h *generateHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := h.s
	now := s.opts.Now()
	c := &call{id: newRequestID(now), start: now, d: h.d, costStatus: ledger.CostNone}
	hv := newHeaderValues(w.Header(), 2)
	hv.set(hdrRequestID, c.id)
	// Anthropic's SDKs read the request id from request-id.
	hv.set(hdrAnthropicRequestID, c.id)
	defer s.logCall(c)
	s.startTrace(w, r, c)

	// 1. Who is calling: a bad or missing key stops here.
	key, pub := s.authenticate(r)
	if pub != nil {
		s.writeError(w, c, pub, nil)
		return
	}
	c.key = key
	// 2. What they ask, in their dialect.
	body, pub := s.readBody(w, r)
	if pub != nil {
		s.writeError(w, c, pub, nil)
		return
	}
	req, pub := h.d.Decode(body, r.Header)
	if pub == nil {
		pub = checkLimits(req, s.opts.Catalog.Load().Config().Server.Limits)
	}
	if pub != nil {
		s.writeError(w, c, pub, nil)
		return
	}
	c.req = req
	if !keys.Allows(key, req.Model) {
		s.writeError(w, c, &failure.Public{Status: http.StatusForbidden, Code: "model_not_allowed", Param: "model",
			Message: "this key may not call the model " + strconv.Quote(req.Model)}, nil)
		return
	}
	rt := s.runtime()
	if v := rt.snap.Version(); v != "" {
		// Which routing table served: a split rollout is visible per answer.
		w.Header().Set(hdrConfig, v)
	}
	// The routing decision, by the call route explain makes too.
	c.inputEst = tokens.Estimate(req.InputBytes())
	prio, pub := s.priority(r, key, rt.snap)
	if pub != nil {
		s.writeError(w, c, pub, nil)
		return
	}
	conv, pub := conversation(r, rt.snap)
	if pub != nil {
		s.writeError(w, c, pub, nil)
		return
	}
	pl := route.Make(rt.snap, &route.Input{Req: req, Attrs: s.attributes(r, key, req, rt.snap), InputTokens: c.inputEst,
		Priority: prio, Rates: rt.routing, Turns: (*turnTaker)(rt.routing), Conversation: conv, Sticky: s.pins, Quality: s.quality}, s.health, rt)
	c.plan = pl
	if pub := unrouted(pl, req); pub != nil {
		s.writeError(w, c, pub, nil)
		return
	}
	rr := pl.Route
	for i := range pl.Candidates {
		if c := &pl.Candidates[i]; !c.Kept {
			s.opts.Metrics.ObserveDropped(rr.Public, c.Deployment.ID, c.Reason)
		}
	}
	if rr.Pool.Embeddings() != (req.Embed != nil) {
		what := "a chat model: call it through /v1/chat/completions, /v1/responses or /v1/messages"
		if rr.Pool.Embeddings() {
			what = "an embeddings model: call it through /v1/embeddings"
		}
		s.writeError(w, c, &failure.Public{Status: http.StatusBadRequest, Code: "wrong_model_kind", Param: "model",
			Message: "the model " + strconv.Quote(req.Model) + " is " + what}, nil)
		return
	}
	c.route = rr
	c.meta = dialect.Meta{ID: h.d.IDPrefix() + c.id, Model: rr.Pool.Model, Created: c.start.Unix()}

	// 3. Idempotency: replay, conflict, or own the key. Replays touch no
	// budget and no ledger.
	p := &engine.Plan{RequestID: c.id, IdempotencyBase: c.id, Model: rr.Pool.Model}
	if ik := r.Header.Get("Idempotency-Key"); ik != "" {
		claim, err := s.idem.Begin(r.Context(), key.ID, ik, idempotency.RequestHash(h.endpoint, body))
		if err != nil {
			c.status, c.outcome = failure.StatusClientClosedRequest, "client_closed_request"
			return
		}
		switch {
		case claim.Replay != nil || claim.Failed != nil:
			rec := claim.Replay
			if rec == nil {
				rec = claim.Failed
			}
			c.status, c.outcome = rec.Status, "idempotent_replay"
			_ = idempotency.Replay(w, rec)
			return
		case claim.Owner == nil:
			// A refusal is final under its key, except idempotency_unavailable
			// (shared keys cannot be checked now; nothing ran): a retry may run.
			if claim.Refused.Final() {
				w.Header().Set(idempotency.HeaderShouldRetry, "false")
			}
			s.writeError(w, c, claim.Refused.Public(), nil)
			return
		}
		c.owner = claim.Owner
		defer c.owner.Abandon() // fail closed on every path that does not decide
		c.rec = c.owner.Recorder(w)
		w = c.rec
		// Upstream keys derive from the tenant and its key: stable across a
		// replayed retry, never shared between tenants.
		p.IdempotencyBase = key.ID + "\x00" + ik
	}

	// A ledger that cannot record the request refuses it before any work.
	if pub := s.ledgerGate(); pub != nil {
		if c.owner != nil {
			c.owner.Release() // nothing went upstream: a later retry may run
		}
		s.writeError(w, c, pub, nil)
		return
	}
	// 4. Select the rungs, then 5. reserve the worst case once.
	if pub := s.selectRungs(rt, pl, p); pub != nil {
		s.writeError(w, c, pub, nil)
		s.finishIdempotency(c, pub.Status, false, false)
		return
	}
	if pub := s.admitRungs(rt, c, pl, p, prio); pub != nil {
		s.writeError(w, c, pub, nil)
		s.finishIdempotency(c, pub.Status, false, false)
		return
	}
	if pub := s.reserve(c, p); pub != nil {
		if c.owner != nil {
			c.owner.Release() // nothing went upstream: a later retry may run
		}
		s.writeError(w, c, pub, nil)
		return
	}
	// The settlement runs once, at the answer's end or the stream's end or
	// interrupt; this call settles a request that reached none of them (a
	// panic in an adapter fed untrusted bytes), releasing the hold and the
	// ledger reservation rather than leaving them until a restart.
	defer c.bill.Settle(r.Context(), nil)
	// 6. Attempt, 7. settle, 8. answer.
	if req.Stream {
		s.stream(w, r, c, p)
		return
	}
	res := s.engine.Complete(r.Context(), p, req)
	c.ran(p, res)
	defer res.Release() // the answer's memory, once it is written
	s.recordPin(c.plan, p, res)
	// The answer's end: its settled rows are durable before its first (and
	// last) byte, unless the caller left; an answer the ledger could not
	// record is withheld.
	settleErr := c.bill.Settle(r.Context(), res)
	if res.Err != nil {
		if res.Err.Class == failure.ClientCancelled {
			c.status, c.outcome = failure.StatusClientClosedRequest, "client_closed_request"
			return
		}
		pub := publicOf(res)
		s.writeError(w, c, pub, res)
		s.finishIdempotency(c, pub.Status, false, len(res.Attempts) > 0)
		return
	}
	if settleErr != nil {
		pub := errLedgerUnavailable(true)
		s.writeError(w, c, pub, res)
		s.finishIdempotency(c, pub.Status, false, true)
		return
	}
	if !res.UsageReported {
		// A provider that reported no usage (Gemini's embeddings, some
		// compatible servers): the answer shows what was billed.
		res.Response.Usage = c.billed
	}
	setRouteHeaders(w.Header(), c, res)
	setCostHeaders(w.Header(), c)
	buf := s.getBuf()
	defer s.putBuf(buf)
	c.meta.Model = servedModel(c, res)
	*buf = h.d.AppendResponse((*buf)[:0], c.meta, req, res.Response)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(*buf)))
	c.status, c.outcome = http.StatusOK, "ok"
	s.writeDeadline(w)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(*buf)
	s.observeQuality(c, res, nil)
	s.finishIdempotency(c, http.StatusOK, false, true)
}

// finishIdempotency records the answer under the caller's key: a complete
// answer (or an error about the caller's own request) is replayed as is; an
// upstream failure or a broken stream is the key's failure from now on. A
// refusal that sent nothing upstream (no rung could be tried now) releases
// the key instead, as a budget refusal does: a later retry may run.
func (s *Server) finishIdempotency(c *call, status int, broken, upstream bool) {
	if c.owner == nil {
		return
	}
	rec := c.rec.Recording()
	switch {
	case !upstream && (status >= 500 || status == http.StatusTooManyRequests):
		c.owner.Release()
	case broken || status >= 500 || status == http.StatusTooManyRequests:
		c.owner.Fail(rec)
	case status == failure.StatusClientClosedRequest:
		c.owner.Abandon()
	default:
		c.owner.Complete(rec)
	}
}

// authenticate finds the caller's virtual key (Authorization: Bearer, or
// x-api-key as Anthropic's SDKs send it).
func (s *Server) authenticate(r *http.Request) (*ledger.Key, *failure.Public) {
	secret := keys.FromHeaders(r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"))
	k, err := s.opts.Auth.Authenticate(r.Context(), secret)
	switch {
	case err == nil:
		return k, nil
	case errors.Is(err, keys.ErrMissing):
		return nil, &failure.Public{Status: http.StatusUnauthorized, Code: "missing_api_key",
			Message: "this gateway needs a virtual key: send it as Authorization: Bearer <key> (or x-api-key)"}
	case errors.Is(err, keys.ErrInvalid), errors.Is(err, keys.ErrRevoked):
		return nil, &failure.Public{Status: http.StatusUnauthorized, Code: "invalid_api_key",
			Message: "the virtual key is not valid (unknown or revoked)"}
	}
	s.opts.Log.Error("authenticating", "err", err)
	return nil, &failure.Public{Status: http.StatusServiceUnavailable, Code: "auth_unavailable",
		Message: "the gateway could not check the key; retry shortly"}
}

// selectRungs executes a plan's rung choice: its order, or its one
// last-resort probe once claimed. It returns the caller's error when no
// rung can serve.
func (s *Server) selectRungs(rt *runtime, pl *route.Plan, p *engine.Plan) *failure.Public {
	switch pl.Verdict {
	case route.Planned:
		rt.plan(pl.Order, p, false)
		racing(pl, p)
		return nil
	case route.LastResort:
		if s.health.ClaimLastResort(pl.Order[0].ID) {
			rt.plan(pl.Order, p, true)
			return nil
		}
		// Another request spent the probe since the plan was made.
	case route.Shed:
		return s.shedRefusal(rt, pl)
	}
	if pub := s.healthWait(pl); pub != nil {
		return pub
	}
	return noRungs(pl)
}

// unrouted is the caller's error for a plan that matched no route.
func unrouted(pl *route.Plan, req *canonical.Request) *failure.Public {
	switch pl.Verdict {
	case route.UnknownModel:
		return &failure.Public{Status: http.StatusNotFound, Code: "model_not_found", Param: "model",
			Message: "the model " + strconv.Quote(req.Model) + " does not exist on this gateway; GET /v1/models lists the models"}
	case route.NoMatchingRoute:
		return &failure.Public{Status: http.StatusNotFound, Code: "no_matching_route", Param: "model",
			Message: "no route for the model " + strconv.Quote(req.Model) + " matches this request (its workload, team or residency); see the gateway's route explain"}
	}
	return nil
}

// attributes are what routing reads of a request: its model, the key's
// org and team, the workload tag and the residency (the key's own wins
// over the header's).
func (s *Server) attributes(r *http.Request, key *ledger.Key, req *canonical.Request, snap *catalog.Snapshot) catalog.Attributes {
	rc := &snap.Config().Routing
	a := catalog.Attributes{Model: req.Model, Workload: r.Header.Get(rc.WorkloadHeader), Residency: r.Header.Get(rc.ResidencyHeader)}
	if key != nil {
		a.Org, a.Team = key.Org, key.Team
		if key.Residency != "" {
			a.Residency = key.Residency
		}
	}
	return a
}

// publicOf is what the caller is told about a failed result.
func publicOf(res *engine.Result) *failure.Public {
	if res.Err == engine.ErrAllSkipped {
		// Health refused every rung at dispatch (a probe was in flight).
		return &failure.Public{Status: http.StatusServiceUnavailable, Code: "no_healthy_deployment", RetryAfter: time.Second,
			Message: "every provider of this model is being probed after failures; retry after the delay in the Retry-After header"}
	}
	return res.Err.ToPublic()
}

// Missing says why a deployment's runtime cannot be called (no adapter,
// no credential); route.Readiness.
func (rt *runtime) Missing(d *catalog.Deployment) (string, string) {
	tpl := rt.rungs[d.ID]
	if tpl == nil || tpl.missing == "" {
		return "", ""
	}
	if tpl.adapter == nil {
		return route.ReasonNoAdapter, tpl.missing
	}
	return route.ReasonCredentialMissing, tpl.missing
}

// Unsupported says what of req the deployment's adapter cannot express
// faithfully; route.Readiness.
func (rt *runtime) Unsupported(d *catalog.Deployment, req *canonical.Request) string {
	tpl := rt.rungs[d.ID]
	if tpl == nil || tpl.adapter == nil {
		return ""
	}
	if ch, ok := tpl.adapter.(provider.Checker); ok {
		if err := ch.Check(req); err != nil {
			return err.Error()
		}
	}
	return ""
}

// noRungs explains why no rung can serve: the caller learns the model exists
// but is not servable now, and which gate stood in the way when it is the
// caller's to change, never which credential is missing.
func noRungs(pl *route.Plan) *failure.Public {
	reasons := pl.Reasons()
	if len(reasons) == 1 {
		switch r := reasons[0]; r {
		case route.ReasonUnsupported, route.ReasonContext, route.ReasonMaxOutput:
			return &failure.Public{Status: http.StatusBadRequest, Code: "unsupported_request",
				Message: "no provider of this model supports this request: " + pl.Detail(r)}
		case route.ReasonResidency, route.ReasonTenant:
			return &failure.Public{Status: http.StatusForbidden, Code: "no_eligible_deployment",
				Message: "no provider of this model may serve this request: " + pl.Detail(r)}
		case route.ReasonPriceUnknown:
			return &failure.Public{Status: http.StatusServiceUnavailable, Code: "price_unknown",
				Message: "no provider of this model can be priced for this request, so its cost cannot be bounded; set max_tokens or ask the gateway operator to price the model"}
		}
	}
	return &failure.Public{Status: http.StatusServiceUnavailable, Code: "no_eligible_deployment",
		Message: "no provider of this model is available for this request; see the gateway's route explain"}
}

// readBody reads a bounded request body: JSON, as UTF-8, neither
// compressed nor declared as anything else.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *failure.Public) {
	limit := s.opts.Catalog.Load().Config().Server.MaxBodyBytes
	if r.ContentLength > limit {
		return nil, tooLarge(limit)
	}
	if pub := checkMediaType(r.Header); pub != nil {
		return nil, pub
	}
	// ServeHTTP set the body's deadline (body_timeout); it is lifted once
	// the body is in, so long streams are not cut by it.
	body, err := provider.ReadAllSized(http.MaxBytesReader(w, r.Body, limit), r.ContentLength, limit)
	if err == nil {
		_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
		if !utf8.Valid(body) {
			// JSON text is UTF-8 (RFC 8259); a decoder would replace
			// what is not with U+FFFD and send the provider words the
			// caller never wrote.
			return nil, &failure.Public{Status: http.StatusBadRequest, Code: "invalid_encoding",
				Message: "the request body is not valid UTF-8; JSON text must be"}
		}
	}
	if err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			return nil, tooLarge(limit)
		case isTimeout(err):
			return nil, &failure.Public{Status: http.StatusRequestTimeout, Code: "request_timeout",
				Message: "the request body did not arrive within " + s.opts.Catalog.Load().Config().Server.BodyTimeout.D().String()}
		}
		return nil, &failure.Public{Status: http.StatusBadRequest, Code: "invalid_request", Message: "could not read the request body"}
	}
	return body, nil
}

// checkMediaType refuses a body declared as something other than JSON, or
// compressed: read as plain JSON, either would be misread. No Content-Type
// at all is taken as JSON, as curl sends none without -H.
func checkMediaType(h http.Header) *failure.Public {
	if enc := h.Get("Content-Encoding"); enc != "" && !strings.EqualFold(enc, "identity") {
		return &failure.Public{Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type", Param: "Content-Encoding",
			Message: "Content-Encoding " + strconv.Quote(enc) + " is not accepted; send the JSON body uncompressed"}
	}
	ct := h.Get("Content-Type")
	if ct == "" {
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" && !strings.HasSuffix(mt, "+json") {
		return &failure.Public{Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type", Param: "Content-Type",
			Message: "Content-Type " + strconv.Quote(ct) + " is not accepted; send the body as application/json"}
	}
	return nil
}

func tooLarge(limit int64) *failure.Public {
	return &failure.Public{Status: http.StatusRequestEntityTooLarge, Code: "request_too_large",
		Message: "the request body is larger than this gateway's limit of " + strconv.FormatInt(limit, 10) + " bytes"}
}

// writeError writes a caller-facing error in the dialect's shape.
func (s *Server) writeError(w http.ResponseWriter, c *call, pub *failure.Public, res *engine.Result) {
	h := w.Header()
	if res != nil && c.route != nil {
		setRouteHeaders(h, c, res)
	}
	if pub.RetryAfter > 0 {
		secs := int64((pub.RetryAfter + time.Second - 1) / time.Second)
		h.Set("Retry-After", strconv.FormatInt(secs, 10))
	}
	buf := s.getBuf()
	defer s.putBuf(buf)
	*buf = c.d.AppendError((*buf)[:0], pub)
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(*buf)))
	status := pub.Status
	if status == failure.StatusClientClosedRequest {
		c.status, c.outcome = status, pub.Code
		return // nobody is listening
	}
	c.status, c.outcome = status, pub.Code
	s.writeDeadline(w)
	w.WriteHeader(status)
	_, _ = w.Write(*buf)
}

// writeDeadline bounds the write of a whole answer: a caller that does
// not read it is cut off after write_timeout.
func (s *Server) writeDeadline(w http.ResponseWriter) {
	if d := s.opts.Catalog.Load().Config().Server.WriteTimeout.D(); d > 0 {
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d))
	}
}

// setRouteHeaders says which model and deployment served and every hop.
func setRouteHeaders(h http.Header, c *call, res *engine.Result) {
	hv := newHeaderValues(h, 4)
	setRouteHeaderValues(&hv, c, res)
}

func setRouteHeaderValues(hv *headerValues, c *call, res *engine.Result) {
	hv.set(hdrModel, servedModel(c, res))
	if len(res.Attempts) > 0 {
		if k := res.ServingAttempt(); k >= 0 {
			hv.set(hdrDeployment, res.Attempts[k].Deployment)
		}
		hv.set(hdrAttempts, strconv.Itoa(len(res.Attempts)))
		setHedgeHeader(hv.h, res)
		hv.set(hdrTrail, trail(c, res.Attempts))
	}
}

// trail formats the ordered hops as "deployment=class, ...", each with
// its note ("secondary=ok(exercise)", "other=ok(model: gpt-4.1)").
func trail(c *call, as []engine.Attempt) string {
	var b strings.Builder
	for i := range as {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(as[i].Deployment)
		b.WriteByte('=')
		b.WriteString(as[i].Outcome())
		b.WriteString(hopNote(c, &as[i], i))
	}
	return b.String()
}

func (s *Server) logCall(c *call) {
	model, keyID := "", ""
	if c.req != nil {
		model = c.req.Model
	}
	if c.key != nil {
		keyID = c.key.ID
	}
	now := s.opts.Now()
	dur := now.Sub(c.start)
	if !s.opts.AccessSample.Keep(c.status, c.outcome) {
		// Sampled out (log.access): the metrics below still count it.
	} else if s.opts.AccessLog != nil {
		s.writeAccessLine(now, c, keyID, model, dur)
	} else {
		s.opts.Log.Info("request", "request_id", c.id, "dialect", c.d.Name(), "key", keyID, "model", model,
			"deployment", c.deployment, "status", c.status, "outcome", c.outcome, "cost_micro_usd", c.cost,
			"cost_status", c.costStatus, "duration_ms", dur.Milliseconds())
	}
	// The metric's model label is a configured route name, never whatever
	// a caller typed.
	routeModel := "unknown"
	if c.route != nil {
		routeModel = c.route.Public
	}
	s.opts.Metrics.ObserveRequest(c.d.Name(), routeModel, c.outcome, c.req != nil && c.req.Stream, dur, c.deployment, c.cost)
	s.observe(c, now)
}

// writeAccessLine writes the access-log line slog would, by hand: it is
// written once per request, and slog's generic encoding cost several times
// the rest of the logging path.
func (s *Server) writeAccessLine(now time.Time, c *call, keyID, model string, dur time.Duration) {
	buf := s.getBuf()
	b := append((*buf)[:0], `{"time":"`...)
	b = now.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","level":"INFO","msg":"request","request_id":`...)
	b = jsonwrite.AppendString(b, c.id)
	b = append(b, `,"dialect":`...)
	b = jsonwrite.AppendString(b, c.d.Name())
	b = append(b, `,"key":`...)
	b = jsonwrite.AppendString(b, keyID)
	b = append(b, `,"model":`...)
	b = jsonwrite.AppendString(b, model)
	b = append(b, `,"deployment":`...)
	b = jsonwrite.AppendString(b, c.deployment)
	b = append(b, `,"status":`...)
	b = jsonwrite.AppendInt(b, int64(c.status))
	b = append(b, `,"outcome":`...)
	b = jsonwrite.AppendString(b, c.outcome)
	b = append(b, `,"cost_micro_usd":`...)
	b = jsonwrite.AppendInt(b, c.cost)
	b = append(b, `,"cost_status":`...)
	b = jsonwrite.AppendString(b, c.costStatus)
	b = append(b, `,"duration_ms":`...)
	b = jsonwrite.AppendInt(b, dur.Milliseconds())
	b = append(b, "}\n"...)
	_, _ = s.opts.AccessLog.Write(b)
	*buf = b
	s.putBuf(buf)
}
