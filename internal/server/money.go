package server

import (
	"net/http"
	"time"

	"github.com/spillway-gw/spillway/internal/billing"
	"github.com/spillway-gw/spillway/internal/engine"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/ledger"
)

// Cost headers.
const (
	hdrCostUSD    = "X-Spillway-Cost-Usd"
	hdrCostStatus = "X-Spillway-Cost-Status"
)

// reserve reserves the request's worst case once, before any provider is
// called, and keeps the settlement that closes it; a refusal is the
// caller's 429, and the request goes no further.
func (s *Server) reserve(c *call, p *engine.Plan) *failure.Public {
	st, pub := s.billing.Reserve(billing.Request{ID: c.id, Start: c.start, Key: c.key, Req: c.req, Route: c.route, Plan: p,
		Exercise: c.exercise != "", Settled: func(res *engine.Result, b *billing.Bill) { s.settled(c, res, b) }})
	if pub != nil {
		return pub
	}
	c.bill = st
	return nil
}

// settled runs once per request, right after its settlement (res is nil
// when it ended without a result): the one place for what observes a
// settled request.
func (s *Server) settled(c *call, res *engine.Result, b *billing.Bill) {
	// What the answer's cost headers, the access log and the metrics say.
	c.cost, c.costStatus, c.billed = b.Cost, b.Status, b.Usage
	if b.Deployment != "" {
		c.deployment = b.Deployment
	}
	s.recordActivity(c, res)
}

// errLedgerUnavailable is what a caller is told when the ledger cannot
// record its request: before any work (admission), or instead of an
// answer that could not be recorded.
func errLedgerUnavailable(withheld bool) *failure.Public {
	msg := "the gateway cannot record usage right now, so it accepts no billable request; nothing was sent to a model provider or charged; retry shortly"
	if withheld {
		msg = "the gateway could not record this answer in its ledger, so the answer is withheld and nothing is charged; retry shortly"
	}
	return &failure.Public{Status: http.StatusServiceUnavailable, Code: "ledger_unavailable", Message: msg,
		RetryAfter: 5 * time.Second, Retryable: true}
}

// ledgerGate refuses billable work while the ledger cannot make rows
// durable.
func (s *Server) ledgerGate() *failure.Public {
	if s.opts.Ledger == nil || s.opts.Ledger.Unavailable() == nil {
		return nil
	}
	return errLedgerUnavailable(false)
}

// setCostHeaders says what the request cost: the settled amount, or no
// cost and "unpriced" for bring-your-own-key traffic.
func setCostHeaders(h http.Header, c *call) {
	h.Set(hdrCostStatus, c.costStatus)
	if c.costStatus == ledger.CostPriced {
		h.Set(hdrCostUSD, ledger.FormatUSD(c.cost))
	}
}
