// Package sqlstore is what the SQL ledger stores (internal/ledger/sqlite
// and internal/ledger/postgres) share: scanning rows into ledger types,
// running reads, the usage query's assembly, Repair's reads and the
// migration runner. Each store keeps its SQL dialect, its transactions and
// its driver; this package imports no driver, and only ledger.
package sqlstore

import (
	"strconv"
	"time"
)

// Scanner is one row as both drivers give it (database/sql's *sql.Row and
// *sql.Rows, pgx's Row and Rows).
type Scanner interface {
	Scan(dst ...any) error
}

// Rows is a result set being read (ClosingRows adds its Close: the
// drivers' Close methods differ, and each store adapts its own).
type Rows interface {
	Scanner
	Next() bool
	Err() error
}

// collect reads every row of rows with scan. An empty result is a nil
// slice, as the stores' listings have always returned.
func collect[T any](rows Rows, scan func(Scanner) (T, error)) ([]T, error) {
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// Time converts a stored time, microseconds since the Unix epoch, to UTC.
func Time(micros int64) time.Time { return time.UnixMicro(micros).UTC() }

// NullTime converts a stored optional time; NULL (nil) is the zero time.
func NullTime(micros *int64) time.Time {
	if micros == nil {
		return time.Time{}
	}
	return Time(*micros)
}

// OrNow is t, or now() when t is zero: the stores stamp a row written
// without a time (a key's creation, a budget's update) with the present.
func OrNow(t time.Time, now func() time.Time) time.Time {
	if t.IsZero() {
		return now()
	}
	return t
}

// Question is SQLite's placeholder, the same for every argument.
func Question(int) string { return "?" }

// Dollar is PostgreSQL's placeholder for the n-th argument: $n.
func Dollar(n int) string { return "$" + strconv.Itoa(n) }
