package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/ledger/sqlstore"
)

// CreateKey stores k. A key whose id or hash exists already is refused with
// ledger.ErrDuplicate. A zero CreatedAt is set to now.
func (s *Store) CreateKey(ctx context.Context, k *ledger.Key) error {
	models := k.Models
	if models == nil {
		models = []string{}
	}
	created := sqlstore.OrNow(k.CreatedAt, s.now)
	_, err := s.pool.Exec(ctx, `INSERT INTO keys (id, hash, prefix, org, team, models, created_at, revoked_at, residency, priority)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		k.ID, k.Hash, k.Prefix, k.Org, k.Team, models, micros(created), nullMicros(k.RevokedAt), k.Residency, k.Priority)
	if isUnique(err) {
		return fmt.Errorf("ledger/postgres: create key %q: %w", k.ID, ledger.ErrDuplicate)
	}
	if err != nil {
		return fmt.Errorf("ledger/postgres: create key: %w", err)
	}
	return nil
}

// KeyByHash returns the key with this SHA-256 hash, revoked or not (the
// caller checks RevokedAt), or ledger.ErrNotFound.
func (s *Store) KeyByHash(ctx context.Context, hash []byte) (*ledger.Key, error) {
	k, err := scanKey(s.pool.QueryRow(ctx, `SELECT `+sqlstore.KeyColumns+` FROM keys WHERE hash = $1`, hash))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("ledger/postgres: key by hash: %w", ledger.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("ledger/postgres: key by hash: %w", err)
	}
	return &k, nil
}

// Keys lists every key, revoked ones included, by creation time then id.
func (s *Store) Keys(ctx context.Context) ([]ledger.Key, error) {
	out, err := sqlstore.List(ctx, querier{s.pool}, scanKey, `SELECT `+sqlstore.KeyColumns+` FROM keys ORDER BY created_at, id COLLATE "C"`)
	if err != nil {
		return nil, fmt.Errorf("ledger/postgres: keys: %w", err)
	}
	return out, nil
}

// scanKey reads a row of sqlstore.KeyColumns, its models a text array.
func scanKey(sc sqlstore.Scanner) (ledger.Key, error) { return sqlstore.ScanKey(sc, nil, nil) }

// RevokeKey marks the key revoked at at. Revoking a revoked key keeps the
// first revocation time; an unknown id is ledger.ErrNotFound.
func (s *Store) RevokeKey(ctx context.Context, id string, at time.Time) error {
	tag, err := s.pool.Exec(ctx, `UPDATE keys SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2`, micros(at), id)
	if err != nil {
		return fmt.Errorf("ledger/postgres: revoke key: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("ledger/postgres: revoke key %q: %w", id, ledger.ErrNotFound)
	}
	return nil
}

// AdminKeys lists the admin keys, revoked ones included, oldest first.
func (s *Store) AdminKeys(ctx context.Context) ([]ledger.AdminKey, error) {
	out, err := sqlstore.List(ctx, querier{s.pool}, sqlstore.ScanAdminKey, `SELECT `+sqlstore.AdminKeyColumns+` FROM admin_keys ORDER BY created_at, id COLLATE "C"`)
	if err != nil {
		return nil, fmt.Errorf("ledger/postgres: admin keys: %w", err)
	}
	return out, nil
}

// RotateAdminKey stores k and revokes every other admin key, in one
// transaction. A zero CreatedAt is set to now.
func (s *Store) RotateAdminKey(ctx context.Context, k *ledger.AdminKey) (err error) {
	created := sqlstore.OrNow(k.CreatedAt, s.now)
	tx, err := s.begin(ctx)
	if err != nil {
		return fmt.Errorf("ledger/postgres: rotate admin key: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, `UPDATE admin_keys SET revoked_at = $1 WHERE revoked_at IS NULL`, micros(created)); err != nil {
		return fmt.Errorf("ledger/postgres: rotate admin key: %w", err)
	}
	_, err = tx.Exec(ctx, `INSERT INTO admin_keys (id, hash, prefix, created_at) VALUES ($1, $2, $3, $4)`,
		k.ID, k.Hash, k.Prefix, micros(created))
	if isUnique(err) {
		return fmt.Errorf("ledger/postgres: rotate admin key %q: %w", k.ID, ledger.ErrDuplicate)
	}
	if err != nil {
		return fmt.Errorf("ledger/postgres: rotate admin key: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("ledger/postgres: rotate admin key: %w", err)
	}
	return nil
}

// SetBudget creates or replaces the limits of one scope. A zero UpdatedAt
// is set to now. An unknown scope kind is refused.
func (s *Store) SetBudget(ctx context.Context, b *ledger.Budget) error {
	if !ledger.IsScope(b.Scope) {
		return fmt.Errorf("ledger/postgres: set budget: unknown scope %q", b.Scope)
	}
	updated := sqlstore.OrNow(b.UpdatedAt, s.now)
	_, err := s.pool.Exec(ctx, `INSERT INTO budgets (scope, id, credit_micro_usd, daily_cap_micro_usd, rpm, tpm, updated_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7)
	ON CONFLICT (scope, id) DO UPDATE SET
		credit_micro_usd = EXCLUDED.credit_micro_usd,
		daily_cap_micro_usd = EXCLUDED.daily_cap_micro_usd,
		rpm = EXCLUDED.rpm, tpm = EXCLUDED.tpm, updated_at = EXCLUDED.updated_at`,
		b.Scope, b.ID, b.CreditMicroUSD, b.DailyCapMicroUSD, b.RPM, b.TPM, micros(updated))
	if err != nil {
		return fmt.Errorf("ledger/postgres: set budget: %w", err)
	}
	return nil
}

// Budgets lists every scope's limits, by scope then id.
func (s *Store) Budgets(ctx context.Context) ([]ledger.Budget, error) {
	out, err := sqlstore.List(ctx, querier{s.pool}, sqlstore.ScanBudget, `SELECT `+sqlstore.BudgetColumns+`
	FROM budgets ORDER BY scope COLLATE "C", id COLLATE "C"`)
	if err != nil {
		return nil, fmt.Errorf("ledger/postgres: budgets: %w", err)
	}
	return out, nil
}
