package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/spillway-gw/spillway/internal/budget"
	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/health"
	"github.com/spillway-gw/spillway/internal/idempotency"
	"github.com/spillway-gw/spillway/internal/redisstate"
	"github.com/spillway-gw/spillway/internal/server"
	"github.com/spillway-gw/spillway/internal/sticky"
)

// openSharedState connects this replica to shared_state's Redis and plugs
// it into so: health, idempotency keys (with
// shared_state.idempotency_when_down), conversation pins, rate limits and
// budgets (with shared_state.budgets_when_down), and the shared-state
// metrics. Driver none: nothing changes, and the client is
// nil. An unreachable Redis is not an error (the replica starts on its
// local fallbacks and shares once Redis answers); an unset URL variable
// is, named on its config line.
func openSharedState(cfg *catalog.Config, cfgFile string, log *slog.Logger, so *server.Options) (*redisstate.Client, error) {
	sc := &cfg.SharedState
	if !sc.On() {
		return nil, nil
	}
	url, ps := cfg.SharedStateURL(cfgFile, os.LookupEnv)
	if err := ps.Err(); err != nil {
		return nil, err
	}
	c, err := redisstate.Open(redisstate.Options{URL: url, Prefix: sc.KeyPrefix, Timeout: sc.Timeout.D(),
		RetryEvery: sc.RetryEvery.D(), ProbeLease: sc.ProbeLease.D(), Log: log})
	if err != nil {
		return nil, fmt.Errorf("shared_state: %w (from $%s)", err, sc.URLEnv)
	}
	if so.Health == nil {
		so.Health = health.NewTracker(nil)
	}
	if so.Idempotency == nil {
		so.Idempotency = idempotency.New(idempotency.Options{})
	}
	if so.Sticky == nil {
		so.Sticky = sticky.NewShared(cfg.Routing.StickyCapacity, nil, c.PinSeed())
	}
	c.Attach(so.Health, so.Idempotency, so.Sticky)
	if sc.IdempotencyWhenDown == catalog.IdempotencyDownLocal {
		so.Idempotency.SetDownPolicy(idempotency.DownLocal)
	}
	if so.Budget != nil {
		p := budget.DownPolicy{}
		if sc.BudgetsWhenDown == catalog.BudgetsDownAllowance {
			p.Allowance = sc.DownAllowance
		}
		c.ShareBudgets(so.Budget, p)
	}
	so.SharedStats = c.MetricsStats
	log.Info("shared state: replicas share health, idempotency keys, conversation pins, rate limits and budgets through redis",
		"prefix", sc.KeyPrefix, "budgets_when_down", sc.BudgetsWhenDown, "idempotency_when_down", sc.IdempotencyWhenDown, "up", c.Up())
	return c, nil
}
