package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/ledger/sqlite"
)

// A ledger holding a row an older gateway stored from a hostile provider
// (usage near 2^63) once kept the gateway from starting: every sum failed
// with "integer overflow". The gateway now repairs such rows at start-up
// and says what it did; `spillway ledger repair` does the same on demand.
// (Since the aggregates, spend never sums the raw figures; the repair
// still rewrites the rows.)
func TestPoisonedLedgerStillStarts(t *testing.T) {
	// The gateway's refreshers stop with ctx: cancelled before the test
	// ends, so no goroutine outlives it.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	path := filepath.Join(t.TempDir(), "l.db")
	poison := func(suffix string) {
		t.Helper()
		st, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		at := time.Now()
		row := func(id string, cost int64, tokens int) ledger.Settlement {
			return ledger.Settlement{Request: ledger.Request{RequestID: id, Org: "default", Team: "default",
				KeyID: "key_x", PublicModel: "m", Status: ledger.StatusOK, Attempts: 1, InputTokens: tokens,
				OutputTokens: tokens, CostMicroUSD: cost, ReservedMicroUSD: 2500, CostStatus: ledger.CostPriced,
				StartedAt: at, FinishedAt: at}}
		}
		if err := st.WriteBatch(ctx, &ledger.Batch{Settlements: []ledger.Settlement{
			row("fine"+suffix, 100, 10), row("poisoned"+suffix, 1<<63-1, 1<<62),
		}}); err != nil {
			t.Fatal(err)
		}
		// Spend comes from the aggregates, which count the impossible
		// figures as the repair will leave them: start-up sums fine even
		// before the repair (the reservation stands in for the cost).
		sp, err := st.Spends(ctx, at)
		if err != nil {
			t.Fatalf("Spends on the poisoned ledger: %v", err)
		}
		for _, x := range sp {
			if x.Scope == ledger.ScopeKey && x.ID == "key_x" && x.TotalMicro%2600 != 0 {
				t.Errorf("key_x spent %d, want a multiple of 2600 (100 + the 2500 reservation per poisoning)", x.TotalMicro)
			}
		}
	}
	poison("")
	cfg, err := catalog.Parse([]byte(`ledger: {path: `+path+`}
deployments:
  - {id: a, provider: openai, base_url: "http://127.0.0.1:9", model: m, price: {input_per_mtok: 1, output_per_mtok: 1}}
pools: [{id: p, model: m, deployments: [a]}]
routes: [{model: m, pool: p}]
`), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := catalog.Build(cfg, "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	g, err := openGateway(ctx, catalog.NewHolder(snap), slog.New(slog.DiscardHandler), &out)
	if err != nil {
		t.Fatalf("the gateway did not start on a poisoned ledger: %v", err)
	}
	g.close(ctx)
	for _, want := range []string{"repaired ledger row poisoned (request)", "cost_micro_usd 9223372036854775807 -> 2500 (the reservation)",
		"input_tokens 4611686018427387904 -> 0", "repaired 1 ledger rows"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("start-up output lacks %q:\n%s", want, out.String())
		}
	}

	var usage bytes.Buffer
	if err := runUsage(ctx, []string{"--db", path, "--group-by", "", "--format", "csv"}, &usage, io.Discard); err != nil {
		t.Fatalf("usage after the repair: %v", err)
	}
	if !strings.Contains(usage.String(), "2600") {
		t.Errorf("usage after the repair should cost 100 + the 2500 reservation:\n%s", usage.String())
	}

	// The command, on a ledger poisoned again while no gateway ran.
	poison("-again")
	out.Reset()
	if err := run(ctx, []string{"ledger", "repair", "--db", path}, &out, &out); err != 0 {
		t.Fatalf("spillway ledger repair exited %d:\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "repaired 1 ledger rows") {
		t.Errorf("spillway ledger repair said:\n%s", out.String())
	}
}

// A ledger missing at start-up is created, and said to be new: a ledger
// deleted since the last run looks the same, and its keys are gone.
func TestFreshLedgerIsAnnounced(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	path := filepath.Join(t.TempDir(), "l.db")
	cfg, err := catalog.Parse([]byte(`ledger: {path: `+path+`}
deployments:
  - {id: a, provider: openai, base_url: "http://127.0.0.1:9", model: m, price: {input_per_mtok: 1, output_per_mtok: 1}}
pools: [{id: p, model: m, deployments: [a]}]
routes: [{model: m, pool: p}]
`), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := catalog.Build(cfg, "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false} {
		var out bytes.Buffer
		g, err := openGateway(ctx, catalog.NewHolder(snap), slog.New(slog.DiscardHandler), &out)
		if err != nil {
			t.Fatal(err)
		}
		g.close(ctx)
		if got := strings.Contains(out.String(), "created a new, empty ledger at "+path); got != want {
			t.Errorf("start %d: announced a new ledger = %v, want %v:\n%s", i+1, got, want, out.String())
		}
	}
}
