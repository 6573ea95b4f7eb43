package billing

import (
	"context"
	"errors"
	"sync"

	"github.com/spillway-gw/spillway/internal/budget"
	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/engine"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/ledger"
)

// Bill is what a settled request was charged.
type Bill struct {
	// Cost is the charge in micro-dollars; Status says how it was reached
	// (ledger.CostPriced, CostUnpriced for bring-your-own-key, CostNone).
	Cost   int64
	Status string
	// Usage is what the request was billed for: the provider's, or the
	// gateway's estimate where the provider reported none.
	Usage canonical.Usage
	// Deployment served the request ("" when none did).
	Deployment string
}

// Settlement is one request's reservation until it is settled. Its Settle
// runs once, whoever calls it first and however often it is called: the
// end of a stream, its interrupt and a deferred call made in case neither
// happened can all call it, concurrently too.
type Settlement struct {
	b        *Biller
	r        Request
	inputEst int   // the prompt's estimate (tokens.Estimate)
	reserved int64 // the worst case held
	hold     *budget.Hold

	once sync.Once
	bill Bill
	err  error
}

// Reserved is the request's worst case, in micro-dollars.
func (s *Settlement) Reserved() int64 { return s.reserved }

// Bill is what the request was charged: the zero charge (CostNone) until
// it is settled.
func (s *Settlement) Bill() Bill { return s.bill }

// Settle settles the request exactly once against res, the engine's
// result (nil when the request ended without one, e.g. a panic: nothing is
// charged and the hold is released). The first call charges the serving
// rung's price (see charge), records the request and attempt rows, settles
// the budget hold at the charge and then runs Request.Settled; every later
// call does nothing and returns what the first returned.
//
// Unless the caller left (res is nil, or failed as the caller's cancel),
// the first call returns only once the rows are durable, so it is made
// right before a response's final byte; an error then means they could not
// be made durable: the answer must be withheld, and nothing was charged,
// here or in the ledger.
func (s *Settlement) Settle(ctx context.Context, res *engine.Result) error {
	s.once.Do(func() { s.err = s.settle(ctx, res) })
	return s.err
}

func (s *Settlement) settle(ctx context.Context, res *engine.Result) error {
	b, r := s.b, &s.r
	bill := Bill{Status: ledger.CostNone}
	if res != nil {
		bill.Usage, bill.Cost, bill.Status = charge(r.Req, r.Plan, res, s.inputEst)
		if res.UsageInvalid && bill.Status == ledger.CostPriced {
			// The provider's figure was impossible: the reservation, the
			// bound the caller agreed to, is the price.
			bill.Cost = s.reserved
		}
		if res.Served >= 0 {
			bill.Deployment = r.Plan.Rungs[res.Served].Deployment.ID
		}
	}
	var err error
	if b.Ledger != nil && r.Key != nil {
		rows := s.rows(res, bill, b.now())
		if left(res) {
			b.Ledger.SettleAsync(rows)
		} else {
			err = b.Ledger.Settle(ctx, rows)
		}
	}
	switch {
	case err == nil:
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		// The caller left while the rows were being made durable; the
		// writer still commits them, so there is nothing to alarm about.
		b.log().Debug("caller left during settlement", "request_id", r.ID)
		err = nil
	default:
		// The rows could not be made durable: the answer is withheld (an
		// answer that reached its caller always has its row), and nothing
		// is charged, here or in the ledger.
		b.log().Error("settling in the ledger; the answer is withheld", "request_id", r.ID, "err", err)
		bill.Cost, bill.Status = 0, ledger.CostNone
	}
	if s.hold != nil {
		s.hold.Settle(bill.Cost, bill.Usage.InputTokens+bill.Usage.OutputTokens)
	}
	s.bill = bill
	if r.Settled != nil {
		r.Settled(res, &s.bill)
	}
	return err
}

// left reports whether the caller is gone: nobody waits for the rows.
func left(res *engine.Result) bool {
	return res == nil || res.Err != nil && res.Err.Class == failure.ClientCancelled
}
