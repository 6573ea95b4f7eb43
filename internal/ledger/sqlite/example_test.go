package sqlite_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/ledger/sqlite"
)

// The gateway's life with its ledger: open, release what a crash left
// open, reserve and settle through the group-commit writer, report usage.
func Example() {
	dir, err := os.MkdirTemp("", "ledger")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	store, err := sqlite.Open(ctx, filepath.Join(dir, "ledger.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	released, err := store.RecoverOpen(ctx, "") // before any writer runs ("": a writer without a journal owns none)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("released at start-up:", len(released))

	w := ledger.NewWriter(store, ledger.WriterOptions{})
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	w.Reserve(ledger.Reservation{RequestID: "req_1", KeyID: "key_1", Org: "acme",
		PublicModel: "claude-sonnet-4-5", AmountMicro: 60_000, CreatedAt: at})
	// ... the primary answers 529, the secondary serves ...
	err = w.Settle(ctx, &ledger.Settlement{ // just before the final byte
		Request: ledger.Request{RequestID: "req_1", KeyID: "key_1", Org: "acme",
			PublicModel: "claude-sonnet-4-5", ExactModel: "claude-sonnet-4-5", Deployment: "bedrock-us",
			RouteDepth: 1, Attempts: 2, Status: ledger.StatusOK, InputTokens: 900, OutputTokens: 250,
			CostMicroUSD: 6450, CostStatus: ledger.CostPriced, StartedAt: at, FinishedAt: at.Add(2 * time.Second)},
		Attempts: []ledger.Attempt{
			{Seq: 0, Deployment: "anthropic", FailureClass: "provider_unavailable", HTTPStatus: 529, StartedAt: at},
			{Seq: 1, Deployment: "bedrock-us", HTTPStatus: 200, InputTokens: 900, OutputTokens: 250,
				CostMicroUSD: 6450, StartedAt: at},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := w.Close(ctx); err != nil {
		log.Fatal(err)
	}

	rows, err := store.Usage(ctx, ledger.UsageQuery{GroupBy: []string{"day", "deployment"}})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range rows {
		fmt.Printf("%s %s: %d request, %d failed over, %d attempts, %d µ$\n",
			r.Group["day"], r.Group["deployment"], r.Requests, r.FailedOver, r.Attempts, r.CostMicroUSD)
	}
	// Output:
	// released at start-up: 0
	// 2026-03-01 bedrock-us: 1 request, 1 failed over, 2 attempts, 6450 µ$
}
