// Package billing is the gateway's money rule: what a request reserves
// before any provider is called, what it is charged once it ends, and the
// ledger rows that record both. A request's Settlement, returned by
// Reserve, settles exactly once however the request ends.
package billing

import (
	"context"
	"log/slog"
	"time"

	"github.com/spillway-gw/spillway/internal/budget"
	"github.com/spillway-gw/spillway/internal/ledger"
)

// Ledger is what billing needs of the ledger's writer (*ledger.Writer).
type Ledger interface {
	// Reserve queues a reservation without waiting.
	Reserve(r ledger.Reservation)
	// Settle queues a settlement and returns once it is durable.
	Settle(ctx context.Context, s *ledger.Settlement) error
	// SettleAsync queues a settlement without waiting.
	SettleAsync(s *ledger.Settlement)
}

// Biller reserves and settles requests. The zero value bills nothing: no
// budget gates, no ledger rows, though each request's worst case and
// charge are still worked out.
type Biller struct {
	// Budget gates spend and rates (nil: no gates, and no reservation row
	// in the ledger).
	Budget *budget.Accountant
	// Ledger records reservations and settlements (nil: nothing recorded).
	Ledger Ledger
	// Log reports settlements the ledger could not make durable (nil:
	// discarded).
	Log *slog.Logger
	// Now stamps the settled rows (nil: time.Now).
	Now func() time.Time
}

func (b *Biller) now() time.Time {
	if b.Now == nil {
		return time.Now()
	}
	return b.Now()
}

func (b *Biller) log() *slog.Logger {
	if b.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return b.Log
}
