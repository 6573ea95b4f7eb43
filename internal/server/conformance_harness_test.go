package server_test

import (
	"testing"

	"github.com/spillway-gw/spillway/internal/catalog"
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
	h := newHarnessWith(t, func(c *catalog.Config) {
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
	},
		rungSpec{"openai", "openai"}, rungSpec{"anthropic", "anthropic"}, rungSpec{"bedrock", "bedrock"},
		rungSpec{"gemini", "gemini"}, rungSpec{"flaky", "openai"}, rungSpec{"broken", "openai"},
		rungSpec{"bedrock-embed", "bedrock"}, rungSpec{"cohere.embed", "bedrock"})
	h.fault("flaky", "status=529")
	h.fault("broken", "die_after=3")
	broke, rec := h.newKey(t)
	h.setBudget(t, `{"scope":"key","id":"`+rec+`","credit_usd":0}`)
	return &confHarness{harness: h, brokeKey: broke}
}
