package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/spillway-gw/spillway/internal/catalog"
)

const checkUsage = `usage: spillway check <config.yaml>

Reads the config as "serve" would, and prints every error and warning
(file:line: field: message), then a summary. Exit status: 0 when the config
would be served, 1 when it has errors, 2 on wrong usage.
`

// runCheck implements "spillway check <config.yaml>".
func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return checkWithEnv(ctx, args, stdout, stderr, os.LookupEnv)
}

// checkWithEnv is runCheck with the environment injected, for tests.
func checkWithEnv(_ context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, checkUsage) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprint(stderr, checkUsage)
		return 2
	}
	path := fs.Arg(0)
	data, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintf(stderr, "spillway check: %v\n", err)
		return 1
	}

	cfg, errs, warns := catalog.Check(data, path)
	if cfg != nil {
		warns = append(warns, cfg.MissingCredentials(path, lookupEnv)...)
	}
	for _, p := range errs {
		fmt.Fprintln(stdout, p.String())
	}
	for _, p := range warns {
		fmt.Fprintln(stdout, "warning: "+p.String())
	}

	var nd, np, nr int
	if cfg != nil {
		nd, np, nr = len(cfg.Deployments), len(cfg.Pools), len(cfg.Routes)
	}
	verdict := "ok"
	if len(errs) > 0 {
		verdict = "refused: " + checkPlural(len(errs), "error")
	}
	if len(warns) > 0 {
		verdict += ", " + checkPlural(len(warns), "warning")
	}
	fmt.Fprintf(stdout, "%s: %s, %s, %s: %s\n", path,
		checkPlural(nd, "deployment"), checkPlural(np, "pool"), checkPlural(nr, "route"), verdict)
	if len(errs) > 0 {
		return 1
	}
	return 0
}

func checkPlural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
