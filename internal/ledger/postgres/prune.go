package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/ledger/sqlstore"
)

var _ ledger.Pruner = (*Store)(nil)

// Prune deletes at most limit of the oldest request rows that started
// before before's UTC day, with their attempt and reservation rows, in one
// transaction, and returns how many requests it deleted. It first raises
// ledger_meta's raw_kept_from to that day, so usage queries that would
// need the pruned rows are refused, not answered short. usage_daily and
// spend_totals are never touched: usage over whole days and budget spend
// stay exact. Replicas pruning at once delete each row once.
func (s *Store) Prune(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	cut := micros(before.UTC().Truncate(24 * time.Hour))
	ctx, cancel := context.WithTimeout(ctx, s.opts.WriteTimeout)
	defer cancel()
	var pb pgx.Batch
	pb.Queue(`INSERT INTO ledger_meta (name, value) VALUES ($1, $2)
	ON CONFLICT (name) DO UPDATE SET value = GREATEST(ledger_meta.value, EXCLUDED.value)`, sqlstore.MetaRawKeptFrom, cut)
	pb.Queue(`WITH ids AS MATERIALIZED (
		SELECT request_id FROM requests WHERE started_at < $1 ORDER BY started_at LIMIT $2
	), a AS (
		DELETE FROM attempts WHERE request_id IN (SELECT request_id FROM ids)
	), v AS (
		DELETE FROM reservations WHERE request_id IN (SELECT request_id FROM ids)
	)
	DELETE FROM requests WHERE request_id IN (SELECT request_id FROM ids)`, cut, limit)
	br := s.pool.SendBatch(ctx, &pb)
	if _, err := br.Exec(); err != nil {
		br.Close()
		return 0, classify("prune", err)
	}
	tag, err := br.Exec()
	if err != nil {
		br.Close()
		return 0, classify("prune", err)
	}
	if err := br.Close(); err != nil {
		return 0, classify("prune", err)
	}
	return int(tag.RowsAffected()), nil
}
