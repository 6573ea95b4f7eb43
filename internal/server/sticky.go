package server

import (
	"net/http"
	"time"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/engine"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/route"
	"github.com/spillway-gw/spillway/internal/sticky"
)

// This file is the server's side of sticky conversations and ranking:
// reading the conversation header, recording which rung served, and what
// explain shows of both. The decisions are route's.

// nowClock is Options.Now as a clock.
type nowClock func() time.Time

func (f nowClock) Now() time.Time { return f() }

// newPins is the server's conversation pins, bounded by the config it
// starts with (routing.sticky_capacity is read at start-up).
func newPins(opts *Options) *sticky.Store {
	return sticky.New(opts.Catalog.Load().Config().Routing.StickyCapacity, nowClock(opts.Now))
}

// conversation is the caller's conversation id from the configured
// header ("" when not sent); a longer id than the bound is refused rather
// than silently not followed.
func conversation(r *http.Request, snap *catalog.Snapshot) (string, *failure.Public) {
	name := snap.Config().Routing.ConversationHeader
	if name == "" {
		return "", nil
	}
	v := r.Header.Get(name)
	if len(v) > sticky.MaxHeaderBytes {
		return "", failure.BadRequest(name, "the %s header is %d bytes; a conversation id may have at most %d", name, len(v), sticky.MaxHeaderBytes)
	}
	return v, nil
}

// recordPin pins the request's conversation to the rung that served it,
// once one did: the next turn goes there first while it is kept and
// healthy. Nothing is recorded when no rung served.
func (s *Server) recordPin(pl *route.Plan, p *engine.Plan, res *engine.Result) {
	if pl == nil || !pl.Keyed || res == nil || res.Served < 0 || res.Served >= len(p.Rungs) {
		return
	}
	s.pins.Record(pl.Conversation, p.Rungs[res.Served].Deployment.ID, pl.Route.PinTTL())
}

// ExplainedRank is what ranking saw of a kept rung.
type ExplainedRank struct {
	// CostMicroUSD is the request's cache-adjusted cost on the rung (the
	// prompt estimate at the input price, or at the cached input price
	// where CachedInput, plus the output ceiling at the output price); -1
	// when the rung cannot be priced (it ranks last).
	CostMicroUSD int64 `json:"cost_micro_usd"`
	// CachedInput marks the rung that holds the conversation's prompt
	// cache.
	CachedInput bool `json:"cached_input,omitempty"`
	// FirstTokenP50MS is the rung's observed median first-token latency;
	// absent while it has no sample (it then ranks as the fastest).
	FirstTokenP50MS *int64 `json:"first_token_p50_ms,omitempty"`
}

// explainOrder adds the sticky and rank decisions of pl to ex.
func explainOrder(ex *Explanation, pl *route.Plan) {
	ex.Pin, ex.Sticky = pl.Pin, pl.Sticky
	if len(pl.Ranking) > 0 {
		ex.Rank = catalog.RankCostLatency
	}
	for i := range ex.Rungs {
		r := &ex.Rungs[i]
		r.Sticky = r.Kept && r.Deployment == pl.Sticky
		rk, ok := pl.RankOf(r.Deployment)
		if !ok {
			continue
		}
		er := &ExplainedRank{CostMicroUSD: rk.CostMicroUSD, CachedInput: rk.CachedInput}
		if d := rk.FirstTokenP50; d > 0 {
			ms := d.Milliseconds()
			er.FirstTokenP50MS = &ms
		}
		r.Rank = er
	}
}
