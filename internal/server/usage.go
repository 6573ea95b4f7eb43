package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/ledger"
)

// Bounds of a usage report's two waits (Options.UsageWait sets the first).
const (
	// defaultUsageSyncWait bounds the wait for the ledger's journal to
	// reach the store before a report: an ingest takes milliseconds when
	// the store answers, and never ends while it does not.
	defaultUsageSyncWait = 3 * time.Second
	// usageQueryWait bounds the store's query itself (a year of a large
	// ledger grouped by day takes seconds, not minutes).
	usageQueryWait = 60 * time.Second
)

// usageRows flushes the ledger's journal into the store and queries it,
// each within its bound. A store that does not answer (PostgreSQL down,
// the backlog not ingested in time) is a 503 ledger_unavailable with
// Retry-After, never a report that silently lacks the latest requests; a
// query the store finds invalid is a 400.
func (s *Server) usageRows(ctx context.Context, q ledger.UsageQuery) ([]ledger.UsageRow, *failure.Public) {
	if s.opts.Ledger != nil {
		wait := s.opts.UsageWait
		if wait <= 0 {
			wait = defaultUsageSyncWait
		}
		sctx, cancel := context.WithTimeout(ctx, wait)
		err := s.opts.Ledger.Sync(sctx)
		cancel()
		if err != nil {
			s.opts.Log.Warn("usage report refused: the ledger's store did not take the journal's settlements in time", "wait", wait.String(), "err", err)
			return nil, errUsageUnavailable("the ledger's store has not taken the latest settlements (they are safe in this replica's journal)")
		}
	}
	qctx, cancel := context.WithTimeout(ctx, usageQueryWait)
	defer cancel()
	rows, err := s.opts.Store.Usage(qctx, q)
	switch {
	case err == nil:
		return rows, nil
	case errors.Is(err, ledger.ErrInvalidQuery):
		return nil, failure.BadRequest("", "%v", err)
	}
	s.opts.Log.Warn("usage report failed", "err", err)
	return nil, errUsageUnavailable("the ledger's store did not answer the usage query")
}

// errUsageUnavailable is a usage report the ledger cannot give now.
func errUsageUnavailable(why string) *failure.Public {
	return &failure.Public{Status: http.StatusServiceUnavailable, Code: "ledger_unavailable", RetryAfter: 5 * time.Second,
		Message: "usage is unavailable right now: " + why + "; retry shortly"}
}
