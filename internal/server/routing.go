package server

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/engine"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/route"
)

// This file is the server's side of three opt-in route behaviours: the
// state they read (each route's exercise turns, each quota'd deployment's
// rate in the last minute), a request's priority, and what the answer,
// trail and metrics say of a model change or an exercised rung.

// routing is a runtime's routing state: per route, the exercise turns
// taken; per deployment that declares a quota, what it was sent in the
// last minute. Rate windows outlive a reload (the provider's quota does);
// turns restart with each snapshot (the share holds to within one request
// per reload).
type routing struct {
	now   func() time.Time
	turns []atomic.Uint64 // by route index
	rates map[string]*rateWindow
}

// buildRouting makes a snapshot's routing state, keeping the rate windows
// of old's deployments that still declare a quota.
func buildRouting(snap *catalog.Snapshot, old *runtime, now func() time.Time) *routing {
	rg := &routing{now: now, turns: make([]atomic.Uint64, len(snap.Config().Routes)), rates: map[string]*rateWindow{}}
	for _, d := range snap.Deployments() {
		if !d.Quota.Declared() {
			continue
		}
		w := (*rateWindow)(nil)
		if old != nil && old.routing != nil {
			w = old.routing.rates[d.ID]
		}
		if w == nil {
			w = &rateWindow{}
		}
		rg.rates[d.ID] = w
	}
	return rg
}

// Rate is what deployment id was sent in the last minute (route.Rates).
func (rg *routing) Rate(id string) (requests, tokens int) {
	if w := rg.rates[id]; w != nil {
		return w.rate(rg.now())
	}
	return 0, 0
}

// turnTaker takes a route's next exercise turn: the server's.
type turnTaker routing

func (t *turnTaker) Turn(rr *catalog.ResolvedRoute) uint64 { return t.turns[rr.Index].Add(1) - 1 }

// turnPeeker reads a route's next exercise turn without taking it:
// explain's, so that it shows the decision the next request would get.
type turnPeeker routing

func (t *turnPeeker) Turn(rr *catalog.ResolvedRoute) uint64 { return t.turns[rr.Index].Load() }

// rateWindow counts requests and tokens over the last minute in one-second
// buckets, with running totals: recording and reading cost O(1) (at most
// 60 buckets expire at once).
type rateWindow struct {
	mu         sync.Mutex
	head       int64 // the newest second recorded
	reqs, toks int   // totals over the window
	buckets    [rateSeconds]struct{ reqs, toks int }
}

const rateSeconds = 60

// advance moves the window to second sec, expiring older buckets.
func (w *rateWindow) advance(sec int64) {
	if sec <= w.head {
		return
	}
	if sec-w.head >= rateSeconds {
		w.buckets = [rateSeconds]struct{ reqs, toks int }{}
		w.reqs, w.toks = 0, 0
	} else {
		for s := w.head + 1; s <= sec; s++ {
			b := &w.buckets[s%rateSeconds]
			w.reqs, w.toks = w.reqs-b.reqs, w.toks-b.toks
			b.reqs, b.toks = 0, 0
		}
	}
	w.head = sec
}

func (w *rateWindow) add(now time.Time, reqs, toks int) {
	sec := now.Unix()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.advance(sec)
	if sec < w.head {
		sec = w.head // the clock stepped back: count it now
	}
	b := &w.buckets[sec%rateSeconds]
	b.reqs, b.toks = b.reqs+reqs, b.toks+toks
	w.reqs, w.toks = w.reqs+reqs, w.toks+toks
}

// claim counts one request of toks tokens, unless check is set and it
// would take the window past share at of quota q (then it counts nothing
// and reports false): the check and the count are one step.
func (w *rateWindow) claim(now time.Time, q catalog.Quota, at float64, toks int, check bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	sec := max(now.Unix(), w.head)
	w.advance(sec)
	if check && !route.Fits(q, at, w.reqs, w.toks, toks) {
		return false
	}
	b := &w.buckets[sec%rateSeconds]
	b.reqs, b.toks = b.reqs+1, b.toks+toks
	w.reqs, w.toks = w.reqs+1, w.toks+toks
	return true
}

func (w *rateWindow) rate(now time.Time) (int, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.advance(now.Unix())
	return w.reqs, w.toks
}

// until is how long until one more request of toks tokens fits within
// share at of quota q: when enough of the oldest seconds have left the
// window. At least a second, at most the window.
func (w *rateWindow) until(now time.Time, q catalog.Quota, at float64, toks int) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.advance(now.Unix())
	reqs, tk := w.reqs, w.toks
	for s := w.head - rateSeconds + 1; s <= w.head; s++ {
		if route.Fits(q, at, reqs, tk, toks) {
			// The seconds before s are gone at s-1+60.
			return max(time.Duration(s+rateSeconds-1-w.head)*time.Second, time.Second)
		}
		b := &w.buckets[((s%rateSeconds)+rateSeconds)%rateSeconds]
		reqs, tk = reqs-b.reqs, tk-b.toks
	}
	return rateSeconds * time.Second
}

// quotaGate counts each admitted attempt against its deployment's rate
// window (when it declares a quota), then lets next decide.
type quotaGate struct {
	next engine.Gate
	s    *Server
}

func (g quotaGate) Admit(r *engine.Rung) (func(*engine.Attempt), string) {
	done, skip := g.next.Admit(r)
	if skip == "" && r.Counted {
		r.Counted = false // counted at admission; its next attempt is not
	} else if skip == "" && r.Deployment.Quota.Declared() {
		if rt := g.s.rt.Load(); rt != nil && rt.routing != nil {
			if w := rt.routing.rates[r.Deployment.ID]; w != nil {
				w.add(g.s.opts.Now(), 1, r.Tokens)
			}
		}
	}
	return done, skip
}

// priority is the request's priority: its key's, or lower if the
// priority header asks. Claiming more than the key's is refused.
func (s *Server) priority(r *http.Request, key *ledger.Key, snap *catalog.Snapshot) (catalog.Priority, *failure.Public) {
	ceiling := catalog.PriorityNormal
	if key != nil {
		if p, ok := catalog.ParsePriority(key.Priority); ok {
			ceiling = p
		}
	}
	name := snap.Config().Routing.PriorityHeader
	v := strings.TrimSpace(r.Header.Get(name))
	if v == "" {
		return ceiling, nil
	}
	p, ok := catalog.ParsePriority(strings.ToLower(v))
	if !ok {
		return 0, &failure.Public{Status: http.StatusBadRequest, Code: "invalid_priority", Param: name,
			Message: "the " + name + " header must be one of " + strings.Join(catalog.PriorityNames[:], ", ")}
	}
	if p > ceiling {
		return 0, &failure.Public{Status: http.StatusForbidden, Code: "priority_not_allowed", Param: name,
			Message: "this key's requests may claim at most " + ceiling.String() + " priority, not " + p.String()}
	}
	return p, nil
}

// shedRefusal is the caller's answer to a shed plan: 503, and when the
// rung will have room for the request again.
func (s *Server) shedRefusal(rt *runtime, pl *route.Plan) *failure.Public {
	sh := &pl.Shedding
	retry := time.Second
	if w := rt.routing.rates[sh.Deployment.ID]; w != nil {
		retry = w.until(s.opts.Now(), sh.Quota, sh.At, sh.Need)
	}
	return &failure.Public{Status: http.StatusServiceUnavailable, Code: "shed_low_priority", RetryAfter: retry,
		Message: "this model's capacity is reserved for " + sh.Below.String() + " priority requests and above right now; this request is " +
			sh.Priority.String() + " priority: retry after the delay in the Retry-After header"}
}

// admitRungs readies the selected rungs: each gets its exact model and
// what it counts against its quota; the first rung's quota is claimed for
// the request, atomically with the shed check when the request is below
// the route's protected priority (the plan read the rate; another request
// may have taken the room since), and an exercised rung is recorded.
func (s *Server) admitRungs(rt *runtime, c *call, pl *route.Plan, p *engine.Plan, prio catalog.Priority) *failure.Public {
	tokens := c.inputEst + c.req.MaxTokens
	for i := range p.Rungs {
		p.Rungs[i].Model = pl.ModelOf(p.Rungs[i].Deployment)
		p.Rungs[i].Tokens = tokens
	}
	if len(p.Rungs) > 0 {
		first := &p.Rungs[0]
		if w := rt.routing.rates[first.Deployment.ID]; w != nil {
			rr, q := pl.Route, first.Deployment.Quota
			check := rr.Shed.On() && pl.Verdict == route.Planned && prio < rr.ShedBelow
			if !w.claim(s.opts.Now(), q, rr.Shed.At, tokens, check) {
				pl.Verdict = route.Shed
				pl.Shedding = route.Shedding{Deployment: first.Deployment, Need: tokens, Quota: q, At: rr.Shed.At, Priority: prio, Below: rr.ShedBelow}
				pl.Shedding.Requests, pl.Shedding.Tokens = w.rate(s.opts.Now())
				return s.shedRefusal(rt, pl)
			}
			first.Counted = true
		}
	}
	if d := pl.Exercise; d != nil {
		c.exercise = d.ID
		s.opts.Metrics.ObserveExercise(c.route.Public, d.ID)
	}
	return nil
}

// servedModel is the exact model that served res: the serving rung's
// (its last attempt's deployment: a hedge's loser may come after it), or
// the route's own while none has.
func servedModel(c *call, res *engine.Result) string {
	if res != nil && res.Served >= 0 {
		for i := len(res.Attempts) - 1; i >= 0; i-- {
			if a := &res.Attempts[i]; a.Rung == res.Served {
				return c.route.ModelOfID(a.Deployment)
			}
		}
	}
	return c.route.Pool.Model
}

// hopNote is what a trail says of one hop beyond its outcome: that it was
// an exercise of a secondary rung, or that it serves another exact model.
// "" when neither.
func hopNote(c *call, a *engine.Attempt, i int) string {
	var notes []string
	if i == 0 && c.exercise != "" && a.Deployment == c.exercise {
		notes = append(notes, "exercise")
	}
	if m := c.route.ModelOfID(a.Deployment); m != c.route.Pool.Model {
		notes = append(notes, "model: "+m)
	}
	if len(notes) == 0 {
		return ""
	}
	return "(" + strings.Join(notes, "; ") + ")"
}

// ExplainedQuota is a quota'd rung's rate in the last minute.
type ExplainedQuota struct {
	RPM int `json:"rpm,omitempty"`
	TPM int `json:"tpm,omitempty"`
	// Requests and Tokens are what the rung was sent in the last minute.
	Requests int `json:"requests_last_minute"`
	Tokens   int `json:"tokens_last_minute"`
}

// ExplainedShed is why a request would be shed.
type ExplainedShed struct {
	Deployment string  `json:"deployment"`
	At         float64 `json:"at"`
	Priority   string  `json:"priority"`
	Below      string  `json:"below"`
	ExplainedQuota
}

// explainRouting adds the route options' part of a plan to ex: the
// request's priority (on a route that sheds), the rung an exercise puts
// first, each rung's model change and quota use, and a shed decision.
func explainRouting(ex *Explanation, pl *route.Plan, prio catalog.Priority, rates route.Rates) {
	if rr := pl.Route; rr != nil && rr.Shed.On() {
		ex.Priority = prio.String()
	}
	if pl.Exercise != nil {
		ex.Exercise = pl.Exercise.ID
	}
	for i, c := range pl.Candidates {
		if c.ModelChange {
			ex.Rungs[i].ModelChange = pl.ModelOf(c.Deployment)
		}
		if q := c.Deployment.Quota; q.Declared() && rates != nil {
			reqs, toks := rates.Rate(c.Deployment.ID)
			ex.Rungs[i].Quota = &ExplainedQuota{RPM: q.RPM, TPM: q.TPM, Requests: reqs, Tokens: toks}
		}
	}
	if pl.Verdict == route.Shed {
		sh := &pl.Shedding
		ex.Shed = &ExplainedShed{Deployment: sh.Deployment.ID, At: sh.At, Priority: sh.Priority.String(), Below: sh.Below.String(),
			ExplainedQuota: ExplainedQuota{RPM: sh.Quota.RPM, TPM: sh.Quota.TPM, Requests: sh.Requests, Tokens: sh.Tokens}}
	}
}

// explainPriority is the priority explain plans for: ?priority=, else
// normal.
func explainPriority(v string) (catalog.Priority, *failure.Public) {
	p, ok := catalog.ParsePriority(v)
	if !ok {
		return 0, failure.BadRequest("priority", "priority must be one of %s", strings.Join(catalog.PriorityNames[:], ", "))
	}
	return p, nil
}
