package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/spillway-gw/spillway/internal/catalog"
)

const checkUsage = `usage: spillway check [--evidence-dir DIR] <config.yaml>
       spillway check [--evidence-dir DIR] --config <config.yaml>

Reads the config as "serve" would, and prints every error and warning
(file:line: field: message), then a summary. A pool's certification older
than its equivalence.max_age (default 90d) is a warning.

With --evidence-dir, each certification that cites an eval report
(equivalence.evidence: sha256:<hex>, as spillway eval prints it) is
verified against DIR/<hex>.json: a report that is missing, altered, of other
deployments or with a case that did not pass is an error; evidence that
cites no report is a warning.

Exit status: 0 when the config would be served (and its cited evidence
holds), 1 when it has errors, 2 on wrong usage.
`

// checkExit is check's exit status as an error, for run: check has printed
// its findings or its usage already.
type checkExit int

func (c checkExit) Error() string { return fmt.Sprintf("exit status %d", int(c)) }

// runCheckErr is runCheck in the shape of the other commands.
func runCheckErr(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if code := runCheck(ctx, args, stdout, stderr); code != 0 {
		return checkExit(code)
	}
	return nil
}

// runCheck implements "spillway check <config.yaml>".
func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return checkWithEnv(ctx, args, stdout, stderr, os.LookupEnv)
}

// checkWithEnv is runCheck with the environment injected, for tests.
func checkWithEnv(_ context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	// fs.Output, not stderr: parseFlags silences the flag package's own
	// usage on a bad flag and prints one line of its own.
	fs.Usage = func() { fmt.Fprint(fs.Output(), checkUsage) }
	evidenceDir := fs.String("evidence-dir", "", "verify the eval reports pools cite (sha256:<hex>) against DIR/<hex>.json")
	// --config as serve, keys and budgets take it.
	configPath := fs.String("config", "", "the config to check, as serve takes it (or give it as the argument)")
	if err := parseFlags(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "spillway check: %v\n", err)
		fmt.Fprint(stderr, checkUsage)
		return 2
	}
	path := *configPath
	switch {
	case path == "" && fs.NArg() == 1:
		path = fs.Arg(0)
	case path == "" || fs.NArg() != 0:
		fmt.Fprint(stderr, checkUsage)
		return 2
	}
	data, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintf(stderr, "spillway check: %v\n", err)
		return 1
	}

	cfg, errs, warns := catalog.Check(data, path, catalog.WithLookupEnv(lookupEnv))
	if cfg != nil {
		warns = append(warns, cfg.MissingCredentials(path, lookupEnv)...)
		_, dsn := cfg.LedgerDSN(path, lookupEnv) // postgres: its variable unset or empty
		warns = append(warns, dsn...)
		_, redisURL := cfg.SharedStateURL(path, lookupEnv) // shared_state redis: its variable unset or empty
		warns = append(warns, redisURL...)
		warns = append(warns, cfg.DueCertifications(path, time.Now())...)
		if *evidenceDir != "" {
			e, w := verifyEvidence(cfg, path, *evidenceDir)
			errs, warns = append(errs, e...), append(warns, w...)
		}
	}
	errs, warns = hideSecrets(data, path, cfg, errs, warns)
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

// secretPrefixes start well-known API keys and tokens.
var secretPrefixes = []string{
	"sk-", "sk_", "pk_", "rk_", // OpenAI, Anthropic (sk-ant-), Stripe-style keys
	"AKIA", "ASIA", // AWS access key ids
	"AIza",                                // Google API keys
	"ghp_", "gho_", "ghs_", "github_pat_", // GitHub tokens
	"xox",            // Slack tokens
	"eyJ",            // a JWT's base64 header
	"Bearer ", "hf_", // a pasted header; Hugging Face tokens
}

// envNameRE is how an environment variable's name usually reads: upper-case
// words joined by underscores.
var envNameRE = regexp.MustCompile(`^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+$`)

// looksLikeSecret reports whether v, written where the name of an
// environment variable belongs, looks like a credential itself: a
// well-known key prefix, or a long high-entropy string that does not read
// as a variable name.
func looksLikeSecret(v string) bool {
	for _, p := range secretPrefixes {
		if strings.HasPrefix(v, p) {
			return true
		}
	}
	if len(v) < 20 || envNameRE.MatchString(v) {
		return false
	}
	var lower, upper, digit bool
	counts := map[rune]int{}
	for _, r := range v {
		switch {
		case r >= 'a' && r <= 'z':
			lower = true
		case r >= 'A' && r <= 'Z':
			upper = true
		case r >= '0' && r <= '9':
			digit = true
		}
		counts[r]++
	}
	classes := 0
	for _, b := range []bool{lower, upper, digit} {
		if b {
			classes++
		}
	}
	// Shannon entropy in bits per character: random keys score 4 and more,
	// words (even in mixed case) less than 3.5.
	var h float64
	n := float64(len([]rune(v)))
	for _, c := range counts {
		p := float64(c) / n
		h -= p * math.Log2(p)
	}
	return classes >= 2 && h >= 3.5
}

// credentialFields reads, loosely (whatever else is wrong with the file),
// each deployment's fields that name environment variables, by problem
// field path ("deployments[0].credential_env").
func credentialFields(data []byte) map[string]string {
	var doc struct {
		Deployments []struct {
			CredentialEnv string `yaml:"credential_env"`
			AWS           struct {
				AccessKeyEnv    string `yaml:"access_key_env"`
				SecretKeyEnv    string `yaml:"secret_key_env"`
				SessionTokenEnv string `yaml:"session_token_env"`
			} `yaml:"aws"`
		} `yaml:"deployments"`
	}
	_ = yaml.Unmarshal(data, &doc) // a file that does not decode echoes no values
	out := map[string]string{}
	for i, d := range doc.Deployments {
		at := fmt.Sprintf("deployments[%d].", i)
		for name, v := range map[string]string{"credential_env": d.CredentialEnv, "aws.access_key_env": d.AWS.AccessKeyEnv,
			"aws.secret_key_env": d.AWS.SecretKeyEnv, "aws.session_token_env": d.AWS.SessionTokenEnv} {
			if v != "" {
				out[at+name] = v
			}
		}
	}
	return out
}

// hideSecrets keeps check from echoing a credential written where the
// name of its environment variable belongs: the problem about that field
// says so without the value (an error stays an error; a value the config
// accepted as a name gets a warning), and the value is cut from every
// other problem.
func hideSecrets(data []byte, file string, cfg *catalog.Config, errs, warns catalog.Problems) (catalog.Problems, catalog.Problems) {
	secrets := map[string]string{}
	for field, v := range credentialFields(data) {
		if looksLikeSecret(v) {
			secrets[field] = v
		}
	}
	if len(secrets) == 0 {
		return errs, warns
	}
	said := map[string]bool{}
	scrub := func(ps catalog.Problems) catalog.Problems {
		out := make(catalog.Problems, 0, len(ps))
		for _, p := range ps {
			if v, ok := secrets[p.Field]; ok {
				if said[p.Field] {
					continue // one message per field
				}
				said[p.Field] = true
				p.Msg = secretMsg(p.Field, v)
			}
			for _, v := range secrets {
				p.Msg = strings.ReplaceAll(p.Msg, v, "<redacted>")
			}
			out = append(out, p)
		}
		return out
	}
	errs, warns = scrub(errs), scrub(warns)
	for _, field := range slices.Sorted(maps.Keys(secrets)) {
		if said[field] {
			continue
		}
		p := catalog.Problem{File: file, Field: field, Msg: secretMsg(field, secrets[field])}
		var i int
		if _, err := fmt.Sscanf(field, "deployments[%d]", &i); err == nil && cfg != nil && i < len(cfg.Deployments) {
			p.Line = cfg.Deployments[i].Line
		}
		warns = append(warns, p)
	}
	return errs, warns
}

func secretMsg(field, v string) string {
	name := field[strings.LastIndex(field, ".")+1:]
	return fmt.Sprintf("this value (%d characters, not shown) looks like a secret, not a variable name: put the NAME of "+
		"the environment variable that holds it in %s (e.g. OPENAI_API_KEY) and the secret in that variable, never in the file "+
		"(rotate it if this file was shared)", len(v), name)
}
