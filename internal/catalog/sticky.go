package catalog

import (
	"strconv"
	"time"
)

// This file holds two route behaviours that order a route's kept rungs:
// sticky conversations and ranking.

// Sticky pins a conversation to the rung that served its last turn (and
// so its first), so that its later turns go there first while the rung is
// kept by every gate and healthy: the provider's prompt cache for the
// conversation stays warm and its voice stays the same. The other rungs
// keep their order behind it; a pinned rung that is dropped is skipped
// like any other, and the rung that serves instead holds the pin from
// then on.
type Sticky struct {
	// Enabled turns stickiness on or off for the route. Default (unset):
	// on when the route's pool has more than one deployment (a one-rung
	// route has nothing to pin).
	Enabled *bool `yaml:"enabled,omitempty" json:"enabled,omitempty"`
	// TTL is how long a pin lives after the conversation's last served
	// turn. Default 30m; at most 24h.
	TTL Duration `yaml:"ttl,omitempty" json:"ttl,omitempty"`
}

// Route.Rank values.
const (
	// RankConfigured keeps the pool's order (the default).
	RankConfigured = "configured"
	// RankCostLatency orders the kept rungs by cache-adjusted cost, then
	// by observed first-token latency; ties keep the pool's order.
	RankCostLatency = "cost_latency"
)

// Bounds and defaults of stickiness.
const (
	DefaultStickyTTL          = 30 * time.Minute
	MaxStickyTTL              = 24 * time.Hour
	DefaultStickyCapacity     = 100_000
	MaxStickyCapacity         = 10_000_000
	DefaultConversationHeader = "X-Spillway-Conversation"
)

// applyStickyDefaults fills the defaults of stickiness and ranking.
func (c *Config) applyStickyDefaults() {
	setDefault(&c.Routing.ConversationHeader, DefaultConversationHeader)
	setDefault(&c.Routing.StickyCapacity, DefaultStickyCapacity)
	for i := range c.Routes {
		r := &c.Routes[i]
		setDefault(&r.Sticky.TTL, Duration(DefaultStickyTTL))
		setDefault(&r.Rank, RankConfigured)
	}
}

// validateSticky checks the bounds of stickiness and the rank of every
// route.
func (c *Config) validateSticky(p *problems) {
	if n := c.Routing.StickyCapacity; n < 0 || n > MaxStickyCapacity {
		p.add("routing.sticky_capacity", 0, "%d is outside 1..%d (the conversation pins kept, about 60 bytes each)", n, MaxStickyCapacity)
	}
	if h := c.Routing.ConversationHeader; h != "" && !headerRE.MatchString(h) {
		p.add("routing.conversation_header", 0, "%q is not an HTTP header name", h)
	}
	for i := range c.Routes {
		r := &c.Routes[i]
		at := "routes[" + strconv.Itoa(i) + "]"
		if ttl := r.Sticky.TTL; ttl < 0 || ttl.D() > MaxStickyTTL {
			p.add(at+".sticky.ttl", r.Line, "%s: must be positive and at most 24h", ttl.D())
		}
		switch r.Rank {
		case "", RankConfigured, RankCostLatency:
		default:
			p.add(at+".rank", r.Line, "%q is not configured or cost_latency", r.Rank)
		}
	}
}

// resolveSticky fills rr's stickiness and rank from route r.
func resolveSticky(rr *ResolvedRoute, r *Route) {
	on := len(rr.Deployments) > 1
	if e := r.Sticky.Enabled; e != nil {
		on = on && *e
	}
	if on {
		rr.StickyTTL = r.Sticky.TTL
		if rr.StickyTTL == 0 {
			rr.StickyTTL = Duration(DefaultStickyTTL)
		}
	}
	rr.RankCostLatency = r.Rank == RankCostLatency
}

// Sticky reports whether the route pins conversations.
func (rr *ResolvedRoute) Sticky() bool { return rr.StickyTTL > 0 }

// KeepsPins reports whether the route records which rung served each
// conversation: for stickiness, and for ranking's cache-adjusted cost.
func (rr *ResolvedRoute) KeepsPins() bool {
	return len(rr.Deployments) > 1 && (rr.StickyTTL > 0 || rr.RankCostLatency)
}

// PinTTL is how long a pin recorded on the route lives: the sticky TTL,
// or the default one on a ranked route that is not sticky.
func (rr *ResolvedRoute) PinTTL() time.Duration {
	if rr.StickyTTL > 0 {
		return rr.StickyTTL.D()
	}
	return DefaultStickyTTL
}
