package route

import (
	"fmt"
	"strings"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/sticky"
)

// Reasons a rung is dropped by a gate (besides the health reasons the
// Health dependency names, and those in route.go).
const (
	ReasonResidency = "residency"
	ReasonTenant    = "tenant_denied"
	ReasonContext   = "context_too_long"
	ReasonMaxOutput = "max_output_exceeded"
	// ReasonQualityDiverged: the deployment's answers diverged from its
	// pool primary's and the pool ejects diverging deployments, until an
	// operator clears the alert.
	ReasonQualityDiverged = "quality_diverged"
)

// Quality is what planning reads of answer-quality divergence: whether a
// deployment is ejected from a pool. It must be read-only and allocate
// nothing (a *quality.Monitor).
type Quality interface {
	Ejected(pool, deployment string) bool
}

// Health is what planning reads of deployment health: whether a rung may
// be tried now and, when none may, which one a last-resort probe would
// go to. Both must be read-only (explain plans without spending a probe).
type Health interface {
	Check(id string) (ok bool, reason string)
	ChooseLastResort(ids []string) (string, bool)
}

// Readiness is what planning reads of a snapshot's runtime: whether a
// deployment can be called at all (an adapter, a credential), and whether
// its adapter can express a request faithfully.
type Readiness interface {
	// Missing returns a reason and detail when the deployment cannot be
	// called; "" when it can.
	Missing(d *catalog.Deployment) (reason, detail string)
	// Unsupported says what of req the deployment's adapter cannot
	// express; "" when it can express all of it.
	Unsupported(d *catalog.Deployment, req *canonical.Request) string
}

// Input is one request as planning sees it.
type Input struct {
	Req   *canonical.Request
	Attrs catalog.Attributes
	// InputTokens estimates the prompt's size, for the context gate.
	InputTokens int
	// Priority is the request's priority, for shedding (zero: normal).
	Priority catalog.Priority
	// Rates reads the deployments' rates, for shedding; nil sheds nothing.
	Rates Rates
	// Turns hands out exercise turns; nil exercises nothing.
	Turns Turns
	// Conversation is the conversation header's value ("" when not sent)
	// and Sticky the pins it is looked up in (nil: no stickiness).
	Conversation string
	Sticky       Sticky
	// Quality says which deployments a pool ejected for diverging answers
	// (nil: none are).
	Quality Quality
}

// Verdict is what planning decided.
type Verdict int

const (
	// Planned: Order holds the rungs to try.
	Planned Verdict = iota
	// LastResort: health refused every rung a gate kept; Order holds the
	// one to probe anyway, so a model never fails on circuit state alone.
	LastResort
	// UnknownModel: no route names the model.
	UnknownModel
	// NoMatchingRoute: routes name the model, but none matches the
	// request's attributes.
	NoMatchingRoute
	// NoRungs: every rung was dropped; Candidates say why.
	NoRungs
	// Shed: the rung the request would go to is past the route's share of
	// its quota and the request's priority is below the protected one;
	// Shedding says why. Nothing is tried.
	Shed
)

// Plan is the routing decision for one request: what the server executes
// and what route explain prints, made by the same call.
type Plan struct {
	Verdict Verdict
	// Route is the matched route (nil for UnknownModel, NoMatchingRoute).
	Route *catalog.ResolvedRoute
	// Candidates are the route's rungs in pool order, each kept or dropped
	// with the gate that dropped it.
	Candidates []Candidate
	// Order is the rungs to try, in order.
	Order []*catalog.Deployment
	// HealthOnly is true when every dropped rung was dropped by health
	// alone (so waiting helps).
	HealthOnly bool
	// Exercise is the secondary rung put first to exercise it (the
	// route's exercise share); nil when none was.
	Exercise *catalog.Deployment
	// Shedding says why the request was shed (Verdict Shed).
	Shedding Shedding
	// Conversation is the request's conversation key, when Keyed (its
	// route keeps pins and something identifies the conversation): the
	// server pins it to the rung that serves.
	Conversation sticky.Key
	Keyed        bool
	// Pin is the deployment that served the conversation's last turn (""
	// when none is known); Sticky is the same when the pin was applied,
	// moving that rung to the front of Order.
	Pin, Sticky string
	// Ranking is what ranking saw of each kept rung, in the ranked order;
	// empty unless Order was ranked (a route that ranks, two rungs kept).
	Ranking []Ranked
	// Hedge is when the first attempt is joined by the next rung (zero:
	// never); RefusalBuffer the route's refusal failover buffer in bytes
	// (0: a refusal is the answer). See hedge.go.
	Hedge         Hedge
	RefusalBuffer int
}

// Make plans one request against a snapshot. It reads health and the
// runtime but changes nothing: executing a LastResort plan must claim the
// probe (health.Tracker.ClaimLastResort) before dispatching.
func Make(snap *catalog.Snapshot, in *Input, h Health, r Readiness) *Plan {
	p := &Plan{}
	MakeInto(p, snap, in, h, r)
	return p
}

// MakeInto is Make into p, reusing its slices: a caller that plans often
// (a benchmark, a pooled request) allocates nothing.
func MakeInto(p *Plan, snap *catalog.Snapshot, in *Input, h Health, r Readiness) {
	*p = Plan{Candidates: p.Candidates[:0], Order: p.Order[:0], Ranking: p.Ranking[:0]}
	rr, known := snap.Match(&in.Attrs)
	switch {
	case !known:
		p.Verdict = UnknownModel
		return
	case rr == nil:
		p.Verdict = NoMatchingRoute
		return
	}
	p.Route = rr
	p.converse(in)
	need := needsOf(in.Req)
	healthSkips := 0
	for _, d := range rr.Deployments {
		c := Candidate{Deployment: d, Kept: true}
		c.Reason, c.Detail = gate(d, in, &need, r)
		if c.Reason == "" {
			c.Reason, c.Detail = diverged(in, rr.Pool, d)
		}
		if c.Reason == "" && h != nil {
			if ok, why := h.Check(d.ID); !ok {
				c.Reason, c.Detail, c.Health = why, "deployment health", true
				healthSkips++
			}
		}
		if c.Reason != "" {
			c.Kept = false
		} else {
			p.Order = append(p.Order, d)
		}
		p.Candidates = append(p.Candidates, c)
	}
	p.arrange(in, h)
	healthSkips += p.addFallback(in, &need, h, r)
	if len(p.Order) > 0 {
		p.exercise(in)
		p.shed(in)
		p.race(h)
		return
	}
	p.HealthOnly = healthSkips == len(p.Candidates) && healthSkips > 0
	if healthSkips > 0 && h != nil {
		healthIDs := make([]string, 0, healthSkips)
		for _, c := range p.Candidates {
			if c.Health {
				healthIDs = append(healthIDs, c.Deployment.ID)
			}
		}
		if id, ok := h.ChooseLastResort(healthIDs); ok {
			d, _ := snap.Deployment(id)
			p.Verdict, p.Order = LastResort, append(p.Order, d)
			return
		}
	}
	p.Verdict = NoRungs
}

// needs are what a request asks of a rung beyond its text, computed once.
type needs struct {
	tools, images, json bool
}

func needsOf(req *canonical.Request) needs {
	return needs{tools: len(req.Tools) > 0, images: req.HasImages(), json: req.ResponseFormat != nil}
}

// gate applies the hard gates, in order, and returns the first that drops
// d: the runtime (adapter, credential), residency, tenant lists, declared
// capabilities, the adapter's own, the output cap, the context window and
// the price. Eligibility is a gate, never a weight.
func gate(d *catalog.Deployment, in *Input, need *needs, r Readiness) (string, string) {
	if r != nil {
		if reason, detail := r.Missing(d); reason != "" {
			return reason, detail
		}
	}
	a := &in.Attrs
	if a.Residency != "" && d.Residency != a.Residency {
		where := "does not say where it keeps data"
		if d.Residency != "" {
			where = "keeps data in " + d.Residency
		}
		return ReasonResidency, "the request's data must stay in " + a.Residency + "; this deployment " + where
	}
	if !d.Tenants.Admits(a.Org) {
		return ReasonTenant, "org " + a.Org + " may not use this deployment (tenants)"
	}
	if what := d.Capabilities.Lacks(need.tools, need.images, need.json); what != "" {
		return ReasonUnsupported, what + " (capabilities." + what + ": false)"
	}
	if r != nil {
		if what := r.Unsupported(d, in.Req); what != "" {
			return ReasonUnsupported, what
		}
	}
	req := in.Req
	if req.MaxTokens > 0 && d.MaxOutputTokens > 0 && req.MaxTokens > d.MaxOutputTokens {
		return ReasonMaxOutput, fmt.Sprintf("max_tokens %d exceeds this deployment's output cap of %d", req.MaxTokens, d.MaxOutputTokens)
	}
	if d.ContextWindow > 0 && in.InputTokens+req.MaxTokens > d.ContextWindow {
		return ReasonContext, fmt.Sprintf("about %d input tokens%s exceed the context window of %d", in.InputTokens, plusOutput(req.MaxTokens), d.ContextWindow)
	}
	return Priced(d, req)
}

// diverged drops a deployment its pool ejected for diverging answers: a
// gate, not health, so no last-resort probe brings it back.
func diverged(in *Input, pool *catalog.Pool, d *catalog.Deployment) (string, string) {
	if in.Quality == nil || pool == nil || !in.Quality.Ejected(pool.ID, d.ID) {
		return "", ""
	}
	return ReasonQualityDiverged, "its answers diverged from the pool primary's (quality.eject); spillway quality clear restores it"
}

func plusOutput(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" plus max_tokens %d", n)
}

// Reasons lists the distinct drop reasons of a plan, in candidate order.
func (p *Plan) Reasons() []string {
	var out []string
	for _, c := range p.Candidates {
		if !c.Kept && !containsStr(out, c.Reason) {
			out = append(out, c.Reason)
		}
	}
	return out
}

// Detail joins the dropped candidates' details, one per deployment, for a
// caller-safe summary (gate details never name credentials).
func (p *Plan) Detail(reason string) string {
	var parts []string
	for _, c := range p.Candidates {
		if !c.Kept && c.Reason == reason && c.Detail != "" && !containsStr(parts, c.Detail) {
			parts = append(parts, c.Detail)
		}
	}
	return strings.Join(parts, "; ")
}

func containsStr(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
