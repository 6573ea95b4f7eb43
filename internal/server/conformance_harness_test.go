package server_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/idempotency"
	"github.com/spillway-gw/spillway/internal/server"
)

// The client conformance suite's gateway: one model per provider kind, a
// failover pool whose primary answers 529, and a pool whose only rung dies
// mid-stream. The Go SDK tests (conformance_go_test.go) and the Node
// clients (clients/node, run by TestNodeClients) drive it through the
// patterns users write.
const (
	confOpenAI    = "conf-openai"
	confAnthropic = "conf-anthropic"
	confBedrock   = "conf-bedrock"
	confGemini    = "conf-gemini"
	confFailover  = "conf-failover"
	confInterrupt = "conf-interrupt"
	// Embeddings pools: an OpenAI-format primary answering 529 and its
	// healthy secondary; Gemini; Bedrock with Titan's and Cohere's bodies.
	confEmbed       = "conf-embed"
	confEmbedGemini = "conf-embed-gemini"
	confEmbedTitan  = "conf-embed-titan"
	confEmbedCohere = "conf-embed-cohere"
)

// confModels maps each public model of the suite to its pool's rungs.
var confModels = []struct {
	model string
	rungs []string
	embed bool
}{
	{confOpenAI, []string{"openai"}, false},
	{confAnthropic, []string{"anthropic"}, false},
	{confBedrock, []string{"bedrock"}, false},
	{confGemini, []string{"gemini"}, false},
	{confFailover, []string{"flaky", "anthropic"}, false},
	{confInterrupt, []string{"broken"}, false},
	{confEmbed, []string{"flaky", "openai"}, true},
	{confEmbedGemini, []string{"gemini"}, true},
	{confEmbedTitan, []string{"bedrock-embed"}, true},
	{confEmbedCohere, []string{"cohere.embed"}, true},
}

type confHarness struct {
	*harness
	// brokeKey is a valid key whose credit is spent: every call is a 429
	// key_budget_exceeded.
	brokeKey string
}

func newConformanceHarness(t testing.TB) *confHarness {
	t.Helper()
	// Multi-replica idempotency, as with shared_state: the shared store
	// owns every key, except that it cannot answer the first claim of a
	// key starting awayOncePrefix (Redis away for a moment), which the
	// gateway refuses with 503 idempotency_unavailable (DownRefuse).
	idem := idempotency.New(idempotency.Options{})
	idem.SetShared(&awayOnceShared{failed: map[string]bool{}})
	idem.SetDownPolicy(idempotency.DownRefuse)
	h := newHarnessOpts(t, func(c *catalog.Config) {
		c.Pools, c.Routes = nil, nil
		for _, m := range confModels {
			p := catalog.Pool{ID: m.model, Model: m.model, Deployments: m.rungs}
			if m.embed {
				p.Kind = catalog.PoolEmbeddings
			}
			if len(m.rungs) > 1 {
				p.Equivalence = &catalog.Equivalence{By: "test", Date: "2026-12-01", Evidence: "sha256:test"}
			}
			c.Pools = append(c.Pools, p)
			c.Routes = append(c.Routes, catalog.Route{Model: m.model, Pool: m.model})
		}
		c.Server.MaxBodyBytes = 256 << 10
		// The faulty rungs fail on every request by design: their circuits
		// must never open, or later requests would skip them and prove
		// nothing (the harness clock never moves).
		for i := range c.Deployments {
			if d := &c.Deployments[i]; d.ID == "flaky" || d.ID == "broken" {
				d.Health.FailureThreshold = 1 << 30
				d.Health.MaxErrorRate = -1
			}
		}
	}, func(o *server.Options) { o.Idempotency = idem },
		rungSpec{"openai", "openai"}, rungSpec{"anthropic", "anthropic"}, rungSpec{"bedrock", "bedrock"},
		rungSpec{"gemini", "gemini"}, rungSpec{"flaky", "openai"}, rungSpec{"broken", "openai"},
		rungSpec{"bedrock-embed", "bedrock"}, rungSpec{"cohere.embed", "bedrock"})
	h.fault("flaky", "status=529")
	h.fault("broken", "die_after=3")
	broke, rec := h.newKey(t)
	h.setBudget(t, `{"scope":"key","id":"`+rec+`","credit_usd":0}`)
	return &confHarness{harness: h, brokeKey: broke}
}

// awayOncePrefix starts the Idempotency-Keys whose first claim the
// conformance gateway's shared idempotency store cannot answer (the Node
// clients pass it as SPILLWAY_IDEM_AWAY_ONCE).
const awayOncePrefix = "node-redis-away-once-"

// awayOnceShared is a shared idempotency store that owns every key it is
// asked about, except that the first claim of each key starting
// awayOncePrefix fails as if Redis were unreachable. Replays are answered
// by the gateway's own store, which keeps every decided key.
type awayOnceShared struct {
	mu     sync.Mutex
	failed map[string]bool // the away-once keys whose first claim failed
}

func (s *awayOnceShared) Claim(_ context.Context, tenant, key string, _ [32]byte) (idempotency.SharedClaim, error) {
	if strings.HasPrefix(key, awayOncePrefix) {
		s.mu.Lock()
		first := !s.failed[tenant+"\x00"+key]
		s.failed[tenant+"\x00"+key] = true
		s.mu.Unlock()
		if first {
			return idempotency.SharedClaim{}, errors.New("shared store unreachable")
		}
	}
	return idempotency.SharedClaim{State: idempotency.SharedOwned}, nil
}
func (*awayOnceShared) Wait(ctx context.Context, _, _ string) error { return ctx.Err() }
func (*awayOnceShared) Finish(string, string, [32]byte, idempotency.SharedState, *idempotency.Recording, time.Duration) {
}
