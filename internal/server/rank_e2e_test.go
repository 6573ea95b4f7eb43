package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/catalog"
)

func ranked(c *catalog.Config) { c.Routes[0].Rank = catalog.RankCostLatency }

// TestRank: a ranked route serves from the cheaper rung, then, at equal
// price, from the faster (a rung not yet measured is tried, so it gets
// measured); stickiness still comes first; with stickiness off the rung
// holding a conversation's prompt cache counts its prompt at the cached
// price.
func TestRank(t *testing.T) {
	t.Run("the cheaper rung", func(t *testing.T) {
		h := newHarnessWith(t, func(c *catalog.Config) {
			ranked(c)
			c.Deployments[1].Price = &catalog.Price{InputPerMTok: 1, OutputPerMTok: 5}
		}, rungSpec{"primary", "openai"}, rungSpec{"secondary", "anthropic"})
		for i := range 3 {
			if got := served(t, h, i%2 == 1); got != "secondary" {
				t.Fatalf("request %d served by %q, want the cheaper secondary", i, got)
			}
		}
		if n := h.counts()["primary"]; n != 0 {
			t.Errorf("the dearer primary was called %d times", n)
		}
		ex := explain(t, h, http.MethodGet, "?model="+publicModel+"&max_tokens=64", "")
		if ex.Rank != catalog.RankCostLatency || strings.Join(ex.Order, ",") != "secondary,primary" {
			t.Errorf("explain: rank %q order %v", ex.Rank, ex.Order)
		}
		if p, s := ex.Rungs[0].Rank, ex.Rungs[1].Rank; p == nil || s == nil || p.CostMicroUSD != 64*15 || s.CostMicroUSD != 64*5 {
			t.Errorf("explained costs %+v %+v, want 960 and 320", p, s)
		}
	})
	t.Run("at equal price the faster", func(t *testing.T) {
		h := newHarnessWith(t, ranked, rungSpec{"primary", "openai"}, rungSpec{"secondary", "anthropic"})
		h.fault("primary", "delay=150ms")
		// Neither measured: the pool's order. Then the secondary, not yet
		// measured; then the faster of the two.
		for i, want := range []string{"primary", "secondary", "secondary", "secondary", "secondary"} {
			if got := served(t, h, false); got != want {
				t.Fatalf("request %d served by %q, want %q", i, got, want)
			}
		}
		ex := explain(t, h, http.MethodGet, "?model="+publicModel, "")
		p, s := ex.Rungs[0].Rank, ex.Rungs[1].Rank
		if p == nil || s == nil || p.FirstTokenP50MS == nil || s.FirstTokenP50MS == nil || *p.FirstTokenP50MS < 150 || *s.FirstTokenP50MS >= 150 {
			t.Fatalf("explained latencies %+v %+v", p, s)
		}
		// The other way round, once the old figures have left the window.
		h.fault("primary", "")
		h.fault("secondary", "delay=150ms")
		h.clock.Advance(2 * time.Minute)
		for i, want := range []string{"primary", "secondary", "primary", "primary"} {
			if got := served(t, h, true); got != want {
				t.Fatalf("after the swap, request %d served by %q, want %q", i, got, want)
			}
		}
	})
	t.Run("stickiness before ranking", func(t *testing.T) {
		h := newHarnessWith(t, func(c *catalog.Config) {
			ranked(c)
			c.Deployments[1].Price = &catalog.Price{InputPerMTok: 1, OutputPerMTok: 5}
		}, rungSpec{"primary", "openai"}, rungSpec{"secondary", "anthropic"})
		h.fault("secondary", "status=503")
		cv := newConversation(h, false, "You are terse.")
		if got, _ := cv.turn(t); got != "primary" {
			t.Fatalf("first turn served by %q", got)
		}
		h.fault("secondary", "")
		for range 3 {
			if got, _ := cv.turn(t); got != "primary" {
				t.Fatalf("turn %d served by %q, want the pinned primary", cv.turns, got)
			}
		}
		if got, _ := newConversation(h, false, "You are new.").turn(t); got != "secondary" {
			t.Errorf("a new conversation served by %q, want the cheaper secondary", got)
		}
	})
	t.Run("the prompt cache's holder at its cached price", func(t *testing.T) {
		h := newHarnessWith(t, func(c *catalog.Config) {
			ranked(c)
			off := false
			c.Routes[0].Sticky.Enabled = &off
			c.Deployments[0].Price = &catalog.Price{InputPerMTok: 3, OutputPerMTok: 15, CachedInputPerMTok: 0.1}
			c.Deployments[1].Price = &catalog.Price{InputPerMTok: 1, OutputPerMTok: 15}
		}, rungSpec{"primary", "openai"}, rungSpec{"secondary", "anthropic"})
		// A long prompt (about 4,000 tokens): cached at the primary it
		// costs less than at the secondary's list price.
		long := strings.Repeat("Policy text. ", 1300)
		h.fault("secondary", "status=503")
		cv := newConversation(h, false, long)
		if got, _ := cv.turn(t); got != "primary" {
			t.Fatalf("first turn served by %q", got)
		}
		h.fault("secondary", "")
		if got, _ := cv.turn(t); got != "primary" {
			t.Errorf("second turn served by %q, want the primary holding the cache", got)
		}
		if got, _ := newConversation(h, false, long+"Another. ").turn(t); got != "secondary" {
			t.Errorf("another conversation served by %q, want the secondary, cheaper at list price", got)
		}
	})
}
