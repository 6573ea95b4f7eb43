package route

import (
	"math"

	"github.com/spillway-gw/spillway/internal/catalog"
)

// Turns hands out a route's exercise turns: the server's implementation
// counts the route's eligible requests (each call takes the next number,
// from 0), explain's reads the next number without taking it. Planning
// asks only for a request the route may exercise.
type Turns interface {
	Turn(rr *catalog.ResolvedRoute) uint64
}

// exercise puts a secondary rung first for the route's exercise share of
// its eligible requests (those with two kept rungs of its own pool or
// more), in turn through the secondaries. The n-th eligible request is
// exercised when floor((n+1)·share) passes floor(n·share), so that over
// any N requests exactly floor(N·share) are (to within one), spread
// evenly, with no randomness. Model-changing rungs are never exercised:
// only failover sends a request to another model.
func (p *Plan) exercise(in *Input) {
	rr := p.Route
	// A pinned conversation is not exercised: moving it would throw its
	// prompt cache away (and the pin would follow the secondary). The
	// share is of unpinned traffic.
	if in.Turns == nil || rr.Exercise <= 0 || p.Verdict != Planned || p.Sticky != "" {
		return
	}
	own := p.ownKept()
	if own < 2 {
		return
	}
	ppm := uint64(math.Round(rr.Exercise * 1e6))
	n := in.Turns.Turn(rr)
	k := n * ppm / 1e6 // exercises before this request
	if (n+1)*ppm/1e6 == k {
		return
	}
	j := 1 + int(k%uint64(own-1))
	d := p.Order[j]
	if rr.Shed.On() && pastShare(d, in, rr.Shed.At) {
		// Exercise is optional traffic: it never pushes a rung past its
		// shed share, nor sheds a request that its primary would take.
		return
	}
	copy(p.Order[1:j+1], p.Order[:j])
	p.Order[0], p.Exercise = d, d
}
