package server

import (
	"net/http"
	"time"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/engine"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/health"
	"github.com/spillway-gw/spillway/internal/route"
)

// healthGate admits engine attempts through the health tracker and feeds
// each attempt's outcome back to it.
type healthGate struct{ t *health.Tracker }

func (g healthGate) Admit(r *engine.Rung) (func(*engine.Attempt), string) {
	tok, skip := g.t.Begin(r.Deployment.ID, r.Forced)
	if skip != "" {
		return nil, skip
	}
	return func(a *engine.Attempt) {
		o := health.Outcome{FirstToken: a.FirstToken}
		if a.Err != nil {
			o.Class, o.RetryAfter = a.Err.Class, a.Err.RetryAfter
		}
		g.t.Done(tok, o)
	}, ""
}

// isHealthSkip reports whether a plan's drop reason comes from health.
func isHealthSkip(reason string) bool {
	switch reason {
	case health.SkipCircuitOpen, health.SkipThrottled, health.SkipSuppressed, health.SkipCooldown, health.SkipProbeInFlight:
		return true
	}
	return false
}

// healthWait is the error for a plan whose rungs health alone refused and
// whose last-resort probe is not allowed now: when to come back. Nil when
// some rung was dropped by a gate instead.
func (s *Server) healthWait(pl *route.Plan) *failure.Public {
	var ids []string
	for _, c := range pl.Candidates {
		if isHealthSkip(c.Reason) {
			ids = append(ids, c.Deployment.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	wait, throttledOnly := time.Duration(0), true
	for i, id := range ids {
		w, only := s.health.Wait(id)
		if i == 0 || w < wait {
			wait = w
		}
		throttledOnly = throttledOnly && only
	}
	if wait < time.Second {
		wait = time.Second
	}
	if throttledOnly {
		return &failure.Public{Status: http.StatusTooManyRequests, Code: "rate_limit_exceeded", RetryAfter: wait,
			Message: "every provider of this model is rate limiting; retry after the delay in the Retry-After header"}
	}
	return &failure.Public{Status: http.StatusServiceUnavailable, Code: "no_healthy_deployment", RetryAfter: wait,
		Message: "every provider of this model is failing right now; retry after the delay in the Retry-After header"}
}

// syncHealth makes the tracker follow the snapshot's deployments.
func (s *Server) syncHealth(snap *catalog.Snapshot) {
	policies := map[string]health.Policy{}
	for _, d := range snap.Deployments() {
		policies[d.ID] = healthPolicy(d)
	}
	s.health.Sync(policies)
}

// healthPolicy converts a deployment's configured policy.
func healthPolicy(d *catalog.Deployment) health.Policy {
	h := &d.Health
	return health.Policy{
		FailureThreshold:  h.FailureThreshold,
		OpenFor:           h.OpenFor.D(),
		RecoverySuccesses: h.RecoverySuccesses,
		ThrottleFor:       h.ThrottleFor.D(),
		MaxThrottle:       h.MaxThrottle.D(),
		SuppressFor:       h.SuppressFor.D(),
		Window:            h.Window.D(),
		MinSamples:        h.MinSamples,
		MaxErrorRate:      h.MaxErrorRate,
		MaxFirstTokenP95:  h.MaxFirstTokenP95.D(),
		Cooldown:          h.Cooldown.D(),
		LastResortEvery:   h.LastResortEvery.D(),
	}
}
