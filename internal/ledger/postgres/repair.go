package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

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
	tx, err := s.begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("ledger/postgres: repair: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	// Claim the listed requests (a batch committing meanwhile lists more
	// for the next Repair; a rollback puts these back).
	prows, err := tx.Query(ctx, `DELETE FROM repair_pending RETURNING request_id`)
	if err != nil {
		return nil, fmt.Errorf("ledger/postgres: repair: %w", err)
	}
	pending, err := pgx.CollectRows(prows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("ledger/postgres: repair: %w", err)
	}
	if len(pending) == 0 {
		return nil, tx.Commit(ctx)
	}
	const out = ` NOT BETWEEN 0 AND `
	tok := fmt.Sprint(ledger.MaxTokens)
	cost := fmt.Sprint(ledger.MaxCostMicro)
	rows, err := tx.Query(ctx, `SELECT request_id, input_tokens, output_tokens, cached_tokens,
	cost_micro_usd, reserved_micro_usd FROM requests WHERE
	request_id = ANY($1) AND (
	input_tokens`+out+tok+` OR output_tokens`+out+tok+` OR cached_tokens`+out+tok+`
	OR cost_micro_usd`+out+cost+` OR reserved_micro_usd`+out+cost+`) ORDER BY request_id COLLATE "C"`, pending)
	if err != nil {
		return nil, fmt.Errorf("ledger/postgres: repair: %w", err)
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
			return nil, fmt.Errorf("ledger/postgres: repair: %w", err)
		}
		fixes = append(fixes, f)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger/postgres: repair: %w", err)
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
		if _, err := tx.Exec(ctx, `UPDATE requests SET input_tokens = $1, output_tokens = $2,
		cached_tokens = $3, cost_micro_usd = $4, reserved_micro_usd = $5 WHERE request_id = $6`,
			f.in, f.outTok, f.cached, f.cost, f.reserved, f.id); err != nil {
			return nil, fmt.Errorf("ledger/postgres: repair %s: %w", f.id, err)
		}
		done = append(done, ledger.Repaired{RequestID: f.id, Seq: -1, What: strings.Join(what, ", ")})
	}

	arows, err := tx.Query(ctx, `SELECT a.request_id, a.seq, a.failure_class, a.input_tokens,
	a.output_tokens, a.cost_micro_usd, r.cost_micro_usd FROM attempts a
	JOIN requests r ON r.request_id = a.request_id WHERE
	a.request_id = ANY($1) AND (
	a.input_tokens`+out+tok+` OR a.output_tokens`+out+tok+` OR a.cost_micro_usd`+out+cost+`)
	ORDER BY a.request_id COLLATE "C", a.seq`, pending)
	if err != nil {
		return nil, fmt.Errorf("ledger/postgres: repair: %w", err)
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
			return nil, fmt.Errorf("ledger/postgres: repair: %w", err)
		}
		afixes = append(afixes, f)
	}
	arows.Close()
	if err := arows.Err(); err != nil {
		return nil, fmt.Errorf("ledger/postgres: repair: %w", err)
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
		if _, err := tx.Exec(ctx, `UPDATE attempts SET input_tokens = $1, output_tokens = $2,
		cost_micro_usd = $3 WHERE request_id = $4 AND seq = $5`, f.in, f.outTok, f.cost, f.id, f.seq); err != nil {
			return nil, fmt.Errorf("ledger/postgres: repair %s/%d: %w", f.id, f.seq, err)
		}
		done = append(done, ledger.Repaired{RequestID: f.id, Seq: f.seq, What: strings.Join(what, ", ")})
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("ledger/postgres: repair: commit: %w", err)
	}
	return done, nil
}
