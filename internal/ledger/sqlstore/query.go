package sqlstore

import "context"

// Querier runs a read query. Each store adapts its driver's pool or
// transaction to it, so that List serves both.
type Querier interface {
	Query(ctx context.Context, query string, args ...any) (ClosingRows, error)
}

// ClosingRows is a result set its reader closes. A close error is not
// reported: after the last row it is always nil, and before it the read
// has failed already (Rows.Err or Scan say why).
type ClosingRows interface {
	Rows
	Close()
}

// List runs query through q and reads every row with scan (see collect),
// closing the rows.
func List[T any](ctx context.Context, q Querier, scan func(Scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return collect(rows, scan)
}
