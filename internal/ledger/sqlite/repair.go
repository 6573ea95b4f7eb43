package sqlite

import (
	"context"
	"fmt"
	"strings"

	"github.com/spillway-gw/spillway/internal/ledger"
)

// Repair rewrites request and attempt rows whose figures are out of
// bounds, in one transaction, and returns what it changed. Such rows
// could only come from a gateway older than the writer's bounds check; one
// of them made every SUM over the ledger fail, start-up included. A
// request's impossible cost becomes its reservation (what the caller
// agreed to risk), or 0 when that is impossible too; impossible counts
// become 0. A serving attempt's impossible cost follows its request's.
//
// It reads only the requests listed in repair_pending (WriteBatch lists
// every settlement with a figure out of bounds, migration 7 listed the
// older ones), so start-up never scans the ledger for them; the daily
// aggregates counted those figures bounded already (ledger.Request.Bounded)
// and do not change.
func (s *Store) Repair(ctx context.Context) (_ []ledger.Repaired, err error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("ledger/sqlite: repair: %w", err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	const out = ` NOT BETWEEN 0 AND `
	tok := fmt.Sprint(ledger.MaxTokens)
	cost := fmt.Sprint(ledger.MaxCostMicro)
	rows, err := tx.QueryContext(ctx, `SELECT request_id, input_tokens, output_tokens, cached_tokens,
	cost_micro_usd, reserved_micro_usd FROM requests WHERE
	request_id IN (SELECT request_id FROM repair_pending) AND (
	input_tokens`+out+tok+` OR output_tokens`+out+tok+` OR cached_tokens`+out+tok+`
	OR cost_micro_usd`+out+cost+` OR reserved_micro_usd`+out+cost+`) ORDER BY request_id`)
	if err != nil {
		return nil, fmt.Errorf("ledger/sqlite: repair: %w", err)
	}
	type fix struct {
		id                 string
		in, outTok, cached int64
		cost, reserved     int64
	}
	var fixes []fix
	for rows.Next() {
		var f fix
		if err := rows.Scan(&f.id, &f.in, &f.outTok, &f.cached, &f.cost, &f.reserved); err != nil {
			rows.Close()
			return nil, fmt.Errorf("ledger/sqlite: repair: %w", err)
		}
		fixes = append(fixes, f)
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("ledger/sqlite: repair: %w", err)
	}
	var done []ledger.Repaired
	for _, f := range fixes {
		var what []string
		count := func(name string, v *int64) {
			if *v < 0 || *v > ledger.MaxTokens {
				what = append(what, fmt.Sprintf("%s %d -> 0", name, *v))
				*v = 0
			}
		}
		count("input_tokens", &f.in)
		count("output_tokens", &f.outTok)
		count("cached_tokens", &f.cached)
		if !ledger.SaneCost(f.reserved) {
			what = append(what, fmt.Sprintf("reserved_micro_usd %d -> 0", f.reserved))
			f.reserved = 0
		}
		if !ledger.SaneCost(f.cost) {
			what = append(what, fmt.Sprintf("cost_micro_usd %d -> %d (the reservation)", f.cost, f.reserved))
			f.cost = f.reserved
		}
		if _, err := tx.ExecContext(ctx, `UPDATE requests SET input_tokens = ?, output_tokens = ?,
		cached_tokens = ?, cost_micro_usd = ?, reserved_micro_usd = ? WHERE request_id = ?`,
			f.in, f.outTok, f.cached, f.cost, f.reserved, f.id); err != nil {
			return nil, fmt.Errorf("ledger/sqlite: repair %s: %w", f.id, err)
		}
		done = append(done, ledger.Repaired{RequestID: f.id, Seq: -1, What: strings.Join(what, ", ")})
	}

	arows, err := tx.QueryContext(ctx, `SELECT a.request_id, a.seq, a.failure_class, a.input_tokens,
	a.output_tokens, a.cost_micro_usd, r.cost_micro_usd FROM attempts a
	JOIN requests r ON r.request_id = a.request_id WHERE
	a.request_id IN (SELECT request_id FROM repair_pending) AND (
	a.input_tokens`+out+tok+` OR a.output_tokens`+out+tok+` OR a.cost_micro_usd`+out+cost+`)
	ORDER BY a.request_id, a.seq`)
	if err != nil {
		return nil, fmt.Errorf("ledger/sqlite: repair: %w", err)
	}
	type afix struct {
		id            string
		seq           int
		class         string
		in, outTok    int64
		cost, reqCost int64
	}
	var afixes []afix
	for arows.Next() {
		var f afix
		if err := arows.Scan(&f.id, &f.seq, &f.class, &f.in, &f.outTok, &f.cost, &f.reqCost); err != nil {
			arows.Close()
			return nil, fmt.Errorf("ledger/sqlite: repair: %w", err)
		}
		afixes = append(afixes, f)
	}
	if err := arows.Close(); err != nil {
		return nil, fmt.Errorf("ledger/sqlite: repair: %w", err)
	}
	for _, f := range afixes {
		var what []string
		for _, c := range []struct {
			name string
			v    *int64
		}{{"input_tokens", &f.in}, {"output_tokens", &f.outTok}} {
			if *c.v < 0 || *c.v > ledger.MaxTokens {
				what = append(what, fmt.Sprintf("%s %d -> 0", c.name, *c.v))
				*c.v = 0
			}
		}
		if !ledger.SaneCost(f.cost) {
			to := int64(0)
			if f.class == "" {
				to = f.reqCost // the serving attempt carries its request's cost
			}
			what = append(what, fmt.Sprintf("cost_micro_usd %d -> %d", f.cost, to))
			f.cost = to
		}
		if _, err := tx.ExecContext(ctx, `UPDATE attempts SET input_tokens = ?, output_tokens = ?,
		cost_micro_usd = ? WHERE request_id = ? AND seq = ?`, f.in, f.outTok, f.cost, f.id, f.seq); err != nil {
			return nil, fmt.Errorf("ledger/sqlite: repair %s/%d: %w", f.id, f.seq, err)
		}
		done = append(done, ledger.Repaired{RequestID: f.id, Seq: f.seq, What: strings.Join(what, ", ")})
	}
	// The transaction holds the write lock: no batch listed more meanwhile.
	if _, err := tx.ExecContext(ctx, `DELETE FROM repair_pending`); err != nil {
		return nil, fmt.Errorf("ledger/sqlite: repair: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("ledger/sqlite: repair: commit: %w", err)
	}
	return done, nil
}
