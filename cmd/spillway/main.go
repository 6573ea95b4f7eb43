// Command spillway is an LLM gateway: one binary that serves the gateway,
// validates its config, runs mock providers and demonstrates failover.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
)

const usage = `spillway: an LLM gateway that fails over without surprises

usage:
  spillway serve  [--config FILE] [--listen ADDR] [--mocks]   run the gateway (--mocks: with built-in mock providers)
  spillway check  [--evidence-dir DIR] FILE        validate a config, print every problem with its line
                                                   (and verify the eval reports pools cite)
  spillway mock   --kind openai|anthropic|bedrock|gemini [--listen ADDR] [--fault SCRIPT]
                                                   run one fault-injecting mock provider
  spillway demo   [--config FILE]                  mocks + gateway + traffic; take the primary down mid-run
  spillway drill  [--short] [--requests N] [--concurrency C] [--seed S] [--json FILE]
                                                   seeded chaos run; fails on a broken invariant
  spillway bench  [--duration D] [--concurrency 32,128] [--pin ...] [--json FILE]
                                                   CPU, latency, RSS: mock vs bare proxy vs spillway
  spillway eval   --pool P --golden FILE.jsonl [--json FILE] [--evidence-dir DIR] [--mocks]
                                                   run a golden set on every deployment of a pool: evidence hash
  spillway health [--url URL]                      a running gateway's deployment health (SPILLWAY_ADMIN_KEY)
  spillway explain --model M [--max-tokens N] [--url URL]
                                                   how a running gateway would route a request (SPILLWAY_ADMIN_KEY)
  spillway quality [--json] [--url URL] | quality clear --pool P --deployment D
                                                   answer-quality signals and divergence alerts (SPILLWAY_ADMIN_KEY)
  spillway keys create --org O --team T [--budget-usd N --daily-cap-usd N --rpm N --tpm N --models a,b]
  spillway keys list | keys revoke KEY_ID          virtual keys, in the ledger
  spillway budgets set --scope org|team|key|model --id ID [--credit-usd N ...] | budgets list
  spillway usage [--from D --to D --group-by model,deployment --format table|csv|json]
  spillway ledger repair [--db FILE]               rewrite ledger rows with impossible figures (the gateway also does at start)
  spillway admin rotate [--db FILE]                a new admin key, printed once; earlier ones stop working
  spillway version                                 this binary's version, VCS revision and Go version
  spillway help [COMMAND]                          this text, or a command's flags

Run "spillway <command> --help" for a command's flags.
`

// commands maps each command to what runs it. Commands with subcommands
// (keys, budgets, ledger) list them in subs: a help request goes to the
// subcommand named before it.
var commands = map[string]struct {
	run  func(ctx context.Context, args []string, stdout, stderr io.Writer) error
	subs []string
}{
	"serve":   {run: runServe},
	"check":   {run: runCheckErr},
	"mock":    {run: runMock},
	"demo":    {run: runDemo},
	"drill":   {run: runDrill},
	"bench":   {run: runBench},
	"health":  {run: runHealth},
	"explain": {run: runExplain},
	"quality": {run: runQuality, subs: qualitySubs},
	"eval":    {run: runEval},
	"keys":    {run: runKeys, subs: keysSubs},
	"budgets": {run: runBudgets, subs: budgetsSubs},
	"usage":   {run: runUsage},
	"ledger":  {run: runLedger, subs: ledgerSubs},
	"version": {run: runVersion},
	"admin":   {run: runAdmin, subs: adminSubs},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs one command and returns the process's exit status: 0 on
// success and for --help, 2 on wrong usage (an unknown command,
// subcommand, flag or flag value), 1 when the command failed.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "help", "-h", "-help", "--help":
		if len(rest) > 0 && !helpRequested(rest[:1]) {
			if _, ok := commands[rest[0]]; ok {
				return run(ctx, []string{rest[0], "--help"}, stdout, stderr)
			}
			fmt.Fprintf(stderr, "spillway help: unknown command %q\n\n%s", rest[0], usage)
			return 2
		}
		fmt.Fprint(stdout, usage)
		return 0
	case "bench-proxy": // the baseline proxy bench runs as a child of bench
		return exitCode(stderr, cmd, runBench(ctx, args, stdout, stderr))
	}
	c, ok := commands[cmd]
	if !ok {
		fmt.Fprintf(stderr, "spillway: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	if helpRequested(rest) {
		// Help wins over everything else on the line, and goes to stdout
		// (the commands print usage on their error output: it is stdout here).
		rest = helpArgs(rest, c.subs)
		stderr = stdout
	}
	label := cmd // "keys create": errors name the subcommand too
	if len(rest) > 0 && slices.Contains(c.subs, rest[0]) {
		label += " " + rest[0]
	}
	return exitCode(stderr, label, c.run(ctx, rest, stdout, stderr))
}

// exitCode reports err on stderr and maps it to the exit status.
func exitCode(stderr io.Writer, cmd string, err error) int {
	var ue *usageError
	var ce checkExit
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ce):
		return int(ce) // check has printed its findings
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "spillway %s: %v\n", cmd, err)
		return 2
	}
	fmt.Fprintf(stderr, "spillway %s: %v\n", cmd, err)
	return 1
}

// helpRequested reports whether args ask for help anywhere before a "--".
func helpRequested(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// helpArgs is the argument list that shows the help args asked for: the
// subcommand named first (if any), then -h.
func helpArgs(args, subs []string) []string {
	if len(subs) > 0 && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return []string{args[0], "-h"}
	}
	return []string{"-h"}
}

// usageError is wrong usage: an unknown subcommand, flag or flag value.
// The command exits 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, a ...any) error {
	return &usageError{msg: fmt.Sprintf(format, a...)}
}

// newFlags returns the flag set of "spillway <name>". Its usage, printed
// on --help, is synopsis followed by the flags.
func newFlags(name, synopsis string, output io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(output)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), strings.TrimRight(synopsis, "\n")+"\n")
		var hasFlags bool
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprintln(fs.Output(), "\nflags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parseFlags parses args into fs, flags before and after the arguments
// alike ("keys revoke KEY_ID --config FILE"; after "--" everything is an
// argument), leaving the arguments in fs.Args. --help prints fs's usage and
// returns flag.ErrHelp; a bad flag is a usageError naming it, without the
// usage (one line that says where the flags are listed).
func parseFlags(fs *flag.FlagSet, args []string) error {
	out := fs.Output()
	fs.SetOutput(io.Discard)
	var positional []string
	var err error
	for {
		if err = fs.Parse(args); err != nil {
			break
		}
		rest := fs.Args()
		if n := len(args) - len(rest); len(rest) == 0 || (n > 0 && args[n-1] == "--") {
			positional = append(positional, rest...)
			break
		}
		positional, args = append(positional, rest[0]), rest[1:]
	}
	if err == nil {
		err = fs.Parse(append([]string{"--"}, positional...)) // fs.Args = the arguments
	}
	fs.SetOutput(out)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
		return flag.ErrHelp
	case err != nil:
		return usageErrorf("%v (spillway %s --help lists the flags)", err, fs.Name())
	}
	return nil
}

// noArgs refuses arguments left after the flags.
func noArgs(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return usageErrorf("unexpected arguments %q (spillway %s --help lists the flags)", fs.Args(), fs.Name())
	}
	return nil
}

// parseFlagsOnly is parseFlags for a command that takes flags only: an
// argument left after them is refused (noArgs).
func parseFlagsOnly(fs *flag.FlagSet, args []string) error {
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	return noArgs(fs)
}

// subcommand splits args into a group's subcommand and its arguments.
// With no subcommand, or -h, it prints the group's usage (to stderr as a
// usage error, or for -h as help) and returns an error to return.
func subcommand(group, groupUsage string, subs, args []string, stderr io.Writer) (string, []string, error) {
	if len(args) == 0 {
		fmt.Fprint(stderr, groupUsage)
		return "", nil, usageErrorf("which %s command? (%s)", group, strings.Join(subs, ", "))
	}
	switch sub := args[0]; {
	case sub == "-h" || sub == "-help" || sub == "--help":
		fmt.Fprint(stderr, groupUsage)
		return "", nil, flag.ErrHelp
	case !slices.Contains(subs, sub):
		return "", nil, usageErrorf("unknown %s command %q (%s commands: %s)", group, sub, group, strings.Join(subs, ", "))
	default:
		return sub, args[1:], nil
	}
}
