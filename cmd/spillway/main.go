// Command spillway is an LLM gateway: one binary that serves the gateway,
// validates its config, runs mock providers and demonstrates failover.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `spillway: an LLM gateway that fails over without surprises

usage:
  spillway serve  [--config FILE] [--mocks]        run the gateway (--mocks: with built-in mock providers)
  spillway check  FILE                             validate a config, print every problem with its line
  spillway mock   --kind openai|anthropic [...]    run a fault-injecting mock provider
  spillway demo   [--config FILE]                  mocks + gateway + traffic; take the primary down mid-run
  spillway drill  [--short] [--requests N] [--concurrency C] [--seed S] [--json FILE]  seeded chaos run; fails on a broken invariant
  spillway bench  [--duration D] [--concurrency 32,128] [--pin ...] [--json FILE]  CPU, latency, RSS: mock vs bare proxy vs spillway
  spillway health [--url URL]                      a running gateway's deployment health (SPILLWAY_ADMIN_KEY)
  spillway explain --model M [--max-tokens N]      how a running gateway would route a request (SPILLWAY_ADMIN_KEY)
  spillway keys create --org O --team T [--budget-usd N --daily-cap-usd N --rpm N --tpm N --models a,b]
  spillway keys list | keys revoke KEY_ID          virtual keys, in the ledger
  spillway budgets set --scope org|team|key|model --id ID [--credit-usd N ...] | budgets list
  spillway usage [--from --to --group-by model,deployment --format table|csv|json]
  spillway ledger repair [--db FILE]               rewrite ledger rows with impossible figures (the gateway also does at start)

Run "spillway <command> --help" for a command's flags.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, rest := args[0], args[1:]
	var err error
	switch cmd {
	case "serve":
		err = runServe(ctx, rest, stdout, stderr)
	case "check":
		return runCheck(ctx, rest, stdout, stderr)
	case "mock":
		err = runMock(ctx, rest, stdout)
	case "demo":
		err = runDemo(ctx, rest, stdout, stderr)
	case "drill":
		err = runDrill(ctx, rest, stdout, stderr)
	case "bench", "bench-proxy": // bench-proxy: the baseline proxy bench runs as a child
		err = runBench(ctx, args, stdout, stderr)
	case "health":
		err = runHealth(ctx, rest, stdout, stderr)
	case "explain":
		err = runExplain(ctx, rest, stdout, stderr)
	case "keys":
		err = runKeys(ctx, rest, stdout, stderr)
	case "budgets":
		err = runBudgets(ctx, rest, stdout, stderr)
	case "usage":
		err = runUsage(ctx, rest, stdout, stderr)
	case "ledger":
		err = runLedger(ctx, rest, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "spillway: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "spillway %s: %v\n", cmd, err)
		return 1
	}
	return 0
}
