package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3/option"

	"github.com/spillway-gw/spillway/internal/catalog"
)

// hedged routes the harness's model with a hedge after `after`, and gives
// the primary silence bounds far above the mock's delay, so that only the
// hedge can move a request off it.
func hedged(after time.Duration) func(*catalog.Config) {
	return func(c *catalog.Config) {
		c.Routes[0].Hedge = &catalog.Hedge{After: catalog.HedgeAfter{Fixed: catalog.Duration(after)}}
		t := &c.Deployments[0].Timeouts
		t.FirstByte, t.Idle, t.Total = catalog.Duration(time.Minute), catalog.Duration(time.Minute), catalog.Duration(2*time.Minute)
	}
}

// idle waits until mock id has no request in flight: the only way a
// request delayed by a minute ends sooner is its client going away.
func (h *harness) idle(t *testing.T, id string) time.Duration {
	t.Helper()
	begin := time.Now()
	for h.mocks[id].Active() > 0 {
		if time.Since(begin) > 10*time.Second {
			t.Fatalf("%s still has %d requests open: it never saw the cancel", id, h.mocks[id].Active())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(begin)
}

// A slow primary loses to the secondary: the hedge starts after 50ms, the
// secondary's first token wins, the primary's connection is closed (its
// provider sees the cancel), the caller gets the secondary's answer and
// is billed for it once, and the ledger holds both attempts, the loser's
// at the operator's cost.
func TestHedgeSlowPrimaryLosesE2E(t *testing.T) {
	modes(t, func(t *testing.T, stream bool) {
		h := newHarnessWith(t, hedged(50*time.Millisecond), rungSpec{"primary", "openai"}, rungSpec{"secondary", "anthropic"})
		h.fault("primary", "delay=1m") // no headers for a minute
		begin := time.Now()
		r := chat(t, h, stream, hello())
		took := time.Since(begin)
		if r.err != nil {
			t.Fatal(r.err)
		}
		if !strings.Contains(r.text, "secondary") {
			t.Errorf("text %q: want the secondary's answer", r.text)
		}
		for k, want := range map[string]string{"X-Spillway-Deployment": "secondary", "X-Spillway-Attempts": "2",
			"X-Spillway-Trail": "primary=hedged_lost, secondary=ok", "X-Spillway-Hedge": "won"} {
			if got := hdr(r.resp, k); got != want {
				t.Errorf("%s = %q, want %q", k, got, want)
			}
		}
		cancelled := h.idle(t, "primary")
		t.Logf("hedged answer in %v (the primary would have taken a minute); the primary's provider saw its connection close %v after the answer", took, cancelled)
		if took > 30*time.Second {
			t.Errorf("the answer took %v", took)
		}
		if c := h.counts(); c["primary"] != 1 || c["secondary"] != 1 {
			t.Errorf("upstream requests = %v, want one each", c)
		}

		id := hdr(r.resp, "X-Request-Id")
		n, row, atts := h.rows(t, id)
		if n != 1 || row.status != "ok" || row.deployment != "secondary" || row.attempts != 2 || len(atts) != 2 {
			t.Fatalf("rows: %d %+v attempts %+v", n, row, atts)
		}
		lost, won := atts[0], atts[1]
		if lost.deployment != "primary" || lost.failureClass != "hedged_lost" || lost.out != 0 || lost.in <= 0 || lost.cost <= 0 {
			t.Errorf("loser's row = %+v: want hedged_lost, the prompt's estimate as input, no output, the operator's cost", lost)
		}
		if want := h.costOf("primary", lost.in, 0, 0); lost.cost != want {
			t.Errorf("loser's cost %d, want %d (its input estimate at its price)", lost.cost, want)
		}
		if won.deployment != "secondary" || won.failureClass != "" || won.cost != row.cost || row.cost <= 0 {
			t.Errorf("winner's row = %+v, request cost %d: the caller pays the winner alone", won, row.cost)
		}
		if want := h.costOf("secondary", row.in, row.cached, row.out); row.cost != want {
			t.Errorf("request cost %d, want the secondary's %d", row.cost, want)
		}
		if !stream {
			if got := hdr(r.resp, "X-Spillway-Cost-Usd"); got != fmt.Sprintf("0.%06d", row.cost) {
				t.Errorf("cost header %q, request row %d", got, row.cost)
			}
		}
		_, scrape := adminGet(t, h, "/metrics", adminKey)
		for _, want := range []string{`spillway_hedges_total{model="` + exactModel + `",outcome="won"} 1`,
			`spillway_attempts_total{deployment="primary",verdict="hedged_lost"} 1`} {
			if !strings.Contains(scrape, want) {
				t.Errorf("metrics lack %s", want)
			}
		}
		// The loser's cancel is neutral: the primary stays healthy.
		if st := stateOf(t, h, "primary"); st != "healthy" {
			t.Errorf("primary's health = %q after losing a hedge", st)
		}
	})
}

// A hedge never fires on a request already committed: the primary's first
// token comes before the 300ms threshold, then it stalls for its 1s idle
// bound. The stream ends
// interrupted; the whole answer fails over after its idle bound, as any
// would; neither ever starts a hedge.
func TestHedgeNeverOnCommittedE2E(t *testing.T) {
	modes(t, func(t *testing.T, stream bool) {
		h := newHarnessWith(t, func(c *catalog.Config) {
			c.Routes[0].Hedge = &catalog.Hedge{After: catalog.HedgeAfter{Fixed: catalog.Duration(300 * time.Millisecond)}}
			// The stall outlasts the threshold well before the idle bound
			// ends it: a hedge that ignored the commit would fire.
			c.Deployments[0].Timeouts.Idle = catalog.Duration(time.Second)
		}, rungSpec{"primary", "openai"}, rungSpec{"secondary", "openai"})
		h.fault("primary", "stall_after=1")
		r := chat(t, h, stream, hello())
		if got := hdr(r.resp, "X-Spillway-Hedge"); got != "" {
			t.Errorf("X-Spillway-Hedge = %q: a hedge fired after the commit", got)
		}
		if stream {
			if r.err == nil || hdr(r.resp, "X-Spillway-Trail") != "primary=ok" {
				t.Errorf("err %v trail %q: want the primary's interrupted stream", r.err, hdr(r.resp, "X-Spillway-Trail"))
			}
			if c := h.counts(); c["secondary"] != 0 {
				t.Errorf("upstream requests = %v: the secondary was called", c)
			}
			return
		}
		// A whole answer: the first token fixed the race, nothing reached
		// the caller, so the stall fails over as a plain chain does.
		if r.err != nil || hdr(r.resp, "X-Spillway-Trail") != "primary=provider_unavailable, secondary=ok" {
			t.Errorf("err %v trail %q", r.err, hdr(r.resp, "X-Spillway-Trail"))
		}
	})
}

// The route's hedge and the threshold a request would use, in explain: a
// fixed one, then a p95 one that reads the first rung's observed latency
// once it has enough samples.
func TestHedgeExplainE2E(t *testing.T) {
	h := newHarnessWith(t, func(c *catalog.Config) {
		c.Routes[0].Hedge = &catalog.Hedge{After: catalog.HedgeAfter{P95: true}, Min: catalog.Duration(time.Millisecond * 60)}
		c.Routes[0].RefusalFailover = &catalog.RefusalFailover{BufferBytes: 2048}
	}, rungSpec{"primary", "openai"}, rungSpec{"secondary", "openai"})
	ex := explain(t, h, http.MethodGet, "?model="+publicModel, "")
	if ex.Hedge == nil || ex.Hedge.After != "p95" || !ex.Hedge.Fires || ex.Hedge.Source != "fallback" || ex.Hedge.ThresholdMS != 2000 {
		t.Fatalf("hedge = %+v, want p95 at its 2s fallback (no samples yet)", ex.Hedge)
	}
	if ex.RefusalFailover == nil || ex.RefusalFailover.BufferBytes != 2048 {
		t.Errorf("refusal failover = %+v", ex.RefusalFailover)
	}
	for range catalog.HedgeMinSamples {
		served(t, h, false)
	}
	ex = explain(t, h, http.MethodGet, "?model="+publicModel, "")
	if ex.Hedge == nil || ex.Hedge.Source != "p95" || ex.Hedge.Samples < catalog.HedgeMinSamples || ex.Hedge.ThresholdMS != max(ex.Hedge.P95MS, 60) {
		t.Errorf("hedge = %+v, want the primary's observed p95 (at least the 60ms floor)", ex.Hedge)
	}
	// The primary down: one rung left, so nothing to hedge to.
	h.fault("primary", "status=401")
	served(t, h, false)
	if ex = explain(t, h, http.MethodGet, "?model="+publicModel, ""); ex.Hedge == nil || ex.Hedge.Fires || ex.Hedge.ThresholdMS != 0 {
		t.Errorf("with one rung left: hedge = %+v, want it shown but not firing", ex.Hedge)
	}
}

// refusing routes the harness's model with refusal failover.
func refusing(buffer int) func(*catalog.Config) {
	return func(c *catalog.Config) {
		c.Routes[0].RefusalFailover = &catalog.RefusalFailover{BufferBytes: buffer}
	}
}

// Refusal failover, streamed and whole: a refusal moves on to the next
// rung, nothing of it shown; the refused attempt is the operator's cost,
// the caller pays the answer it got. A non-refusal passes through.
func TestRefusalFailoverE2E(t *testing.T) {
	for _, kind := range []string{"openai", "anthropic"} {
		t.Run(kind, func(t *testing.T) {
			modes(t, func(t *testing.T, stream bool) {
				h := newHarnessWith(t, refusing(4096), rungSpec{"primary", kind}, rungSpec{"secondary", "openai"})
				h.fault("primary", "refusal")
				r := chat(t, h, stream, hello())
				if r.err != nil {
					t.Fatal(r.err)
				}
				if !strings.Contains(r.text, "secondary") || strings.Contains(r.text, "sorry") {
					t.Errorf("text %q: want the secondary's answer and nothing of the refusal", r.text)
				}
				if got := hdr(r.resp, "X-Spillway-Trail"); got != "primary=refused, secondary=ok" {
					t.Errorf("trail = %q", got)
				}
				n, row, atts := h.rows(t, hdr(r.resp, "X-Request-Id"))
				if n != 1 || row.deployment != "secondary" || len(atts) != 2 {
					t.Fatalf("rows: %d %+v %+v", n, row, atts)
				}
				if a := atts[0]; a.failureClass != "refused" || a.cost <= 0 || a.cost != h.costOf("primary", a.in, 0, a.out) {
					t.Errorf("refused attempt's row = %+v: want refused, priced at the primary's rate as the operator's", a)
				}
				if atts[1].cost != row.cost || row.cost != h.costOf("secondary", row.in, row.cached, row.out) {
					t.Errorf("request cost %d, serving attempt %+v: the caller pays the secondary alone", row.cost, atts[1])
				}
			})
		})
	}
	t.Run("a non-refusal passes through", func(t *testing.T) {
		modes(t, func(t *testing.T, stream bool) {
			h := newHarnessWith(t, refusing(4096), rungSpec{"primary", "openai"}, rungSpec{"secondary", "openai"})
			r := chat(t, h, stream, hello())
			if r.err != nil || !strings.Contains(r.text, "primary") || hdr(r.resp, "X-Spillway-Trail") != "primary=ok" {
				t.Errorf("err %v text %q trail %q", r.err, r.text, hdr(r.resp, "X-Spillway-Trail"))
			}
		})
	})
	t.Run("off by default: the refusal is the answer", func(t *testing.T) {
		h := newHarness(t, rungSpec{"primary", "openai"}, rungSpec{"secondary", "openai"})
		h.fault("primary", "refusal")
		refusal, trail := refusalOf(t, h)
		if !strings.Contains(refusal, "sorry") || trail != "primary=ok" {
			t.Errorf("refusal %q trail %q", refusal, trail)
		}
	})
	t.Run("every rung refuses: the last refusal is the answer", func(t *testing.T) {
		h := newHarnessWith(t, refusing(4096), rungSpec{"primary", "openai"}, rungSpec{"secondary", "openai"})
		h.fault("primary", "refusal")
		h.fault("secondary", "refusal;message=secondary declines")
		refusal, trail := refusalOf(t, h)
		if refusal != "secondary declines" || trail != "primary=refused, secondary=ok" {
			t.Errorf("refusal %q trail %q", refusal, trail)
		}
	})
	t.Run("the next rung fails: the held refusal is the answer after all", func(t *testing.T) {
		h := newHarnessWith(t, refusing(4096), rungSpec{"primary", "openai"}, rungSpec{"secondary", "openai"})
		h.fault("primary", "refusal")
		h.fault("secondary", "status=503")
		refusal, trail := refusalOf(t, h)
		if !strings.Contains(refusal, "sorry") || trail != "primary=ok, secondary=provider_unavailable" {
			t.Errorf("refusal %q trail %q", refusal, trail)
		}
	})
}

// refusalOf asks for a whole answer and returns its refusal and trail.
func refusalOf(t *testing.T, h *harness) (string, string) {
	t.Helper()
	var resp *http.Response
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := h.client(option.WithResponseInto(&resp))
	cc, err := c.Chat.Completions.New(ctx, hello())
	if err != nil {
		t.Fatal(err)
	}
	if len(cc.Choices) == 0 {
		t.Fatal("no choice")
	}
	return cc.Choices[0].Message.Refusal, hdr(resp, "X-Spillway-Trail")
}
