package server_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the driver the ledger uses; tests read its file directly

	"github.com/spillway-gw/spillway/internal/catalog"
)

// reqRow is a settled request row as the ledger holds it.
type reqRow struct {
	status, deployment, failureClass, costStatus string
	attempts, routeDepth, in, out, cached        int
	cost, reserved                               int64
}

// attRow is an attempt row.
type attRow struct {
	deployment, failureClass string
	httpStatus, in, out      int
	cost                     int64
}

// db opens the ledger's file read only, once every settlement queued so
// far has reached it (the ledger ingests its journal in the background).
func (h *harness) db(t testing.TB) *sql.DB {
	t.Helper()
	if err := h.writer.Sync(context.Background()); err != nil {
		t.Fatalf("syncing the ledger: %v", err)
	}
	db, err := sql.Open("sqlite", "file:"+h.dbPath+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// rows returns how many settled rows a request id has, and the first.
func (h *harness) rows(t testing.TB, id string) (int, reqRow, []attRow) {
	t.Helper()
	db := h.db(t)
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM requests WHERE request_id = ?`, id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	var r reqRow
	if n > 0 {
		err := db.QueryRow(`SELECT status, deployment, failure_class, cost_status, attempts, route_depth,
			input_tokens, output_tokens, cached_tokens, cost_micro_usd, reserved_micro_usd FROM requests WHERE request_id = ?`, id).
			Scan(&r.status, &r.deployment, &r.failureClass, &r.costStatus, &r.attempts, &r.routeDepth, &r.in, &r.out, &r.cached, &r.cost, &r.reserved)
		if err != nil {
			t.Fatal(err)
		}
	}
	rs, err := db.Query(`SELECT deployment, failure_class, http_status, input_tokens, output_tokens, cost_micro_usd FROM attempts WHERE request_id = ? ORDER BY seq`, id)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var as []attRow
	for rs.Next() {
		var a attRow
		if err := rs.Scan(&a.deployment, &a.failureClass, &a.httpStatus, &a.in, &a.out, &a.cost); err != nil {
			t.Fatal(err)
		}
		as = append(as, a)
	}
	return n, r, as
}

// waitRow waits for an asynchronously settled row (a caller who left).
func (h *harness) waitRow(t testing.TB, id string) reqRow {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, r, _ := h.rows(t, id)
		if n == 1 {
			return r
		}
		if n > 1 || time.Now().After(deadline) {
			t.Fatalf("request %s has %d settled rows", id, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// costOf is what the harness's deployments charge for tokens.
func (h *harness) costOf(id string, in, cached, out int) int64 {
	for i := range h.cfg.Deployments {
		if d := &h.cfg.Deployments[i]; d.ID == id {
			return d.CostMicroUSD(in, cached, 0, out)
		}
	}
	return -1
}

var _ = catalog.FundingBYOK
