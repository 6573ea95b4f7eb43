package ledger

import "errors"

// Errors shared by every Store and the Writer. Check them with errors.Is;
// implementations wrap them with their own detail.
var (
	// ErrDuplicate is returned when a key's id or hash already exists.
	ErrDuplicate = errors.New("ledger: already exists")
	// ErrRejected marks a WriteBatch failure caused by the batch's content
	// (a constraint it violates), not by the store's health: retrying the
	// same batch cannot succeed, so the Writer isolates the offending rows
	// instead of retrying.
	ErrRejected = errors.New("ledger: batch rejected by the store")
	// ErrInvalidQuery is returned for a UsageQuery with an unknown name or
	// a malformed value.
	ErrInvalidQuery = errors.New("ledger: invalid usage query")
	// ErrInvalidSettlement is returned by the Writer for a settlement it
	// refuses to queue (no request id, attempt rows that clash).
	ErrInvalidSettlement = errors.New("ledger: invalid settlement")
	// ErrClosed is returned by the Writer after Close.
	ErrClosed = errors.New("ledger: writer closed")
)
