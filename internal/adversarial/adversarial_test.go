package adversarial

import (
	"fmt"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/mock"
)

// env is what the shared gateway is pointed at.
type env struct {
	*suite
	hostile *hostile
	mocks   map[string]*mock.Mock
}

// The mock providers of the shared gateway, each an OpenAI-wire deployment
// of the same name: secondary is every pool's healthy second rung; the
// others are primaries of their own pool (and route).
var mockNames = []string{"secondary", "plain", "usage", "ignore", "nonread"}

// deployment lines for the config.
const (
	priced = `price: {input_per_mtok: 1, output_per_mtok: 2}, max_output_tokens: 1000, context_window: 100000`
	// Hostile primaries are always tried: their circuit never opens, so
	// each request shows what the gateway does with the answer.
	alwaysTried = `health: {failure_threshold: 1000000, max_error_rate: -1}`
	bounded     = `timeouts: {connect: 2s, first_byte: 5s, idle: 5s, total: 30s}`
)

// sharedConfig is the shared gateway's config: every hostile behaviour and
// every mock is the primary of a pool of the same name, routed by that
// name, with the secondary mock as its second rung.
func sharedConfig(h *hostile, mocks map[string]*httptest.Server) string {
	var deps, pools, routes strings.Builder
	add := func(id, kind, url, extra string) {
		fmt.Fprintf(&deps, "  - {id: %s, provider: %s, base_url: %s, model: m, %s}\n", id, kind, url, extra)
		if id == "secondary" {
			return
		}
		fmt.Fprintf(&pools, "  - {id: %s, model: %s, deployments: [%s, secondary], equivalence: {by: adversarial@example.com, date: \"2026-01-01\", evidence: adversarial-suite}}\n", id, id, id)
		fmt.Fprintf(&routes, "  - {model: %s, pool: %s}\n", id, id)
	}
	for _, name := range mockNames {
		extra := priced + ", " + bounded
		switch name {
		case "usage", "ignore":
			extra += ", " + alwaysTried
		case "nonread":
			// Room for an answer of megabytes; the health policy is the
			// default one, so blame would open the circuit.
			extra = `price: {input_per_mtok: 1, output_per_mtok: 2}, max_output_tokens: 200000, context_window: 400000`
		}
		add(name, "openai", mocks[name].URL, extra)
	}
	names := make([]string, 0, len(h.kinds))
	for name := range h.kinds {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		extra := priced + ", " + bounded + ", " + alwaysTried
		if name == "oversized" {
			// No output ceiling at all: only the answer size bound holds.
			extra = "funding: byok, " + bounded + ", " + alwaysTried
		}
		add("h-"+name, h.kinds[name], h.url(name), extra)
	}
	return `ledger: {path: DIR/ledger/ledger.db}
server:
  body_timeout: 2s
  write_timeout: 2s
  max_body_bytes: 16777216
deployments:
` + deps.String() + "pools:\n" + pools.String() + "routes:\n" + routes.String()
}

// TestAdversarial runs one gateway process against a hostile provider and
// the mock providers, and attacks it as a hostile provider and as hostile
// callers, one case at a time, each bounded in time and in the gateway's
// memory.
func TestAdversarial(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the gateway binary")
	}
	e := &env{hostile: newHostile(t), mocks: map[string]*mock.Mock{}}
	servers := map[string]*httptest.Server{}
	for _, name := range mockNames {
		m, err := mock.New("openai", mock.Options{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(m)
		t.Cleanup(func() { m.Close(); srv.CloseClientConnections(); srv.Close() })
		e.mocks[name], servers[name] = m, srv
	}
	e.suite = &suite{g: startGateway(t, sharedConfig(e.hostile, servers))}
	t.Cleanup(client.CloseIdleConnections)
	t.Run("provider", func(t *testing.T) { e.run(t, e.providerAttacks()) })
	t.Run("caller", func(t *testing.T) { e.run(t, e.callerAttacks()) })
	e.report(t)
	if t.Failed() {
		t.Logf("gateway stderr (tail):\n%s", tail(e.g.errs.String(), 20000))
	}
}
