package drill

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"
)

// The invariants, caller side then ledger side.
const (
	invAnswered      = "every_request_answered"
	invNoTruncation  = "no_silent_truncation"
	invWellFormed    = "caller_wire_well_formed"
	invNoModelChange = "no_model_change"
	invCallerErrors  = "caller_errors_are_the_callers"
	invReplays       = "idempotent_replays_exact"
	invSettledOnce   = "settled_exactly_once"
	invCost          = "cost_is_delivered_tokens_at_serving_price"
	invFailedHops    = "failed_hops_cost_zero"
	invLedgerMatches = "ledger_matches_caller"
	invReservations  = "no_open_reservation"
	invExercised     = "faults_exercised"
)

// minExercised is the smallest drill held to invariant faults_exercised:
// fewer requests may not meet every fault.
const minExercised = 1000

// rules describe each invariant in the report.
func rule(name string) string {
	switch name {
	case invAnswered:
		return "every request got a whole HTTP answer within the request timeout (no hang, no cut connection)"
	case invNoTruncation:
		return "every stream ended with its success terminator or the typed stream_interrupted error event"
	case invWellFormed:
		return "every body and event was well-formed JSON in its dialect's shape, from the deployment named, naming no provider model id or address; 429/503 carry Retry-After"
	case invNoModelChange:
		return "every answer (header, body, ledger) names the exact model asked, served by a deployment of its pool"
	case invCallerErrors:
		return "invalid requests got 400 in the dialect's error shape; valid ones never got a caller-fault 4xx"
	case invReplays:
		return "an Idempotency-Key retry replayed the original answer (same request id, outcome and usage), or ran afresh, unmarked, when the original was a 429/5xx that sent nothing upstream (its key released)"
	case invSettledOnce:
		return "no request settled twice; every answered request settled exactly once; refused ones never"
	case invCost:
		return "ledger cost = the serving deployment's price of the row's tokens, and those tokens = what the caller was told (usage, or delivered_tokens)"
	case invFailedHops:
		return "every failed hop, and every request that failed everywhere, costs 0"
	case invLedgerMatches:
		return "ledger deployment, status, attempts, trail and cost match the caller's headers"
	case invReservations:
		return "no reservation left open (or released by crash recovery)"
	case invExercised:
		return "the chaos happened: 529s, 429s, 401s, silences or cuts, failovers and typed interrupts were all met (drills of 1000+ requests)"
	}
	return ""
}

func callerInvariants() []string {
	return []string{invAnswered, invNoTruncation, invWellFormed, invNoModelChange, invCallerErrors, invReplays}
}

func ledgerInvariants() []string {
	return []string{invSettledOnce, invCost, invFailedHops, invLedgerMatches, invReservations}
}

// maxExamples bounds the examples kept per invariant.
const maxExamples = 5

// Invariant is one checked rule and what broke it.
type Invariant struct {
	Name       string   `json:"name"`
	Rule       string   `json:"rule"`
	Pass       bool     `json:"pass"`
	Violations int      `json:"violations"`
	Examples   []string `json:"examples,omitempty"`
}

// checks collects violations per invariant.
type checks struct {
	order []string
	by    map[string]*Invariant
}

func newChecks(names ...string) *checks {
	c := &checks{by: map[string]*Invariant{}}
	for _, n := range names {
		c.order = append(c.order, n)
		c.by[n] = &Invariant{Name: n, Rule: rule(n), Pass: true}
	}
	return c
}

func (c *checks) fail(name, format string, args ...any) { c.failN(name, 1, format, args...) }

// failN records n violations of name with one example.
func (c *checks) failN(name string, n int, format string, args ...any) {
	inv := c.by[name]
	if inv == nil {
		inv = &Invariant{Name: name, Rule: rule(name), Pass: true}
		c.by[name] = inv
		c.order = append(c.order, name)
	}
	inv.Pass = false
	inv.Violations += n
	if len(inv.Examples) < maxExamples {
		inv.Examples = append(inv.Examples, fmt.Sprintf(format, args...))
	}
}

// merge adds invariants checked elsewhere (the ledger's), joining those
// of the same name.
func (c *checks) merge(invs []Invariant) {
	for _, inv := range invs {
		have := c.by[inv.Name]
		if have == nil {
			cp := inv
			c.by[inv.Name] = &cp
			c.order = append(c.order, inv.Name)
			continue
		}
		have.Pass = have.Pass && inv.Pass
		have.Violations += inv.Violations
		for _, e := range inv.Examples {
			if len(have.Examples) < maxExamples {
				have.Examples = append(have.Examples, e)
			}
		}
	}
}

func (c *checks) list() []Invariant {
	out := make([]Invariant, 0, len(c.order))
	for _, n := range c.order {
		out = append(out, *c.by[n])
	}
	return out
}

// PhaseReport is a phase and the upstream requests each rung received in
// it.
type PhaseReport struct {
	Phase
	Upstream []int `json:"upstream_requests"`
}

// Latency is a latency distribution, in milliseconds.
type Latency struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50_ms"`
	P99 float64 `json:"p99_ms"`
}

// DeploymentReport is one deployment's share of the run.
type DeploymentReport struct {
	ID       string `json:"id"`
	Provider string `json:"provider"`
	// Served counts answers (complete or interrupted) it served.
	Served int `json:"served"`
	// Attempts and FailedHops are its attempt rows in the ledger.
	Attempts   int   `json:"attempts"`
	FailedHops int   `json:"failed_hops"`
	SpendMicro int64 `json:"spend_micro_usd"`
}

// Report is a drill's result.
type Report struct {
	Seed        uint64  `json:"seed"`
	Short       bool    `json:"short"`
	Requests    int     `json:"requests"`
	Concurrency int     `json:"concurrency"`
	Rate        float64 `json:"rate_cap_per_second"`
	Model       string  `json:"model"`
	// Replicas is how many gateway replicas shared the traffic (1: one
	// gateway).
	Replicas  int     `json:"replicas"`
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"requests_per_second"`

	// Outcomes of the requests (replays not counted).
	Succeeded    int `json:"succeeded"`
	Interrupted  int `json:"interrupted"`
	Failed       int `json:"failed"`
	CallerErrors int `json:"caller_errors"`
	NoAnswer     int `json:"no_answer"`
	// Availability is Succeeded / Requests; AvailabilityServable leaves out
	// the caller's own errors (4xx other than 429).
	Availability         float64 `json:"availability"`
	AvailabilityServable float64 `json:"availability_excluding_caller_errors"`

	Streams struct {
		Complete    int `json:"complete"`
		Interrupted int `json:"typed_interrupt"`
		Truncated   int `json:"silent_truncation"`
	} `json:"streams"`
	// Replays counts Idempotency-Key retries answered from the first
	// request's recording; Reruns those that ran afresh because the first
	// request was refused with nothing sent upstream, which releases the key
	// (see released). A rerun's answer is checked as a request of its own.
	Replays int `json:"idempotent_replays"`
	Reruns  int `json:"idempotent_reruns"`
	// CostHeaders counts answers whose cost header (or stream trailer) was
	// held against the ledger.
	CostHeaders int `json:"cost_headers_checked"`

	// Failovers counts answers served after at least one failed attempt;
	// ServedAtDepth counts answers by the serving rung's pool position.
	Failovers     int            `json:"failovers"`
	ServedAtDepth []int          `json:"served_at_depth"`
	Attempts      map[int]int    `json:"attempts_histogram"`
	ErrorCodes    map[string]int `json:"error_codes"`

	// Latency of complete answers served on the first attempt, and after
	// a failover; AddedP50/AddedP99 is the difference: what failover costs.
	FirstAttempt  Latency `json:"latency_first_attempt"`
	AfterFailover Latency `json:"latency_after_failover"`
	AddedP50      float64 `json:"failover_added_p50_ms"`
	AddedP99      float64 `json:"failover_added_p99_ms"`

	Deployments []DeploymentReport `json:"deployments"`
	Phases      []PhaseReport      `json:"phases"`
	Ledger      *LedgerReport      `json:"ledger"`

	Invariants []Invariant `json:"invariants"`
	Pass       bool        `json:"pass"`
}

// Broken lists the names of the broken invariants.
func (r *Report) Broken() []string {
	var out []string
	for _, inv := range r.Invariants {
		if !inv.Pass {
			out = append(out, inv.Name)
		}
	}
	return out
}

// expectations turns the callers' results into the ledger check's input:
// one per request, and one more per retry that ran afresh (a request the
// caller saw too, with its own settlement).
func expectations(rs []result) []Expect {
	out := make([]Expect, 0, len(rs))
	for i := range rs {
		out = append(out, expect(&rs[i]))
		if rr := rs[i].rerun; rr != nil {
			out = append(out, expect(rr))
		}
	}
	return out
}

// expect is what the caller saw of one answer.
func expect(r *result) Expect {
	e := Expect{RequestID: r.requestID, Deployment: r.deployment, Attempts: r.attempts, Trail: r.trail,
		Usage: r.usage, Delivered: r.delivered, Cost: r.cost, HasCost: r.hasCost}
	switch {
	case r.kind == okAnswer:
		e.Outcome = Served
	case r.kind == interrupted:
		e.Outcome = Cut
	case r.kind == failed && callerError(r.status):
		e.Outcome = Refused
	case r.kind == failed:
		e.Outcome = Failed
	}
	return e
}

// callerError reports whether a status blames the caller's request.
func callerError(status int) bool {
	return status >= 400 && status < 500 && status != http.StatusTooManyRequests
}

// buildReport checks the caller-side invariants and assembles the report.
func buildReport(cfg Config, t Target, phases []PhaseReport, rs []result, lr *LedgerReport, elapsed time.Duration) *Report {
	rep := &Report{Seed: cfg.Seed, Short: cfg.Short, Requests: len(rs), Concurrency: cfg.Concurrency, Rate: cfg.Rate, Model: t.Model,
		Seconds: elapsed.Seconds(), Attempts: map[int]int{}, ErrorCodes: map[string]int{},
		ServedAtDepth: make([]int, len(t.Rungs)), Phases: phases, Ledger: lr, Replicas: max(1, len(t.BaseURLs))}
	if elapsed > 0 {
		rep.PerSecond = float64(len(rs)) / elapsed.Seconds()
	}
	c := newChecks(callerInvariants()...)
	depth := map[string]int{}
	for i, r := range t.Rungs {
		depth[r.Deployment.ID] = i
	}
	served := map[string]int{}
	var first, after []time.Duration
	for i := range rs {
		r := &rs[i]
		s := r.shape
		tag := fmt.Sprintf("#%d %s stream=%v id=%s", i, s.Dialect, s.Stream, r.requestID)
		if s.Idem && r.kind != noAnswer {
			if r.rerun != nil {
				rep.Reruns++
				checkAnswer(c, cfg, t.Model, depth, tag+" (its retry, id="+r.rerun.requestID+")", r.rerun)
			} else {
				rep.Replays++
			}
			if r.replay != "" {
				c.fail(invReplays, "%s: %s", tag, r.replay)
			}
		}
		checkAnswer(c, cfg, t.Model, depth, tag, r)
		switch r.kind {
		case okAnswer:
			rep.Succeeded++
		case interrupted:
			rep.Interrupted++
		case failed:
			if callerError(r.status) {
				rep.CallerErrors++
			} else {
				rep.Failed++
			}
			rep.ErrorCodes[fmt.Sprintf("%d %s", r.status, r.errCode)]++
		case noAnswer:
			rep.NoAnswer++
		}
		if s.Stream && r.status == http.StatusOK {
			switch r.kind {
			case okAnswer:
				rep.Streams.Complete++
			case interrupted:
				rep.Streams.Interrupted++
			default:
				rep.Streams.Truncated++
			}
		}
		if r.attempts >= 0 {
			rep.Attempts[r.attempts]++
		}
		if r.kind == okAnswer || r.kind == interrupted {
			if r.hasCost {
				rep.CostHeaders++
			}
			served[r.deployment]++
			if d, ok := depth[r.deployment]; ok {
				rep.ServedAtDepth[d]++
			}
			if r.attempts > 1 {
				rep.Failovers++
			}
		}
		if r.kind == okAnswer {
			if r.attempts > 1 {
				after = append(after, r.latency)
			} else {
				first = append(first, r.latency)
			}
		}
	}
	if n := len(rs); n > 0 {
		rep.Availability = float64(rep.Succeeded) / float64(n)
		if m := n - rep.CallerErrors; m > 0 {
			rep.AvailabilityServable = float64(rep.Succeeded) / float64(m)
		}
	}
	rep.FirstAttempt, rep.AfterFailover = latency(first), latency(after)
	if rep.FirstAttempt.N > 0 && rep.AfterFailover.N > 0 {
		rep.AddedP50 = rep.AfterFailover.P50 - rep.FirstAttempt.P50
		rep.AddedP99 = rep.AfterFailover.P99 - rep.FirstAttempt.P99
	}
	for _, r := range t.Rungs {
		id := r.Deployment.ID
		dr := DeploymentReport{ID: id, Provider: r.Deployment.Provider, Served: served[id]}
		if lr != nil {
			dr.Attempts, dr.FailedHops, dr.SpendMicro = lr.AttemptsBy[id], lr.FailedBy[id], lr.Spend[id]
		}
		rep.Deployments = append(rep.Deployments, dr)
	}
	if lr != nil {
		c.merge(lr.Invariants)
		if len(rs) >= minExercised {
			exercised(c, rep, lr)
		}
	}
	rep.Invariants = c.list()
	rep.Pass = true
	for _, inv := range rep.Invariants {
		rep.Pass = rep.Pass && inv.Pass
	}
	return rep
}

// checkAnswer holds one answer, a first request's or a retry's that ran
// afresh, to the caller-side invariants.
func checkAnswer(c *checks, cfg Config, model string, depth map[string]int, tag string, r *result) {
	switch {
	case r.hung:
		c.fail(invAnswered, "%s: still open after %v", tag, cfg.RequestTimeout)
	case r.kind == noAnswer:
		c.fail(invAnswered, "%s: %s", tag, r.reason)
	}
	if r.problem != "" {
		c.fail(invWellFormed, "%s: %s", tag, r.problem)
	}
	switch {
	case r.kind == noAnswer:
	case r.shape.Invalid && (r.kind != failed || r.status != http.StatusBadRequest):
		c.fail(invCallerErrors, "%s: an invalid request answered %d %s", tag, r.status, r.errCode)
	case !r.shape.Invalid && callerError(r.status):
		c.fail(invCallerErrors, "%s: a valid request answered %d %s", tag, r.status, r.errCode)
	}
	if r.model != "" && r.model != model {
		c.fail(invNoModelChange, "%s: x-spillway-model %q, asked %q", tag, r.model, model)
	}
	if r.kind == okAnswer || r.kind == interrupted || r.kind == truncated {
		if r.model == "" {
			c.fail(invNoModelChange, "%s: answer without x-spillway-model", tag)
		}
		if r.bodyModel != model {
			c.fail(invNoModelChange, "%s: the answer names model %q, asked %q", tag, r.bodyModel, model)
		}
		if _, ok := depth[r.deployment]; !ok {
			c.fail(invNoModelChange, "%s: served by %q, not a deployment of the pool", tag, r.deployment)
		}
	}
	if r.kind == truncated {
		c.fail(invNoTruncation, "%s: %s (x-spillway-trail %q)", tag, r.reason, r.trail)
	}
}

// exercised fails the drill when a fault it scripts never showed: a drill
// that injected nothing proves nothing.
func exercised(c *checks, rep *Report, lr *LedgerReport) {
	c.by[invExercised] = &Invariant{Name: invExercised, Rule: rule(invExercised), Pass: true}
	c.order = append(c.order, invExercised)
	need := func(what string, n int) {
		if n == 0 {
			c.fail(invExercised, "no %s in the whole run", what)
		}
	}
	need("failed hop answered 529", lr.Hops["provider_unavailable/529"])
	need("throttled hop (429)", lr.Hops["throttled/429"])
	need("provider credential failure (401)", lr.Hops["provider_authentication/401"])
	need("silent, cut or malformed hop (no provider status)", lr.Hops["provider_unavailable/0"])
	need("failover", rep.Failovers)
	need("typed stream interrupt", rep.Streams.Interrupted)
}

// latency summarises durations (sorted in place).
func latency(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	slices.Sort(ds)
	return Latency{N: len(ds), P50: ms(percentile(ds, 0.50)), P99: ms(percentile(ds, 0.99))}
}

// percentile is the nearest-rank percentile of sorted ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	i := int(float64(len(ds))*p+0.999999) - 1
	return ds[max(0, min(i, len(ds)-1))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// WriteText writes the report for people.
func (r *Report) WriteText(w io.Writer) {
	mode := "long"
	if r.Short {
		mode = "short"
	}
	fmt.Fprintf(w, "spillway drill (%s): %d requests, concurrency %d, at most %.0f/s, seed %d, model %s\n", mode, r.Requests, r.Concurrency, r.Rate, r.Seed, r.Model)
	if r.Replicas > 1 {
		fmt.Fprintf(w, "  over %d replicas (round robin; each idempotent retry sent to the next replica)\n", r.Replicas)
	}
	fmt.Fprintf(w, "  took %.1fs (%.0f requests/s)\n\n", r.Seconds, r.PerSecond)
	fmt.Fprintf(w, "availability        %.2f%% (%d/%d); %.2f%% excluding %d caller errors\n",
		100*r.Availability, r.Succeeded, r.Requests, 100*r.AvailabilityServable, r.CallerErrors)
	fmt.Fprintf(w, "outcomes            %d complete, %d interrupted (typed), %d failed, %d caller errors, %d no answer\n",
		r.Succeeded, r.Interrupted, r.Failed, r.CallerErrors, r.NoAnswer)
	fmt.Fprintf(w, "streams             %d complete, %d typed interrupt, %d silent truncation\n",
		r.Streams.Complete, r.Streams.Interrupted, r.Streams.Truncated)
	fmt.Fprintf(w, "idempotent replays  %d (and %d retries run afresh: their first request sent nothing upstream); cost headers checked against the ledger %d\n",
		r.Replays, r.Reruns, r.CostHeaders)
	fmt.Fprintf(w, "failovers           %d answers served after a failed attempt; by serving rung %v\n", r.Failovers, r.ServedAtDepth)
	keys := make([]int, 0, len(r.Attempts))
	for k := range r.Attempts {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var hist []string
	for _, k := range keys {
		hist = append(hist, fmt.Sprintf("%d:%d", k, r.Attempts[k]))
	}
	fmt.Fprintf(w, "attempts            %s\n", strings.Join(hist, "  "))
	codes := make([]string, 0, len(r.ErrorCodes))
	for k := range r.ErrorCodes {
		codes = append(codes, k)
	}
	sort.Strings(codes)
	for i, k := range codes {
		codes[i] = fmt.Sprintf("%s ×%d", k, r.ErrorCodes[k])
	}
	if len(codes) > 0 {
		fmt.Fprintf(w, "errors              %s\n", strings.Join(codes, "; "))
	}
	fmt.Fprintf(w, "latency             first attempt p50 %.1fms p99 %.1fms (n=%d); after failover p50 %.1fms p99 %.1fms (n=%d)\n",
		r.FirstAttempt.P50, r.FirstAttempt.P99, r.FirstAttempt.N, r.AfterFailover.P50, r.AfterFailover.P99, r.AfterFailover.N)
	fmt.Fprintf(w, "failover adds       p50 %+.1fms, p99 %+.1fms\n\n", r.AddedP50, r.AddedP99)
	fmt.Fprintf(w, "%-20s %-10s %8s %9s %11s %14s\n", "deployment", "provider", "served", "attempts", "failed hops", "spend USD")
	for _, d := range r.Deployments {
		fmt.Fprintf(w, "%-20s %-10s %8d %9d %11d %14s\n", d.ID, d.Provider, d.Served, d.Attempts, d.FailedHops, usd(d.SpendMicro))
	}
	if l := r.Ledger; l != nil {
		fmt.Fprintf(w, "ledger: %d request rows, %d attempt rows, %d open reservations, %d settled above their reservation (by up to %s USD)\n",
			l.Requests, l.Attempts, l.OpenReservations, l.AboveReservation, usd(l.MaxAboveReservation))
	}
	fmt.Fprintln(w, "\nphases (upstream requests per rung):")
	for _, p := range r.Phases {
		fmt.Fprintf(w, "  %6d-%-6d %-40s %v\n", p.From, p.To-1, p.Name, p.Upstream)
		for i, f := range p.Faults {
			if f != shape {
				fmt.Fprintf(w, "                rung %d: %s\n", i+1, f)
			}
		}
	}
	fmt.Fprintln(w, "\ninvariants:")
	for _, inv := range r.Invariants {
		verdict := "PASS"
		if !inv.Pass {
			verdict = fmt.Sprintf("FAIL (%d)", inv.Violations)
		}
		fmt.Fprintf(w, "  %-10s %-42s %s\n", verdict, inv.Name, inv.Rule)
		for _, e := range inv.Examples {
			fmt.Fprintf(w, "             - %s\n", e)
		}
	}
	if r.Pass {
		fmt.Fprintln(w, "\nPASS: every invariant held")
	} else {
		fmt.Fprintf(w, "\nFAIL: broken invariants: %s\n", strings.Join(r.Broken(), ", "))
	}
}

// usd formats micro-dollars as dollars.
func usd(micro int64) string { return fmt.Sprintf("%d.%06d", micro/1e6, micro%1e6) }
