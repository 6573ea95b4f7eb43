package sqlstore

import (
	"time"

	"github.com/spillway-gw/spillway/internal/ledger"
)

// Optional columns (revoked_at, a budget's limits) are scanned into *int64,
// which both drivers set to nil for NULL. A scan's error comes with
// whatever was read: callers drop the value.

// RequestColumns are the requests columns ScanRequest reads, in its order.
const RequestColumns = `request_id, org, team, key_id, public_model, exact_model, deployment,
		route_depth, attempts, status, failure_class, input_tokens, output_tokens, cached_tokens, cost_micro_usd,
		cost_status, reserved_micro_usd, streamed, first_token_ms, latency_ms, started_at, finished_at, exercise`

// ScanRequest reads a row of RequestColumns.
func ScanRequest(sc Scanner) (r ledger.Request, err error) {
	var started, finished int64
	err = sc.Scan(&r.RequestID, &r.Org, &r.Team, &r.KeyID, &r.PublicModel, &r.ExactModel, &r.Deployment,
		&r.RouteDepth, &r.Attempts, &r.Status, &r.FailureClass, &r.InputTokens, &r.OutputTokens, &r.CachedTokens,
		&r.CostMicroUSD, &r.CostStatus, &r.ReservedMicroUSD, &r.Streamed, &r.FirstTokenMS, &r.LatencyMS,
		&started, &finished, &r.Exercise)
	r.StartedAt, r.FinishedAt = Time(started), Time(finished)
	return r, err
}

// AttemptColumns are the attempts columns ScanAttempt reads, in its order.
const AttemptColumns = `request_id, seq, deployment, failure_class, http_status, input_tokens,
		output_tokens, cost_micro_usd, first_byte_ms, duration_ms, started_at`

// ScanAttempt reads a row of AttemptColumns.
func ScanAttempt(sc Scanner) (a ledger.Attempt, err error) {
	err = scanTimeLast(sc, &a.StartedAt, &a.RequestID, &a.Seq, &a.Deployment, &a.FailureClass, &a.HTTPStatus,
		&a.InputTokens, &a.OutputTokens, &a.CostMicroUSD, &a.FirstByteMS, &a.DurationMS)
	return a, err
}

// ReleasedColumns are the reservations columns ScanReleased reads.
const ReleasedColumns = `request_id, key_id, org, team, public_model, amount_micro, created_at`

// ScanReleased reads a row of ReleasedColumns.
func ScanReleased(sc Scanner) (r ledger.Released, err error) {
	err = scanTimeLast(sc, &r.CreatedAt, &r.RequestID, &r.KeyID, &r.Org, &r.Team, &r.PublicModel, &r.AmountMicro)
	return r, err
}

// KeyColumns are the keys columns ScanKey reads, in its order.
const KeyColumns = `id, hash, prefix, org, team, models, created_at, revoked_at, residency, priority`

// ScanKey reads a row of KeyColumns. Each dialect stores a key's models its
// own way: models is where that column is scanned and decode, run after the
// scan, fills k.Models from it. A nil models scans the column straight
// into k.Models (a driver that reads a text array); a nil decode does
// nothing. An empty list reads as nil (all models).
func ScanKey(sc Scanner, models any, decode func(k *ledger.Key) error) (ledger.Key, error) {
	var k ledger.Key
	var created int64
	var revoked *int64
	if models == nil {
		models = &k.Models
	}
	if err := sc.Scan(&k.ID, &k.Hash, &k.Prefix, &k.Org, &k.Team, models, &created, &revoked, &k.Residency, &k.Priority); err != nil {
		return k, err
	}
	if decode != nil {
		if err := decode(&k); err != nil {
			return k, err
		}
	}
	if len(k.Models) == 0 {
		k.Models = nil
	}
	k.CreatedAt, k.RevokedAt = Time(created), NullTime(revoked)
	return k, nil
}

// AdminKeyColumns are the admin_keys columns ScanAdminKey reads.
const AdminKeyColumns = `id, hash, prefix, created_at, revoked_at`

// ScanAdminKey reads a row of AdminKeyColumns.
func ScanAdminKey(sc Scanner) (k ledger.AdminKey, err error) {
	var created int64
	var revoked *int64
	err = sc.Scan(&k.ID, &k.Hash, &k.Prefix, &created, &revoked)
	k.CreatedAt, k.RevokedAt = Time(created), NullTime(revoked)
	return k, err
}

// BudgetColumns are the budgets columns ScanBudget reads.
const BudgetColumns = `scope, id, credit_micro_usd, daily_cap_micro_usd, rpm, tpm, updated_at`

// ScanBudget reads a row of BudgetColumns; a NULL limit is nil (no limit).
func ScanBudget(sc Scanner) (b ledger.Budget, err error) {
	err = scanTimeLast(sc, &b.UpdatedAt, &b.Scope, &b.ID, &b.CreditMicroUSD, &b.DailyCapMicroUSD, &b.RPM, &b.TPM)
	return b, err
}

// scanTimeLast scans a row of dst's columns and then one time column, into at.
func scanTimeLast(sc Scanner, at *time.Time, dst ...any) error {
	var micros int64
	err := sc.Scan(append(dst, &micros)...)
	*at = Time(micros)
	return err
}

// ScanString reads a row of one text column.
func ScanString(sc Scanner) (string, error) {
	var s string
	err := sc.Scan(&s)
	return s, err
}

// ScanInt64 reads a row of one integer column.
func ScanInt64(sc Scanner) (int64, error) {
	var v int64
	err := sc.Scan(&v)
	return v, err
}
