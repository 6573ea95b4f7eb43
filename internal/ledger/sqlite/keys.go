package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

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
	mj, err := json.Marshal(models)
	if err != nil {
		return fmt.Errorf("ledger/sqlite: create key: %w", err)
	}
	created := sqlstore.OrNow(k.CreatedAt, s.now)
	_, err = s.w.ExecContext(ctx, `INSERT INTO keys (id, hash, prefix, org, team, models, created_at, revoked_at, residency, priority)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		k.ID, k.Hash, k.Prefix, k.Org, k.Team, string(mj), micros(created), nullMicros(k.RevokedAt), k.Residency, k.Priority)
	if isConstraint(err) {
		return fmt.Errorf("ledger/sqlite: create key %q: %w", k.ID, ledger.ErrDuplicate)
	}
	if err != nil {
		return fmt.Errorf("ledger/sqlite: create key: %w", err)
	}
	return nil
}

// KeyByHash returns the key with this SHA-256 hash, revoked or not (the
// caller checks RevokedAt), or ledger.ErrNotFound.
func (s *Store) KeyByHash(ctx context.Context, hash []byte) (*ledger.Key, error) {
	row := s.r.QueryRowContext(ctx, `SELECT `+sqlstore.KeyColumns+` FROM keys WHERE hash = ?`, hash)
	k, err := scanKey(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("ledger/sqlite: key by hash: %w", ledger.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("ledger/sqlite: key by hash: %w", err)
	}
	return &k, nil
}

// Keys lists every key, revoked ones included, by creation time then id.
func (s *Store) Keys(ctx context.Context) ([]ledger.Key, error) {
	out, err := sqlstore.List(ctx, reader{s.r}, scanKey, `SELECT `+sqlstore.KeyColumns+` FROM keys ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("ledger/sqlite: keys: %w", err)
	}
	return out, nil
}

// scanKey reads a row of sqlstore.KeyColumns, its models a JSON array.
func scanKey(sc sqlstore.Scanner) (ledger.Key, error) {
	var models string
	return sqlstore.ScanKey(sc, &models, func(k *ledger.Key) error {
		if err := json.Unmarshal([]byte(models), &k.Models); err != nil {
			return fmt.Errorf("key %q: models column: %w", k.ID, err)
		}
		return nil
	})
}

// RevokeKey marks the key revoked at at. Revoking a revoked key keeps the
// first revocation time; an unknown id is ledger.ErrNotFound.
func (s *Store) RevokeKey(ctx context.Context, id string, at time.Time) error {
	res, err := s.w.ExecContext(ctx, `UPDATE keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?`, micros(at), id)
	if err != nil {
		return fmt.Errorf("ledger/sqlite: revoke key: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("ledger/sqlite: revoke key: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("ledger/sqlite: revoke key %q: %w", id, ledger.ErrNotFound)
	}
	return nil
}

// AdminKeys lists the admin keys, revoked ones included, oldest first.
func (s *Store) AdminKeys(ctx context.Context) ([]ledger.AdminKey, error) {
	out, err := sqlstore.List(ctx, reader{s.r}, sqlstore.ScanAdminKey, `SELECT `+sqlstore.AdminKeyColumns+` FROM admin_keys ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("ledger/sqlite: admin keys: %w", err)
	}
	return out, nil
}

// RotateAdminKey stores k and revokes every other admin key, in one
// transaction. A zero CreatedAt is set to now.
func (s *Store) RotateAdminKey(ctx context.Context, k *ledger.AdminKey) (err error) {
	created := sqlstore.OrNow(k.CreatedAt, s.now)
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("ledger/sqlite: rotate admin key: %w", err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	if _, err := tx.ExecContext(ctx, `UPDATE admin_keys SET revoked_at = ? WHERE revoked_at IS NULL`, micros(created)); err != nil {
		return fmt.Errorf("ledger/sqlite: rotate admin key: %w", err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO admin_keys (id, hash, prefix, created_at) VALUES (?, ?, ?, ?)`,
		k.ID, k.Hash, k.Prefix, micros(created))
	if isConstraint(err) {
		return fmt.Errorf("ledger/sqlite: rotate admin key %q: %w", k.ID, ledger.ErrDuplicate)
	}
	if err != nil {
		return fmt.Errorf("ledger/sqlite: rotate admin key: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("ledger/sqlite: rotate admin key: %w", err)
	}
	return nil
}

// SetBudget creates or replaces the limits of one scope. A zero UpdatedAt
// is set to now. An unknown scope kind is refused.
func (s *Store) SetBudget(ctx context.Context, b *ledger.Budget) error {
	if !ledger.IsScope(b.Scope) {
		return fmt.Errorf("ledger/sqlite: set budget: unknown scope %q", b.Scope)
	}
	updated := sqlstore.OrNow(b.UpdatedAt, s.now)
	_, err := s.w.ExecContext(ctx, `INSERT INTO budgets (scope, id, credit_micro_usd, daily_cap_micro_usd, rpm, tpm, updated_at)
	VALUES (?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (scope, id) DO UPDATE SET
		credit_micro_usd = excluded.credit_micro_usd,
		daily_cap_micro_usd = excluded.daily_cap_micro_usd,
		rpm = excluded.rpm, tpm = excluded.tpm, updated_at = excluded.updated_at`,
		b.Scope, b.ID, nullInt(b.CreditMicroUSD), nullInt(b.DailyCapMicroUSD), b.RPM, b.TPM, micros(updated))
	if err != nil {
		return fmt.Errorf("ledger/sqlite: set budget: %w", err)
	}
	return nil
}

// Budgets lists every scope's limits, by scope then id.
func (s *Store) Budgets(ctx context.Context) ([]ledger.Budget, error) {
	out, err := sqlstore.List(ctx, reader{s.r}, sqlstore.ScanBudget, `SELECT `+sqlstore.BudgetColumns+`
	FROM budgets ORDER BY scope, id`)
	if err != nil {
		return nil, fmt.Errorf("ledger/sqlite: budgets: %w", err)
	}
	return out, nil
}

func nullInt(p *int64) sql.NullInt64 {
	if p == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: *p, Valid: true}
}
