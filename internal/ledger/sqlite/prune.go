package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/ledger/sqlstore"
)

var _ ledger.Pruner = (*Store)(nil)

// Prune deletes at most limit of the oldest request rows that started
// before before's UTC day, with their attempt and reservation rows, in one
// transaction on the writer connection (so a batch waits for it at most
// that long: keep limit to a few thousand), and returns how many requests
// it deleted. It first raises ledger_meta's raw_kept_from to that day, so
// usage queries that would need the pruned rows are refused, not answered
// short. usage_daily and spend_totals are never touched: usage over whole
// days and budget spend stay exact.
func (s *Store) Prune(ctx context.Context, before time.Time, limit int) (_ int, err error) {
	if limit <= 0 {
		return 0, nil
	}
	cut := micros(before.UTC().Truncate(24 * time.Hour))
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("ledger/sqlite: prune: %w", err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	if _, err := tx.ExecContext(ctx, `INSERT INTO ledger_meta (name, value) VALUES (?, ?)
	ON CONFLICT (name) DO UPDATE SET value = max(value, excluded.value)`, sqlstore.MetaRawKeptFrom, cut); err != nil {
		return 0, fmt.Errorf("ledger/sqlite: prune: %w", err)
	}
	ids, err := sqlstore.List(ctx, reader{tx}, sqlstore.ScanString, `SELECT request_id FROM requests WHERE started_at < ?
	ORDER BY started_at LIMIT ?`, cut, limit)
	if err != nil {
		return 0, fmt.Errorf("ledger/sqlite: prune: %w", err)
	}
	if len(ids) > 0 {
		list, _ := json.Marshal(ids) // strings: cannot fail
		// Attempts first: they reference their request.
		for _, q := range []string{
			`DELETE FROM attempts WHERE request_id IN (SELECT value FROM json_each(?))`,
			`DELETE FROM reservations WHERE request_id IN (SELECT value FROM json_each(?))`,
			`DELETE FROM requests WHERE request_id IN (SELECT value FROM json_each(?))`,
		} {
			if _, err := tx.ExecContext(ctx, q, string(list)); err != nil {
				return 0, fmt.Errorf("ledger/sqlite: prune: %w", err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("ledger/sqlite: prune: commit: %w", err)
	}
	s.wrote(3 * len(ids))
	return len(ids), nil
}
