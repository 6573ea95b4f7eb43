package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/eval"
)

const evalUsage = `usage: spillway eval --pool P --golden FILE.jsonl [--config FILE] [--json FILE] [--evidence-dir DIR]
                     [--timeout 60s] [--mocks]

Runs a golden set against every deployment of a pool, straight through each
deployment's adapter (no health gating, no failover), and prints per
deployment per case whether the answer met the case's expectations and why
not, then the evidence hash that the pool's equivalence.evidence can cite
(sha256:<hex>). The golden file has one JSON object per line: an id, a
request in OpenAI Chat Completions shape, and what every answer must meet
(text, json, json_equals, schema, required, tool_call, finish_reason,
refusal). --evidence-dir writes the report as DIR/<hex>.json, where
"spillway check --evidence-dir DIR" finds it.

Exit status: 0 when every deployment passed every case, 1 otherwise (the
report is written all the same), 2 on wrong usage.
`

func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("eval", evalUsage, stderr)
	cfgFlag := fs.String("config", "", "config file (default: $"+configEnv+", else ./"+defaultConfigFile+")")
	poolID := fs.String("pool", "", "the pool to evaluate (required)")
	golden := fs.String("golden", "", "the golden set, one JSON case per line (required)")
	jsonOut := fs.String("json", "", "also write the report as JSON to this file")
	evidenceDir := fs.String("evidence-dir", "", "also write the report as DIR/<evidence hex>.json")
	timeout := fs.Duration("timeout", eval.DefaultTimeout, "bound on one case on one deployment (the deployment's own timeouts apply too)")
	withMocks := fs.Bool("mocks", false, "run the built-in mock provider of every loopback deployment on its configured address first")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	switch {
	case *poolID == "":
		return usageErrorf("--pool is required (the id of a pool in the config)")
	case *golden == "":
		return usageErrorf("--golden is required (a .jsonl file of cases)")
	case *timeout <= 0:
		return usageErrorf("--timeout must be positive")
	}
	cfgPath, err := findConfig(*cfgFlag)
	if err != nil {
		return err
	}
	snap, err := catalog.LoadSnapshot(cfgPath)
	if err != nil {
		return err
	}
	pool, deps, err := eval.Pool(snap, *poolID)
	if npe := (*eval.NoPoolError)(nil); errors.As(err, &npe) {
		return usageErrorf("%v in %s", err, cfgPath)
	} else if err != nil {
		return err
	}
	g, err := readGolden(*golden)
	if err != nil {
		return err
	}
	if *withMocks {
		mocks := newMockSet(stderr, slog.New(slog.NewTextHandler(stderr, nil)))
		if err := mocks.sync(snap, true); err != nil {
			return err
		}
		defer mocks.close()
	}
	rep, err := eval.Run(ctx, pool, deps, g, eval.Options{Registry: registry(), Timeout: *timeout})
	if err != nil {
		return err
	}
	if err := rep.WriteTable(stdout); err != nil {
		return err
	}
	if *evidenceDir != "" {
		if err := os.MkdirAll(*evidenceDir, 0o755); err != nil {
			return fmt.Errorf("writing the report: %w", err)
		}
	}
	for _, path := range reportPaths(*jsonOut, *evidenceDir, rep) {
		if err := rep.WriteFile(path); err != nil {
			return fmt.Errorf("writing the report: %w", err)
		}
		fmt.Fprintf(stdout, "report: %s\n", path)
	}
	if s := rep.Summary; !s.Equivalent {
		return fmt.Errorf("%d of %d results did not pass (see the table above)", s.Failed+s.Errors+s.Unsupported, s.Deployments*s.Cases)
	}
	return nil
}

// readGolden opens and parses a golden file.
func readGolden(path string) (*eval.Golden, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return eval.ParseGolden(f, path)
}

// reportPaths lists where the report goes: --json, and <hex>.json in
// --evidence-dir.
func reportPaths(jsonOut, dir string, rep *eval.Report) []string {
	var out []string
	if jsonOut != "" {
		out = append(out, jsonOut)
	}
	if dir != "" {
		out = append(out, filepath.Join(dir, rep.Hex()+".json"))
	}
	return out
}

// verifyEvidence checks, for spillway check --evidence-dir, each pool
// certification that cites an eval report (sha256:<hex>) against
// dir/<hex>.json: the report must be there, intact, of this pool and its
// deployments, and passed. Evidence citing no report is a warning: nothing
// can verify it.
func verifyEvidence(cfg *catalog.Config, file, dir string) (errs, warns catalog.Problems) {
	deps := make(map[string]*catalog.Deployment, len(cfg.Deployments))
	for i := range cfg.Deployments {
		deps[cfg.Deployments[i].ID] = &cfg.Deployments[i]
	}
	for i := range cfg.Pools {
		pl := &cfg.Pools[i]
		e := pl.Equivalence
		if e == nil {
			continue
		}
		p := catalog.Problem{File: file, Line: pl.Line, Field: fmt.Sprintf("pools[%d].equivalence.evidence", i)}
		hexs, ok := strings.CutPrefix(strings.TrimSpace(e.Evidence), eval.EvidencePrefix)
		if !ok || !isEvidenceHex(hexs) {
			p.Msg = fmt.Sprintf("%q cites no eval report (sha256:<64 hex digits>, as spillway eval prints it): nothing verifies pool %q", e.Evidence, pl.ID)
			warns = append(warns, p)
			continue
		}
		rp := filepath.Join(dir, hexs+".json")
		rep, err := eval.ReadReport(rp)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			p.Msg = fmt.Sprintf("no eval report %s in %s (spillway eval --pool %s --golden FILE --evidence-dir %s writes it)", hexs+".json", dir, pl.ID, dir)
		case err != nil:
			p.Msg = err.Error()
		case rep.Evidence != eval.EvidencePrefix+hexs:
			p.Msg = fmt.Sprintf("%s is the report %s, not %s", rp, rep.Evidence, e.Evidence)
		default:
			ds := make([]*catalog.Deployment, 0, len(pl.Deployments))
			for _, id := range pl.Deployments {
				if d, ok := deps[id]; ok {
					ds = append(ds, d)
				}
			}
			if err := rep.Certifies(pl, ds); err != nil {
				p.Msg = fmt.Sprintf("%s does not certify pool %q: %v", rp, pl.ID, err)
			}
		}
		if p.Msg != "" {
			errs = append(errs, p)
		}
	}
	return errs, warns
}

// isEvidenceHex reports whether s is a SHA-256 in lower-case hex.
func isEvidenceHex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
