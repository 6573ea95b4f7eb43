package postgres

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/ledger/sqlstore"
)

// A batch is three statements, each taking its rows as arrays (unnest), so
// that a batch of 2,000 settlements costs what three statements cost, not
// 2,000 round trips; they are pipelined in one implicit transaction (one
// round trip once the statements are prepared on the connection).
const (
	sqlReserve = `INSERT INTO reservations
	(request_id, key_id, org, team, public_model, amount_micro, created_at, owner)
	SELECT *, $8::text FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bigint[])
	ON CONFLICT (request_id) DO NOTHING`

	// sqlSettle inserts the request rows, skipping those already settled,
	// and the attempt rows of exactly the requests it inserted (the
	// RETURNING set): a settled request is skipped whole, attempts
	// included. From that same set, with figures bounded as
	// ledger.Request.Bounded says, it adds to the daily aggregates and the
	// spend totals (migration 7): a replay is never counted twice. Each
	// upsert takes its rows in key order, so that replicas' concurrent
	// batches lock shared aggregate rows in one order (no deadlock).
	sqlSettle = `WITH ins AS (
	INSERT INTO requests
	(request_id, org, team, key_id, public_model, exact_model, deployment,
	 route_depth, attempts, status, failure_class, input_tokens, output_tokens,
	 cached_tokens, cost_micro_usd, cost_status, reserved_micro_usd, streamed,
	 first_token_ms, latency_ms, started_at, finished_at, exercise)
	SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
	 $8::int[], $9::int[], $10::text[], $11::text[], $12::bigint[], $13::bigint[],
	 $14::bigint[], $15::bigint[], $16::text[], $17::bigint[], $18::boolean[],
	 $19::bigint[], $20::bigint[], $21::bigint[], $22::bigint[], $23::boolean[])
	ON CONFLICT (request_id) DO NOTHING
	RETURNING request_id, org, team, key_id, public_model, deployment, route_depth, attempts, status,
	 input_tokens, output_tokens, cached_tokens, cost_micro_usd, reserved_micro_usd, started_at, finished_at
), att AS (
	INSERT INTO attempts
	(request_id, seq, deployment, failure_class, http_status, input_tokens,
	 output_tokens, cost_micro_usd, first_byte_ms, duration_ms, started_at)
	SELECT a.* FROM unnest($24::text[], $25::int[], $26::text[], $27::text[], $28::int[], $29::bigint[],
	 $30::bigint[], $31::bigint[], $32::bigint[], $33::bigint[], $34::bigint[])
	AS a (request_id, seq, deployment, failure_class, http_status, input_tokens,
	 output_tokens, cost_micro_usd, first_byte_ms, duration_ms, started_at)
	WHERE a.request_id IN (SELECT request_id FROM ins)
), b AS (
	SELECT started_at / 86400000000 AS day, finished_at / 86400000000 AS finished_day,
	 org, team, key_id, public_model, deployment, status, route_depth, attempts,
	 CASE WHEN input_tokens BETWEEN 0 AND 100000000 THEN input_tokens ELSE 0 END AS input_tokens,
	 CASE WHEN output_tokens BETWEEN 0 AND 100000000 THEN output_tokens ELSE 0 END AS output_tokens,
	 CASE WHEN cached_tokens BETWEEN 0 AND 100000000 THEN cached_tokens ELSE 0 END AS cached_tokens,
	 CASE WHEN cost_micro_usd BETWEEN 0 AND 10000000000000 THEN cost_micro_usd
	  WHEN reserved_micro_usd BETWEEN 0 AND 10000000000000 THEN reserved_micro_usd ELSE 0 END AS cost
	FROM ins
), daily AS (
	INSERT INTO usage_daily
	(day, finished_day, org, team, key_id, public_model, deployment, requests, succeeded, failed,
	 failed_over, attempts, input_tokens, output_tokens, cached_tokens, cost_micro_usd)
	SELECT day, finished_day, org, team, key_id, public_model, deployment, COUNT(*),
	 COUNT(*) FILTER (WHERE status = 'ok'), COUNT(*) FILTER (WHERE status IN ('failed', 'interrupted')),
	 COUNT(*) FILTER (WHERE route_depth >= 0 AND (route_depth > 0 OR attempts > 1)),
	 SUM(attempts), SUM(input_tokens), SUM(output_tokens), SUM(cached_tokens), SUM(cost)
	FROM b GROUP BY 1, 2, 3, 4, 5, 6, 7 ORDER BY 1, 2, 3, 4, 5, 6, 7
	ON CONFLICT (day, finished_day, org, team, key_id, public_model, deployment) DO UPDATE SET
	 requests = usage_daily.requests + EXCLUDED.requests, succeeded = usage_daily.succeeded + EXCLUDED.succeeded,
	 failed = usage_daily.failed + EXCLUDED.failed, failed_over = usage_daily.failed_over + EXCLUDED.failed_over,
	 attempts = usage_daily.attempts + EXCLUDED.attempts, input_tokens = usage_daily.input_tokens + EXCLUDED.input_tokens,
	 output_tokens = usage_daily.output_tokens + EXCLUDED.output_tokens,
	 cached_tokens = usage_daily.cached_tokens + EXCLUDED.cached_tokens,
	 cost_micro_usd = usage_daily.cost_micro_usd + EXCLUDED.cost_micro_usd
)
INSERT INTO spend_totals (scope, id, total_micro_usd)
SELECT s.scope, s.id, SUM(b.cost) FROM b
CROSS JOIN LATERAL (VALUES ('org', b.org), ('team', b.team), ('key', b.key_id), ('model', b.public_model)) AS s (scope, id)
WHERE s.id <> '' AND b.cost <> 0 GROUP BY 1, 2 ORDER BY 1, 2
ON CONFLICT (scope, id) DO UPDATE SET total_micro_usd = spend_totals.total_micro_usd + EXCLUDED.total_micro_usd`

	// sqlRepairPending lists settlements with a figure out of bounds for
	// Repair (queued only when a batch has one).
	sqlRepairPending = `INSERT INTO repair_pending (request_id) SELECT unnest($1::text[])
	ON CONFLICT (request_id) DO NOTHING`

	// sqlCloseReservations closes every open reservation whose request is
	// settled, whichever batch brought either; it runs over the open
	// reservations only (the reservations_open partial index): the
	// requests in flight. $1 is now, $2 the stored value of a zero
	// FinishedAt.
	sqlCloseReservations = `UPDATE reservations AS v
	SET settled_at = CASE WHEN r.finished_at = $2 THEN $1 ELSE r.finished_at END
	FROM requests AS r
	WHERE v.settled_at IS NULL AND v.released_at IS NULL AND r.request_id = v.request_id`
)

// WriteBatch writes b in one transaction: reservations first (a repeated
// reservation is ignored), then each settlement's request row and its
// attempt rows, then the closing of every open reservation whose request
// is settled. A settlement whose request id is already settled, in the
// store or earlier in b, is skipped whole, attempts included. Attempt rows
// are keyed by the settlement's request id (Attempt.RequestID is not
// read). A constraint violation fails the whole batch with
// ledger.ErrRejected; any other failure (the database unreachable, the
// batch's timeout) is the store's, and retrying the batch is safe. b is
// not retained.
func (s *Store) WriteBatch(ctx context.Context, b *ledger.Batch) error {
	if len(b.Reservations)+len(b.Settlements) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.WriteTimeout)
	defer cancel()
	var pb pgx.Batch
	if len(b.Reservations) > 0 {
		pb.Queue(sqlReserve, append(reservationArgs(b.Reservations), b.Owner)...)
	}
	if len(b.Settlements) > 0 {
		pb.Queue(sqlSettle, settlementArgs(b.Settlements)...)
		var repair []string
		for i := range b.Settlements {
			if b.Settlements[i].NeedsRepair() {
				repair = append(repair, b.Settlements[i].Request.RequestID)
			}
		}
		if len(repair) > 0 {
			pb.Queue(sqlRepairPending, repair)
		}
	}
	pb.Queue(sqlCloseReservations, micros(s.now()), micros(time.Time{}))
	br := s.pool.SendBatch(ctx, &pb)
	for range pb.Len() {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return classify("batch", err)
		}
	}
	if err := br.Close(); err != nil {
		return classify("batch", err)
	}
	return nil
}

func reservationArgs(rs []ledger.Reservation) []any {
	n := len(rs)
	var (
		id, key, org, team, model = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		amount, created           = make([]int64, n), make([]int64, n)
	)
	for i := range rs {
		r := &rs[i]
		id[i], key[i], org[i], team[i], model[i] = r.RequestID, r.KeyID, r.Org, r.Team, r.PublicModel
		amount[i], created[i] = r.AmountMicro, micros(r.CreatedAt)
	}
	return []any{id, key, org, team, model, amount, created}
}

// requestCols and attemptCols hold one settlement batch's columns.
type requestCols struct {
	id, org, team, key, model, exact, dep []string
	depth, attempts                       []int32
	status, class                         []string
	in, out, cached, cost                 []int64
	costStatus                            []string
	reserved                              []int64
	streamed                              []bool
	firstToken, latency, started, done    []int64
	exercise                              []bool
}

type attemptCols struct {
	id                                          []string
	seq                                         []int32
	dep, class                                  []string
	status                                      []int32
	in, out, cost, firstByte, duration, started []int64
}

// settlementArgs lays the settlements out as sqlSettle's 34 arrays. A
// request id repeated in the batch keeps its first settlement only (the
// store's rule: the first settlement of a request is the one kept).
func settlementArgs(sets []ledger.Settlement) []any {
	var rc requestCols
	var ac attemptCols
	seen := make(map[string]struct{}, len(sets))
	for i := range sets {
		r := &sets[i].Request
		if _, dup := seen[r.RequestID]; dup {
			continue
		}
		seen[r.RequestID] = struct{}{}
		rc.id = append(rc.id, r.RequestID)
		rc.org = append(rc.org, r.Org)
		rc.team = append(rc.team, r.Team)
		rc.key = append(rc.key, r.KeyID)
		rc.model = append(rc.model, r.PublicModel)
		rc.exact = append(rc.exact, r.ExactModel)
		rc.dep = append(rc.dep, r.Deployment)
		rc.depth = append(rc.depth, int32(r.RouteDepth))
		rc.attempts = append(rc.attempts, int32(r.Attempts))
		rc.status = append(rc.status, r.Status)
		rc.class = append(rc.class, r.FailureClass)
		rc.in = append(rc.in, int64(r.InputTokens))
		rc.out = append(rc.out, int64(r.OutputTokens))
		rc.cached = append(rc.cached, int64(r.CachedTokens))
		rc.cost = append(rc.cost, r.CostMicroUSD)
		rc.costStatus = append(rc.costStatus, r.CostStatus)
		rc.reserved = append(rc.reserved, r.ReservedMicroUSD)
		rc.streamed = append(rc.streamed, r.Streamed)
		rc.firstToken = append(rc.firstToken, r.FirstTokenMS)
		rc.latency = append(rc.latency, r.LatencyMS)
		rc.started = append(rc.started, micros(r.StartedAt))
		rc.done = append(rc.done, micros(r.FinishedAt))
		rc.exercise = append(rc.exercise, r.Exercise)
		for j := range sets[i].Attempts {
			a := &sets[i].Attempts[j]
			ac.id = append(ac.id, r.RequestID)
			ac.seq = append(ac.seq, int32(a.Seq))
			ac.dep = append(ac.dep, a.Deployment)
			ac.class = append(ac.class, a.FailureClass)
			ac.status = append(ac.status, int32(a.HTTPStatus))
			ac.in = append(ac.in, int64(a.InputTokens))
			ac.out = append(ac.out, int64(a.OutputTokens))
			ac.cost = append(ac.cost, a.CostMicroUSD)
			ac.firstByte = append(ac.firstByte, a.FirstByteMS)
			ac.duration = append(ac.duration, a.DurationMS)
			ac.started = append(ac.started, micros(a.StartedAt))
		}
	}
	// unnest needs arrays, not NULLs, for a batch without attempts.
	if ac.id == nil {
		ac = attemptCols{id: []string{}, seq: []int32{}, dep: []string{}, class: []string{}, status: []int32{},
			in: []int64{}, out: []int64{}, cost: []int64{}, firstByte: []int64{}, duration: []int64{}, started: []int64{}}
	}
	return []any{rc.id, rc.org, rc.team, rc.key, rc.model, rc.exact, rc.dep,
		rc.depth, rc.attempts, rc.status, rc.class, rc.in, rc.out,
		rc.cached, rc.cost, rc.costStatus, rc.reserved, rc.streamed,
		rc.firstToken, rc.latency, rc.started, rc.done, rc.exercise,
		ac.id, ac.seq, ac.dep, ac.class, ac.status, ac.in,
		ac.out, ac.cost, ac.firstByte, ac.duration, ac.started}
}

// RecoverOpen releases every reservation of owner's (or of no owner, or
// older than ledger.OrphanAfter) that is neither settled nor released (the
// gateway died between reserving and settling) and returns them, oldest
// first. Call it at start-up, before owner's Writer runs: a reservation of
// its still in flight would be released too. Other replicas' recent
// reservations are left alone. A second call returns nothing.
func (s *Store) RecoverOpen(ctx context.Context, owner string) ([]ledger.Released, error) {
	out, err := sqlstore.List(ctx, querier{s.pool}, sqlstore.ScanReleased, `UPDATE reservations SET released_at = $1
	WHERE settled_at IS NULL AND released_at IS NULL AND (owner IN ($2, '') OR created_at < $3)
	RETURNING `+sqlstore.ReleasedColumns,
		micros(s.now()), owner, micros(s.now().Add(-ledger.OrphanAfter)))
	if err != nil {
		return nil, fmt.Errorf("ledger/postgres: recover: %w", err)
	}
	slices.SortFunc(out, func(a, b ledger.Released) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		if a.RequestID < b.RequestID {
			return -1
		}
		if a.RequestID > b.RequestID {
			return 1
		}
		return 0
	})
	return out, nil
}
