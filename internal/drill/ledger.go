package drill

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/ledger/sqlite"
)

// Outcome is how a request ended for its caller, as the ledger check needs
// it.
type Outcome uint8

const (
	// Unknown: the caller got no whole answer (it may or may not have been
	// settled, as cancelled or otherwise).
	Unknown Outcome = iota
	// Served: a complete answer; settled once, "ok".
	Served
	// Cut: a stream that ended with the typed error; settled once,
	// "interrupted", at the delivered tokens.
	Cut
	// Failed: an error status from the gateway after routing; settled at
	// most once, "failed", at zero.
	Failed
	// Refused: the caller's own error (400), refused before anything was
	// reserved; never settled.
	Refused
)

// Expect is what the caller saw of one request.
type Expect struct {
	RequestID string
	Outcome   Outcome
	// Deployment is x-spillway-deployment ("" when none).
	Deployment string
	// Attempts is x-spillway-attempts; -1 when absent.
	Attempts int
	// Trail is x-spillway-trail ("dep=outcome, ...").
	Trail string
	// Usage is the usage of a Served answer.
	Usage Usage
	// Delivered is the typed error's delivered_tokens of a Cut stream.
	Delivered int
	// Cost is the cost header (or stream trailer), when HasCost.
	Cost    int64
	HasCost bool
}

// LedgerReport is what the ledger check found.
type LedgerReport struct {
	Requests         int `json:"request_rows"`
	Attempts         int `json:"attempt_rows"`
	OpenReservations int `json:"open_reservations"`
	// Released reservations were released by crash recovery: none are
	// expected in a drill, which starts on a fresh ledger.
	Released int `json:"released_reservations"`
	// AboveReservation counts settlements that cost more than the worst
	// case reserved for them (informational).
	AboveReservation    int   `json:"settled_above_reservation"`
	MaxAboveReservation int64 `json:"max_above_reservation_micro_usd"`
	// Spend and AttemptsBy are per deployment: settled cost, attempt rows,
	// and attempt rows that failed.
	Spend      map[string]int64 `json:"spend_micro_usd"`
	AttemptsBy map[string]int   `json:"attempts_by_deployment"`
	FailedBy   map[string]int   `json:"failed_hops_by_deployment"`
	// Hops counts failed attempts (interrupted serving ones included) by
	// "class/provider status", e.g. "throttled/429",
	// "provider_unavailable/0" (a timeout or a cut connection): what the
	// faults actually did.
	Hops map[string]int `json:"failed_attempts"`
	// Invariants are the ledger-side checks.
	Invariants []Invariant `json:"invariants"`
}

// ledgerRow is one requests row.
type ledgerRow struct {
	id, publicModel, exactModel, deployment, status, failureClass, costStatus string
	depth, attempts, input, output, cached                                    int
	cost, reserved                                                            int64
	dup                                                                       int // further rows with the same id
}

// attemptRow is one attempts row.
type attemptRow struct {
	seq        int
	deployment string
	class      string
	httpStatus int
	output     int
	cost       int64
}

// CheckLedger reads the SQLite ledger at path (read only) and checks it as
// CheckStore does.
func CheckLedger(ctx context.Context, path, model string, rungs []Rung, exp []Expect) (*LedgerReport, error) {
	r, err := sqlite.OpenReader(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("drill: opening the ledger: %w", err)
	}
	defer r.Close()
	return CheckStore(ctx, r, model, rungs, exp)
}

// CheckStore reads a ledger (any ledger.Store, or a read-only Auditor)
// and checks it against what the callers saw: every request settled at
// most once and every answered one exactly once; every settled cost equal
// to the serving deployment's price of the row's tokens, and those tokens
// what the caller was told; every failed hop and every request that failed
// everywhere at zero; no reservation open. Prices come from the rungs'
// deployments.
func CheckStore(ctx context.Context, a ledger.Auditor, model string, rungs []Rung, exp []Expect) (*LedgerReport, error) {
	c := newChecks(ledgerInvariants()...)
	rep, err := checkLedger(ctx, a, model, rungs, exp, c)
	if err != nil {
		return nil, err
	}
	rep.Invariants = c.list()
	return rep, nil
}

func checkLedger(ctx context.Context, a ledger.Auditor, model string, rungs []Rung, exp []Expect, c *checks) (*LedgerReport, error) {
	rows, err := readRequests(ctx, a)
	if err != nil {
		return nil, err
	}
	atts, nAtt, err := readAttempts(ctx, a)
	if err != nil {
		return nil, err
	}
	rep := &LedgerReport{Requests: len(rows), Attempts: nAtt,
		Spend: map[string]int64{}, AttemptsBy: map[string]int{}, FailedBy: map[string]int{}, Hops: map[string]int{}}
	for _, r := range rows {
		rep.Requests += r.dup
	}
	st, err := a.ReservationStates(ctx)
	if err != nil {
		return nil, fmt.Errorf("drill: reading reservations: %w", err)
	}
	rep.OpenReservations, rep.Released = st.Open, st.Released
	if rep.OpenReservations > 0 {
		c.failN(invReservations, rep.OpenReservations, "%d reservations left open, e.g. %s", rep.OpenReservations, strings.Join(st.OpenIDs, ", "))
	}
	if rep.Released > 0 {
		c.fail(invReservations, "%d reservations released by crash recovery during a drill", rep.Released)
	}

	depth := map[string]int{}
	for i, r := range rungs {
		depth[r.Deployment.ID] = i
	}
	// The rows on their own: prices, zero-cost failures, attempt rows.
	for id, r := range rows {
		if r.dup > 0 {
			c.fail(invSettledOnce, "%s settled %d times", id, r.dup+1)
		}
		if over := r.cost - r.reserved; over > 0 {
			rep.AboveReservation++
			rep.MaxAboveReservation = max(rep.MaxAboveReservation, over)
		}
		as := atts[id]
		for i := range as {
			a := &as[i]
			rep.AttemptsBy[a.deployment]++
			// The serving attempt of an interrupted stream carries a class
			// too, but it served: it is not a failed hop.
			if serving := r.deployment != "" && i == len(as)-1; a.class != "" && !serving {
				rep.FailedBy[a.deployment]++
			}
			if a.class != "" {
				rep.Hops[a.class+"/"+strconv.Itoa(a.httpStatus)]++
			}
		}
		checkRow(c, model, rungs, depth, id, r, as)
		rep.Spend[r.deployment] += r.cost
	}
	for id := range atts {
		if _, ok := rows[id]; !ok {
			c.fail(invSettledOnce, "attempt rows of %s without its request row", id)
		}
	}
	// The rows against what the callers saw.
	seen := map[string]bool{}
	unknown := 0
	for i := range exp {
		e := &exp[i]
		if e.RequestID == "" {
			unknown++
			continue
		}
		if seen[e.RequestID] {
			c.fail(invSettledOnce, "two caller requests were answered with request id %s", e.RequestID)
			continue
		}
		seen[e.RequestID] = true
		r, ok := rows[e.RequestID]
		switch {
		case !ok && (e.Outcome == Served || e.Outcome == Cut):
			c.fail(invSettledOnce, "%s was answered but has no settled row", e.RequestID)
			continue
		case ok && e.Outcome == Refused:
			c.fail(invSettledOnce, "%s was refused as the caller's error but settled", e.RequestID)
			continue
		case !ok:
			continue
		}
		checkAgainstCaller(c, e, r, atts[e.RequestID])
	}
	if extra := len(rows) - countSeen(rows, seen); extra > unknown {
		c.fail(invSettledOnce, "%d settled rows belong to no request a caller saw (only %d requests went unanswered)", extra, unknown)
	}
	return rep, nil
}

func countSeen(rows map[string]*ledgerRow, seen map[string]bool) int {
	n := 0
	for id := range rows {
		if seen[id] {
			n++
		}
	}
	return n
}

// checkRow checks one settled row on its own.
func checkRow(c *checks, model string, rungs []Rung, depth map[string]int, id string, r *ledgerRow, as []attemptRow) {
	if r.publicModel != model {
		c.fail(invNoModelChange, "%s asked for %q in the ledger, the drill asked %q", id, r.publicModel, model)
	}
	if len(as) != r.attempts {
		c.fail(invLedgerMatches, "%s: %d attempt rows, the request row says %d", id, len(as), r.attempts)
	}
	for i := range as {
		if as[i].seq != i {
			c.fail(invLedgerMatches, "%s: attempt seq %d at position %d", id, as[i].seq, i)
			break
		}
	}
	if r.deployment == "" {
		// Failed everywhere: nothing served, nothing owed.
		if r.cost != 0 {
			c.fail(invFailedHops, "%s failed everywhere but cost %d µ$", id, r.cost)
		}
		for _, a := range as {
			if a.cost != 0 {
				c.fail(invFailedHops, "%s: failed hop %d on %s cost %d µ$", id, a.seq, a.deployment, a.cost)
			}
		}
		if r.status == "ok" || r.status == "interrupted" {
			c.fail(invLedgerMatches, "%s is %q with no serving deployment", id, r.status)
		}
		return
	}
	if r.exactModel != model {
		c.fail(invNoModelChange, "%s served exact model %q, asked %q", id, r.exactModel, model)
	}
	d, at := depth[r.deployment]
	if !at {
		c.fail(invNoModelChange, "%s served by %q, not a deployment of the pool", id, r.deployment)
		return
	}
	if r.depth != d {
		c.fail(invLedgerMatches, "%s: route depth %d for %s, at %d in the pool", id, r.depth, r.deployment, d)
	}
	dep := rungs[d].Deployment
	want := int64(0)
	if r.output > 0 { // an empty answer costs nothing
		want = dep.Price.CostMicroUSD(r.input, r.cached, 0, r.output)
	}
	if r.cost != want {
		c.fail(invCost, "%s cost %d µ$, but %d input (%d cached) + %d output tokens at %s's price is %d µ$",
			id, r.cost, r.input, r.cached, r.output, r.deployment, want)
	}
	if r.costStatus != "priced" {
		c.fail(invCost, "%s served by a priced deployment has cost status %q", id, r.costStatus)
	}
	// Every hop but the serving one (the last) is free; the serving one
	// carries the whole cost.
	for i, a := range as {
		last := i == len(as)-1
		switch {
		case !last && a.class == "":
			c.fail(invLedgerMatches, "%s: hop %d on %s did not serve but has no failure class", id, a.seq, a.deployment)
		case !last && a.cost != 0:
			c.fail(invFailedHops, "%s: failed hop %d on %s (%s) cost %d µ$", id, a.seq, a.deployment, a.class, a.cost)
		case last && a.deployment != r.deployment:
			c.fail(invLedgerMatches, "%s: last attempt on %s, served by %s", id, a.deployment, r.deployment)
		case last && a.cost != r.cost:
			c.fail(invCost, "%s: serving attempt cost %d µ$, the request %d µ$", id, a.cost, r.cost)
		}
	}
}

// checkAgainstCaller checks one settled row against what its caller saw.
func checkAgainstCaller(c *checks, e *Expect, r *ledgerRow, as []attemptRow) {
	id := e.RequestID
	wantStatus := ""
	switch e.Outcome {
	case Served:
		wantStatus = "ok"
		if r.output != e.Usage.Output || r.input != e.Usage.Input || r.cached != e.Usage.Cached {
			c.fail(invCost, "%s: ledger tokens in/cached/out %d/%d/%d, the caller was told %d/%d/%d",
				id, r.input, r.cached, r.output, e.Usage.Input, e.Usage.Cached, e.Usage.Output)
		}
	case Cut:
		wantStatus = "interrupted"
		if r.output != e.Delivered {
			c.fail(invCost, "%s: ledger bills %d output tokens, the caller was delivered %d", id, r.output, e.Delivered)
		}
	case Failed:
		wantStatus = "failed"
	}
	if wantStatus != "" && r.status != wantStatus {
		c.fail(invLedgerMatches, "%s: ledger status %q, the caller saw %q", id, r.status, wantStatus)
	}
	if (e.Outcome == Served || e.Outcome == Cut) && r.deployment != e.Deployment {
		c.fail(invLedgerMatches, "%s: served by %q in the ledger, %q in the header", id, r.deployment, e.Deployment)
	}
	if e.Outcome == Failed && r.deployment != "" {
		c.fail(invLedgerMatches, "%s failed for its caller but the ledger says %s served", id, r.deployment)
	}
	if e.HasCost && e.Cost != r.cost {
		c.fail(invLedgerMatches, "%s: the caller was told it cost %d µ$, the ledger says %d µ$", id, e.Cost, r.cost)
	}
	if e.Attempts >= 0 && e.Attempts != r.attempts {
		c.fail(invLedgerMatches, "%s: %d attempts in the header, %d in the ledger", id, e.Attempts, r.attempts)
	}
	if e.Attempts < 0 && r.attempts > 0 {
		// No X-Spillway-Attempts tells the caller that nothing went
		// upstream, so that a retry under its Idempotency-Key runs afresh
		// (see released): the ledger must agree.
		c.fail(invLedgerMatches, "%s: the caller was told of no attempt, the ledger has %d", id, r.attempts)
	}
	if e.Trail != "" {
		hops := strings.Split(e.Trail, ", ")
		if len(hops) != len(as) {
			c.fail(invLedgerMatches, "%s: trail %q has %d hops, the ledger %d attempts", id, e.Trail, len(hops), len(as))
			return
		}
		for i, h := range hops {
			dep, class, _ := strings.Cut(h, "=")
			// The last hop of an answer reads "ok" in the trail (it is
			// written at commit); the ledger knows whether it broke later.
			last := i == len(hops)-1 && e.Outcome != Failed
			if dep != as[i].deployment || (!last && class != as[i].class) {
				c.fail(invLedgerMatches, "%s: trail hop %d is %q, the ledger's %s=%s", id, i, h, as[i].deployment, as[i].class)
				return
			}
		}
	}
}

// auditPage is how many rows one read of the ledger brings.
const auditPage = 2000

// readRequests reads every request row, page by page; a request id stored
// more than once is counted in its first row's dup.
func readRequests(ctx context.Context, a ledger.Auditor) (map[string]*ledgerRow, error) {
	rows := map[string]*ledgerRow{}
	after := ""
	for {
		page, err := a.RequestRows(ctx, after, auditPage)
		if err != nil {
			return nil, fmt.Errorf("drill: reading requests: %w", err)
		}
		if len(page) == 0 {
			return rows, nil
		}
		for i := range page {
			q := &page[i]
			if prev, ok := rows[q.RequestID]; ok {
				prev.dup++
				continue
			}
			rows[q.RequestID] = &ledgerRow{id: q.RequestID, publicModel: q.PublicModel, exactModel: q.ExactModel,
				deployment: q.Deployment, status: q.Status, failureClass: q.FailureClass, costStatus: q.CostStatus,
				depth: q.RouteDepth, attempts: q.Attempts, input: q.InputTokens, output: q.OutputTokens, cached: q.CachedTokens,
				cost: q.CostMicroUSD, reserved: q.ReservedMicroUSD}
		}
		after = page[len(page)-1].RequestID
	}
}

// readAttempts reads every attempt row, page by page, by request id.
func readAttempts(ctx context.Context, a ledger.Auditor) (map[string][]attemptRow, int, error) {
	out := map[string][]attemptRow{}
	n := 0
	var after ledger.AttemptKey
	for {
		page, err := a.AttemptRows(ctx, after, auditPage)
		if err != nil {
			return nil, 0, fmt.Errorf("drill: reading attempts: %w", err)
		}
		if len(page) == 0 {
			return out, n, nil
		}
		for _, q := range page {
			out[q.RequestID] = append(out[q.RequestID], attemptRow{seq: q.Seq, deployment: q.Deployment, class: q.FailureClass,
				httpStatus: q.HTTPStatus, output: q.OutputTokens, cost: q.CostMicroUSD})
			n++
		}
		last := page[len(page)-1]
		after = ledger.AttemptKey{RequestID: last.RequestID, Seq: last.Seq}
	}
}
