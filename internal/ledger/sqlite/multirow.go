package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"math/bits"
	"strings"

	"github.com/spillway-gw/spillway/internal/ledger"
)

// Settlements are inserted many rows per statement: the driver's cost per
// statement (argument checks, binding set-up, stepping, reset) is then paid
// once per up to maxRows rows instead of once per row, which is most of
// what a row costs beyond SQLite's own B-tree work.
const (
	maxRows = 32
	// sizes is how many statements each table has: 1, 2, 4, ..., maxRows
	// rows; any count is a sum of those.
	sizes = 6

	requestColumns = 23
	attemptColumns = 11
)

// rowStmts are one table's multi-row INSERTs: [k] inserts 1<<k rows.
type rowStmts [sizes]*sql.Stmt

// multiInsert is an INSERT of n rows of cols parameters.
func multiInsert(head string, cols, n int, tail string) string {
	row := "(" + strings.Repeat("?, ", cols-1) + "?)"
	var b strings.Builder
	b.WriteString(head)
	b.WriteString(" VALUES ")
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row)
	}
	b.WriteString(tail)
	return b.String()
}

const (
	insertRequestsHead = `INSERT INTO requests
	(request_id, org, team, key_id, public_model, exact_model, deployment,
	 route_depth, attempts, status, failure_class, input_tokens, output_tokens,
	 cached_tokens, cost_micro_usd, cost_status, reserved_micro_usd, streamed,
	 first_token_ms, latency_ms, started_at, finished_at, exercise)`
	insertAttemptsHead = `INSERT INTO attempts
	(request_id, seq, deployment, failure_class, http_status, input_tokens,
	 output_tokens, cost_micro_usd, first_byte_ms, duration_ms, started_at)`
	onConflictSkip = ` ON CONFLICT (request_id) DO NOTHING`
)

func (s *Store) prepareMulti(ctx context.Context) error {
	for k := range sizes {
		for _, p := range []struct {
			dst  **sql.Stmt
			text string
		}{
			{&s.multiRequests[k], multiInsert(insertRequestsHead, requestColumns, 1<<k, onConflictSkip)},
			{&s.multiAttempts[k], multiInsert(insertAttemptsHead, attemptColumns, 1<<k, "")},
		} {
			st, err := s.w.PrepareContext(ctx, p.text)
			if err != nil {
				return fmt.Errorf("ledger/sqlite: prepare: %w", err)
			}
			*p.dst = st
		}
	}
	return nil
}

// chunk is how many of left rows the next statement takes (the largest
// power of two up to maxRows), and that statement's index.
func chunk(left int) (n, k int) {
	k = min(bits.Len(uint(left))-1, sizes-1)
	return 1 << k, k
}

// txStmts binds a table's statements to one transaction, lazily.
type txStmts struct {
	tx  *sql.Tx
	src *rowStmts
	got rowStmts
}

func (t *txStmts) stmt(ctx context.Context, k int) *sql.Stmt {
	if t.got[k] == nil {
		t.got[k] = t.tx.StmtContext(ctx, t.src[k])
	}
	return t.got[k]
}

// attemptRow is one attempt to insert, with its settlement's request id.
type attemptRow struct {
	id string
	a  *ledger.Attempt
}

// settleMulti inserts the settlements' request rows, then their attempt
// rows, many per statement. It reports dup when some request was settled
// already (its row existed): the caller then undoes the lot and settles one
// by one, so that a settled request is skipped whole, attempts included.
// The caller holds the store's only writer connection (a transaction), so
// the reused argument buffers are its alone.
func (s *Store) settleMulti(ctx context.Context, tx *sql.Tx, sets []ledger.Settlement) (dup bool, err error) {
	reqs := txStmts{tx: tx, src: &s.multiRequests}
	atts := s.attRows[:0]
	args := s.args[:0]
	defer func() {
		clear(args[:cap(args)]) // drop references for the GC
		s.args = args[:0]
		clear(atts)
		s.attRows = atts[:0]
	}()
	for left := sets; len(left) > 0; {
		n, k := chunk(len(left))
		args = args[:0]
		for i := range left[:n] {
			r := &left[i].Request
			args = append(args, r.RequestID, r.Org, r.Team, r.KeyID, r.PublicModel,
				r.ExactModel, r.Deployment, r.RouteDepth, r.Attempts, r.Status, r.FailureClass,
				r.InputTokens, r.OutputTokens, r.CachedTokens, r.CostMicroUSD, r.CostStatus,
				r.ReservedMicroUSD, r.Streamed, r.FirstTokenMS, r.LatencyMS,
				micros(r.StartedAt), micros(r.FinishedAt), r.Exercise)
			for j := range left[i].Attempts {
				atts = append(atts, attemptRow{r.RequestID, &left[i].Attempts[j]})
			}
		}
		res, err := reqs.stmt(ctx, k).ExecContext(ctx, args...)
		if err != nil {
			return false, classify("request", err)
		}
		if got, err := res.RowsAffected(); err != nil {
			return false, classify("request", err)
		} else if got != int64(n) {
			return true, nil
		}
		left = left[n:]
	}
	stmts := txStmts{tx: tx, src: &s.multiAttempts}
	for left := atts; len(left) > 0; {
		n, k := chunk(len(left))
		args = args[:0]
		for _, ar := range left[:n] {
			a := ar.a
			args = append(args, ar.id, a.Seq, a.Deployment, a.FailureClass,
				a.HTTPStatus, a.InputTokens, a.OutputTokens, a.CostMicroUSD, a.FirstByteMS,
				a.DurationMS, micros(a.StartedAt))
		}
		if _, err := stmts.stmt(ctx, k).ExecContext(ctx, args...); err != nil {
			return false, classify("attempt", err)
		}
		left = left[n:]
	}
	return false, nil
}
