package route

import (
	"cmp"
	"slices"
	"time"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/sticky"
)

// This file orders the rungs the gates kept: by the route's rank, then
// the conversation's pinned rung first. Neither ever brings back a rung a
// gate or health dropped: ordering comes after eligibility.

// Sticky is what planning reads of conversation pins (a *sticky.Store).
// Both methods only read: explain plans with them too, and the server
// records a pin only once a rung has served.
type Sticky interface {
	// Key derives the request's conversation key from the conversation
	// header's value, else from its system prompt and first user turn.
	Key(model, header string, req *canonical.Request) (sticky.Key, bool)
	// Pinned is the deployment that served the conversation's last turn.
	Pinned(k sticky.Key) (deploymentID string, ok bool)
}

// FirstTokens is what ranking reads of health when the Health view has
// it (a *health.Tracker does): a deployment's median first-token latency
// over its window; ok is false while it has none. Without it, ranking
// orders by cost alone.
type FirstTokens interface {
	FirstTokenP50(id string) (time.Duration, bool)
}

// Ranked is one kept rung as ranking saw it.
type Ranked struct {
	Deployment *catalog.Deployment
	// CostMicroUSD is the request's cache-adjusted cost on the rung: the
	// prompt estimate (Input.InputTokens) at the input price, or at the
	// cached input price on the rung holding the conversation's prompt
	// cache, plus the output ceiling the reservation counts at the output
	// price; -1 when the rung has no price or no output ceiling.
	CostMicroUSD int64
	// CachedInput is true on the rung that served the conversation's last
	// turn, and so holds its prompt cache.
	CachedInput bool
	// FirstTokenP50 is the rung's observed median first-token latency; 0
	// while it has no sample in its window (it then ranks as the fastest,
	// so that it is measured: a rung back from an outage would otherwise
	// never be tried again at equal cost).
	FirstTokenP50 time.Duration
}

// converse derives the request's conversation key and looks up its pin,
// on a route that keeps pins.
func (p *Plan) converse(in *Input) {
	if in.Sticky == nil || !p.Route.KeepsPins() {
		return
	}
	k, ok := in.Sticky.Key(in.Attrs.Model, in.Conversation, in.Req)
	if !ok {
		return
	}
	p.Conversation, p.Keyed = k, true
	p.Pin, _ = in.Sticky.Pinned(k)
}

// arrange orders the kept rungs of the route's pool (Order, in pool order
// as the gates left it, before any other rung is added): by the route's
// rank, then the pinned rung first. Stickiness overrides ranking. A pin derived from the prompt moves only a request
// that continues its conversation: single-turn requests sharing one
// prompt (a batch) are not held on the rung that served the first.
func (p *Plan) arrange(in *Input, h Health) {
	rr := p.Route
	if rr.RankCostLatency && len(p.Order) > 1 {
		p.rank(in, h)
	}
	if p.Pin != "" && rr.Sticky() && (in.Conversation != "" || sticky.Continues(in.Req)) {
		p.pinFirst()
	}
}

// pinFirst moves the pinned rung, when kept, to the front; the others
// keep their order.
func (p *Plan) pinFirst() {
	for i, d := range p.Order {
		if d.ID == p.Pin {
			copy(p.Order[1:i+1], p.Order[:i])
			p.Order[0] = d
			p.Sticky = d.ID
			return
		}
	}
}

// rank sorts Order in place by cache-adjusted cost, then observed
// first-token latency; ties keep the pool's order. It reuses the plan's
// Ranking, so a reused plan allocates nothing.
func (p *Plan) rank(in *Input, h Health) {
	ft, _ := h.(FirstTokens)
	for _, d := range p.Order {
		r := Ranked{Deployment: d, CostMicroUSD: -1, CachedInput: d.ID == p.Pin}
		if ceiling := d.OutputCeiling(in.Req.MaxTokens); d.Price != nil && ceiling > 0 {
			cached := 0
			if r.CachedInput {
				cached = in.InputTokens
			}
			r.CostMicroUSD = d.Price.CostMicroUSD(in.InputTokens, cached, 0, ceiling)
		}
		if ft != nil {
			r.FirstTokenP50, _ = ft.FirstTokenP50(d.ID)
		}
		p.Ranking = append(p.Ranking, r)
	}
	slices.SortStableFunc(p.Ranking, byCostLatency)
	for i := range p.Ranking {
		p.Order[i] = p.Ranking[i].Deployment
	}
}

// RankOf is what ranking saw of deployment id; ok is false when the plan
// was not ranked or id was not kept.
func (p *Plan) RankOf(id string) (r Ranked, ok bool) {
	for _, r := range p.Ranking {
		if r.Deployment.ID == id {
			return r, true
		}
	}
	return Ranked{}, false
}

// byCostLatency orders priced rungs before unpriced ones, then by cost,
// then by first-token latency.
func byCostLatency(a, b Ranked) int {
	if ua, ub := a.CostMicroUSD < 0, b.CostMicroUSD < 0; ua != ub {
		if ua {
			return 1
		}
		return -1
	}
	if c := cmp.Compare(a.CostMicroUSD, b.CostMicroUSD); c != 0 {
		return c
	}
	return cmp.Compare(a.FirstTokenP50, b.FirstTokenP50)
}
