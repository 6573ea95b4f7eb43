package billing

import (
	"net/http"
	"time"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/engine"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/ledger"
)

// rows builds the content-free ledger rows of a settled request: its
// request row and one attempt row per dispatch.
func (s *Settlement) rows(res *engine.Result, bill Bill, now time.Time) *ledger.Settlement {
	r := &s.r
	u, cost := bill.Usage, bill.Cost
	row := ledger.Request{
		RequestID: r.ID, Org: r.Key.Org, Team: r.Key.Team, KeyID: r.Key.ID,
		RouteDepth: -1, Status: status(res), CostMicroUSD: cost, CostStatus: bill.Status,
		ReservedMicroUSD: s.reserved, LatencyMS: now.Sub(r.Start).Milliseconds(),
		StartedAt: r.Start.UTC(), FinishedAt: now.UTC(), Exercise: r.Exercise,
	}
	if r.Req != nil {
		row.PublicModel, row.Streamed = r.Req.Model, r.Req.Stream
	}
	st := &ledger.Settlement{}
	if res != nil {
		if res.Err != nil {
			row.FailureClass = string(res.Err.Class)
		}
		row.Attempts = len(res.Attempts)
		if res.Served >= 0 {
			d := r.Plan.Rungs[res.Served].Deployment
			row.ExactModel, row.Deployment = r.Plan.ModelOf(res.Served), d.ID
			row.RouteDepth = routeDepth(r.Route, d.ID)
			row.InputTokens, row.OutputTokens, row.CachedTokens = u.InputTokens, u.OutputTokens, u.CachedInputTokens
		}
		served := res.ServingAttempt()
		for i, a := range res.Attempts {
			la := ledger.Attempt{RequestID: r.ID, Seq: i, Deployment: a.Deployment,
				FirstByteMS: a.FirstByte.Milliseconds(), DurationMS: a.Duration.Milliseconds(), StartedAt: a.Start.UTC()}
			if a.Err != nil {
				la.FailureClass, la.HTTPStatus = string(a.Err.Class), a.Err.Status
			} else {
				la.HTTPStatus = http.StatusOK
			}
			if i == served {
				la.InputTokens, la.OutputTokens, la.CostMicroUSD = u.InputTokens, u.OutputTokens, cost
			} else if ou, oc, ok := s.operatorCost(&a); ok {
				// The operator's, not the caller's: the request row has the
				// serving attempt's cost alone.
				la.InputTokens, la.OutputTokens, la.CostMicroUSD = ou.InputTokens, ou.OutputTokens, oc
			}
			if row.FirstTokenMS == 0 && a.Err == nil {
				row.FirstTokenMS = (a.Start.Sub(r.Start) + a.FirstToken).Milliseconds()
			}
			st.Attempts = append(st.Attempts, la)
		}
	}
	st.Request = row
	return st
}

// status is the request row's final status.
func status(res *engine.Result) string {
	switch {
	case res == nil:
		return ledger.StatusFailed
	case res.Err == nil:
		return ledger.StatusOK
	case res.Err.Class == failure.ClientCancelled:
		return ledger.StatusCancelled
	case res.Committed:
		return ledger.StatusInterrupted
	}
	return ledger.StatusFailed
}

// routeDepth is a deployment's place in the route's ladder: its index in
// the pool, continued through the fallback pool; -1 when it is in neither.
func routeDepth(rr *catalog.ResolvedRoute, id string) int {
	if rr == nil {
		return -1
	}
	for i, d := range rr.Deployments {
		if d.ID == id {
			return i
		}
	}
	for i, d := range rr.FallbackDeployments {
		if d.ID == id {
			return len(rr.Deployments) + i
		}
	}
	return -1
}
