package catalog

import (
	"testing"
	"time"
)

// TestStickyRefusals: every bound of stickiness and ranking, named at its
// line (unhappy paths first).
func TestStickyRefusals(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		wants []want
	}{
		{"ttl negative", edit(t, "    pool: p\n", "    pool: p\n    sticky: {ttl: -1s}\n"), []want{{20, "routes[0].sticky.ttl", "negative"}}},
		{"ttl past a day", edit(t, "    pool: p\n", "    pool: p\n    sticky: {ttl: 25h}\n"), []want{{20, "routes[0].sticky.ttl", "at most 24h"}}},
		{"rank unknown", edit(t, "    pool: p\n", "    pool: p\n    rank: cheapest\n"), []want{{20, "routes[0].rank", `"cheapest" is not configured or cost_latency`}}},
		{"capacity negative", base + "routing: {sticky_capacity: -1}\n", []want{{20, "routing.sticky_capacity", "outside 1..10000000"}}},
		{"capacity too large", base + "routing: {sticky_capacity: 10000001}\n", []want{{20, "routing.sticky_capacity", "outside 1..10000000"}}},
		{"conversation header", base + "routing: {conversation_header: \"X Conv\"}\n", []want{{20, "routing.conversation_header", "not an HTTP header name"}}},
		{"unknown sticky key", edit(t, "    pool: p\n", "    pool: p\n    sticky: {capacity: 10}\n"), []want{{20, "routes[0].sticky.capacity", ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireProblems(t, parseProblems(t, tt.src), tt.wants...)
		})
	}
}

// TestStickyResolved: stickiness is on by default where there is more
// than one rung to choose from, off on request; ranking only on request.
func TestStickyResolved(t *testing.T) {
	one := `
  - id: solo
    model: m
    deployments: [a]
routes:`
	tests := []struct {
		name     string
		src      string
		route    int
		ttl      time.Duration
		rank     bool
		keepPins bool
	}{
		{name: "default: on for a pool of two", src: base, ttl: DefaultStickyTTL, keepPins: true},
		{name: "ttl set", src: edit(t, "    pool: p\n", "    pool: p\n    sticky: {ttl: 5m}\n"), ttl: 5 * time.Minute, keepPins: true},
		{name: "off", src: edit(t, "    pool: p\n", "    pool: p\n    sticky: {enabled: false}\n")},
		{name: "off, ranked: pins kept for the cache", src: edit(t, "    pool: p\n", "    pool: p\n    sticky: {enabled: false}\n    rank: cost_latency\n"), rank: true, keepPins: true},
		{name: "ranked and sticky", src: edit(t, "    pool: p\n", "    pool: p\n    rank: cost_latency\n"), ttl: DefaultStickyTTL, rank: true, keepPins: true},
		{name: "one rung: nothing to pin", src: edit(t, "routes:", one, "  - model: m\n    pool: p\n", "  - model: m\n    pool: solo\n    sticky: {enabled: true}\n    rank: cost_latency\n"), rank: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.src), "test.yaml")
			if err != nil {
				t.Fatal(err)
			}
			s, err := Build(c, "test.yaml")
			if err != nil {
				t.Fatal(err)
			}
			rr, _ := s.Match(&Attributes{Model: "m"})
			if rr.StickyTTL.D() != tt.ttl || rr.Sticky() != (tt.ttl > 0) || rr.RankCostLatency != tt.rank || rr.KeepsPins() != tt.keepPins {
				t.Errorf("ttl %v sticky %v rank %v keeps pins %v; want %v %v %v", rr.StickyTTL.D(), rr.Sticky(), rr.RankCostLatency, rr.KeepsPins(), tt.ttl, tt.rank, tt.keepPins)
			}
		})
	}
	c, _ := Parse([]byte(base), "test.yaml")
	if c.Routing.ConversationHeader != DefaultConversationHeader || c.Routing.StickyCapacity != DefaultStickyCapacity {
		t.Errorf("routing defaults %+v", c.Routing)
	}
}
