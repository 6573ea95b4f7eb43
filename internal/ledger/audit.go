package ledger

import (
	"context"
	"fmt"
)

// Auditor reads a ledger's rows as they are stored, page by page, for a
// check of the whole ledger against what its callers saw (spillway drill).
// Every Store is one.
type Auditor interface {
	// RequestRows lists stored request rows in request id order: every row
	// of the first limit distinct request ids greater than after ("" =
	// from the start). An id stored more than once (only a store without
	// the uniqueness constraint could hold one) is listed as often, and
	// all rows of an id are in the same page. limit is 1 to MaxAuditPage.
	RequestRows(ctx context.Context, after string, limit int) ([]Request, error)
	// AttemptRows lists attempt rows in (request id, seq) order, those
	// after after (the zero AttemptKey = from the start), at most limit
	// (1 to MaxAuditPage); rows whose request row is missing too.
	AttemptRows(ctx context.Context, after AttemptKey, limit int) ([]Attempt, error)
	// ReservationStates counts the reservations by state.
	ReservationStates(ctx context.Context) (ReservationStates, error)
}

// MaxAuditPage bounds one page of an Auditor's rows.
const MaxAuditPage = 10_000

// AttemptKey is an attempt row's place in AttemptRows' order.
type AttemptKey struct {
	RequestID string
	Seq       int
}

// ReservationStates counts reservations: Open are neither settled nor
// released, Released were released by RecoverOpen (a crash left them
// open), Settled were closed by their settlement. OpenIDs are up to
// MaxOpenIDs open ones' request ids, oldest first.
type ReservationStates struct {
	Open, Released, Settled int
	OpenIDs                 []string
}

// MaxOpenIDs bounds ReservationStates.OpenIDs.
const MaxOpenIDs = 5

// CheckAuditPage refuses a page size outside 1 to MaxAuditPage.
func CheckAuditPage(limit int) error {
	if limit < 1 || limit > MaxAuditPage {
		return fmt.Errorf("%w: page of %d rows (1 to %d)", ErrInvalidQuery, limit, MaxAuditPage)
	}
	return nil
}
