package catalog

import (
	"fmt"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"
)

// This file holds two opt-in route behaviours that change how a request's
// attempts race and end: hedging (the next rung starts alongside a first
// attempt that is slow to its first token) and refusal failover (a
// refusal moves on to the next rung).

// Bounds and defaults of hedge and refusal_failover.
const (
	// MinHedgeAfter and MaxHedgeAfter bound a hedge's threshold, whether
	// written or observed: never sooner than 50ms (a hedge that fires on
	// every request doubles the bill), never later than five minutes.
	MinHedgeAfter = 50 * time.Millisecond
	MaxHedgeAfter = 5 * time.Minute
	// DefaultHedgeMin is Hedge.Min's default: the least a p95 threshold
	// can be.
	DefaultHedgeMin = MinHedgeAfter
	// DefaultHedgeFallback is Hedge.Fallback's default.
	DefaultHedgeFallback = 2 * time.Second
	// HedgeMinSamples is how many first-token samples the first rung's
	// health window must hold before a p95 threshold is trusted.
	HedgeMinSamples = 20

	// DefaultRefusalBuffer is RefusalFailover.BufferBytes' default, and
	// MaxRefusalBuffer its largest value.
	DefaultRefusalBuffer = 4 << 10
	MaxRefusalBuffer     = 64 << 10
)

// Hedge sends a request's next rung alongside its first attempt when the
// first has produced no first token within After; the first of the two to
// commit serves, the other is cancelled. A nil Hedge (the default): no
// hedging. It never fires on a request already committed, on a plan with
// one rung of the route's model, or on a last-resort probe.
type Hedge struct {
	// After is when to hedge: a duration from 50ms to 5m ("800ms"), or
	// "p95": the first rung's observed first-token p95 over its health
	// window, never below Min (and Fallback while the window holds fewer
	// than 20 samples). Required.
	After HedgeAfter `yaml:"after" json:"after"`
	// Min floors a p95 threshold. Default 50ms, also the least allowed.
	// With after: p95 only.
	Min Duration `yaml:"min,omitempty" json:"min,omitempty"`
	// Fallback is the threshold while the first rung has too few samples
	// for a p95. Default 2s. With after: p95 only.
	Fallback Duration `yaml:"fallback,omitempty" json:"fallback,omitempty"`
}

// HedgeAfter is a hedge threshold as written: a fixed duration, or the
// observed p95. The zero value is unset.
type HedgeAfter struct {
	// P95 asks for the first rung's observed first-token p95.
	P95 bool
	// Fixed is the written duration when P95 is false.
	Fixed Duration
}

// hedgeP95 is how a p95 threshold is written.
const hedgeP95 = "p95"

// UnmarshalYAML reads "p95" or a Go duration ("800ms").
func (h *HedgeAfter) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Value == hedgeP95 {
		*h = HedgeAfter{P95: true}
		return nil
	}
	var d Duration
	if err := d.UnmarshalYAML(n); err != nil {
		return fmt.Errorf("%v, or p95 (the first rung's observed first-token p95)", err)
	}
	*h = HedgeAfter{Fixed: d}
	return nil
}

// MarshalYAML writes the threshold as UnmarshalYAML reads it.
func (h HedgeAfter) MarshalYAML() (any, error) { return h.String(), nil }

// MarshalText writes the threshold as UnmarshalYAML reads it (JSON).
func (h HedgeAfter) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// String is "p95" or the duration.
func (h HedgeAfter) String() string {
	if h.P95 {
		return hedgeP95
	}
	return h.Fixed.String()
}

// IsZero reports whether the threshold is unset.
func (h HedgeAfter) IsZero() bool { return !h.P95 && h.Fixed == 0 }

// RefusalFailover moves a refusal on to the next rung. A refusal is model
// behaviour, not a provider fault, so by default (nil) it is the answer.
// With it, an answer is held back from the caller while all it holds is
// refusal, up to BufferBytes; one that ends as a refusal within that
// moves on (the trail shows the rung "refused"), anything else commits and
// flushes what was held, in order. A refusal moved on from is still the
// answer when no later rung gives one.
type RefusalFailover struct {
	// BufferBytes bounds the refusal held back per answer, from 1 to
	// 65536 bytes. Default 4096. A longer refusal is the answer.
	BufferBytes int `yaml:"buffer_bytes,omitempty" json:"buffer_bytes,omitempty"`
}

// applyHedgeDefaults fills the defaults of each route's hedge and refusal
// failover. A route shares these with the config it was cloned from, so a
// default is written into a copy.
func (c *Config) applyHedgeDefaults() {
	for i := range c.Routes {
		r := &c.Routes[i]
		if h := r.Hedge; h != nil && h.After.P95 && (h.Min == 0 || h.Fallback == 0) {
			cp := *h
			setDefault(&cp.Min, Duration(DefaultHedgeMin))
			setDefault(&cp.Fallback, Duration(DefaultHedgeFallback))
			r.Hedge = &cp
		}
		if f := r.RefusalFailover; f != nil && f.BufferBytes == 0 {
			r.RefusalFailover = &RefusalFailover{BufferBytes: DefaultRefusalBuffer}
		}
	}
}

// validateHedges checks each route's hedge and refusal failover.
func (c *Config) validateHedges(p *problems) {
	for i := range c.Routes {
		r := &c.Routes[i]
		at := "routes[" + strconv.Itoa(i) + "]"
		if h := r.Hedge; h != nil {
			validateHedge(p, h, at+".hedge", r.Line)
		}
		if f := r.RefusalFailover; f != nil && (f.BufferBytes < 1 || f.BufferBytes > MaxRefusalBuffer) {
			p.add(at+".refusal_failover.buffer_bytes", r.Line, "%d is not between 1 and %d (bytes of refusal held back before the answer commits)", f.BufferBytes, MaxRefusalBuffer)
		}
	}
}

func validateHedge(p *problems, h *Hedge, at string, line int) {
	within := func(d Duration) bool { return d.D() >= MinHedgeAfter && d.D() <= MaxHedgeAfter }
	switch {
	case h.After.IsZero():
		p.add(at+".after", line, "required: a duration from %v to %v (e.g. 2s), or p95", MinHedgeAfter, MaxHedgeAfter)
	case !h.After.P95:
		if !within(h.After.Fixed) {
			p.add(at+".after", line, "%v is not between %v and %v", h.After.Fixed, MinHedgeAfter, MaxHedgeAfter)
		}
		if h.Min != 0 || h.Fallback != 0 {
			p.add(at, line, "min and fallback apply to after: p95 only; a written duration is the threshold itself")
		}
	default:
		if !within(h.Min) {
			p.add(at+".min", line, "%v is not between %v and %v", h.Min, MinHedgeAfter, MaxHedgeAfter)
		}
		if !within(h.Fallback) || h.Fallback < h.Min {
			p.add(at+".fallback", line, "%v is not between min (%v) and %v", h.Fallback, h.Min, MaxHedgeAfter)
		}
	}
}

// hedgeWarnings adds what is allowed but does nothing: a hedge on a route
// whose pool has one deployment (a hedge never changes the model), and
// refusal failover on a route with no second rung at all.
func (c *Config) hedgeWarnings(p *problems) {
	size := make(map[string]int, len(c.Pools))
	for i := range c.Pools {
		size[c.Pools[i].ID] = len(c.Pools[i].Deployments)
	}
	for i := range c.Routes {
		r := &c.Routes[i]
		at := "routes[" + strconv.Itoa(i) + "]"
		n, ok := size[r.Pool]
		if !ok {
			continue
		}
		if r.Hedge != nil && n < 2 {
			p.add(at+".hedge", r.Line, "pool %q has one deployment: there is no rung of the same model to hedge to", r.Pool)
		}
		if r.RefusalFailover != nil && n+size[r.Fallback.Pool] < 2 {
			p.add(at+".refusal_failover", r.Line, "the route has one rung: a refusal has nowhere to move on to")
		}
	}
}

// resolveHedge gives rr its route's hedge and refusal buffer.
func resolveHedge(rr *ResolvedRoute, r *Route) {
	rr.Hedge = r.Hedge
	if f := r.RefusalFailover; f != nil {
		rr.RefusalBuffer = f.BufferBytes
	}
}
