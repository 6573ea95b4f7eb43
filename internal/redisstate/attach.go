package redisstate

import (
	"github.com/spillway-gw/spillway/internal/health"
	"github.com/spillway-gw/spillway/internal/idempotency"
	"github.com/spillway-gw/spillway/internal/metrics"
	"github.com/spillway-gw/spillway/internal/sticky"
)

// Attach shares one replica's health, idempotency keys and conversation
// pins (each may be nil: not shared). pins must come from
// sticky.NewShared(capacity, clock, c.PinSeed()).
func (c *Client) Attach(h *health.Tracker, idem *idempotency.Store, pins *sticky.Store) {
	if h != nil {
		c.MirrorHealth(h)
	}
	if idem != nil {
		c.ShareIdempotency(idem)
	}
	if pins != nil {
		c.SharePins(pins)
	}
}

// MetricsStats is Stats for the metrics package.
func (c *Client) MetricsStats() metrics.SharedStats {
	s := c.Stats()
	return metrics.SharedStats{Up: s.Up, Errors: s.Errors, Fallbacks: s.Fallbacks, Dropped: s.Dropped}
}
