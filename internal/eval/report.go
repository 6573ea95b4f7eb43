package eval

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spillway-gw/spillway/internal/catalog"
)

// Format names the report's format; the evidence hash covers it, so a
// change of what the hash covers is a new format.
const Format = "spillway-eval/1"

// EvidencePrefix starts an evidence hash as a pool's equivalence.evidence
// cites it: "sha256:<64 hex digits>".
const EvidencePrefix = "sha256:"

// Status is one case's outcome on one deployment.
type Status string

const (
	// StatusPass: the answer met every expectation.
	StatusPass Status = "pass"
	// StatusFail: an answer came, and missed an expectation.
	StatusFail Status = "fail"
	// StatusError: no usable answer came (unreachable, a provider error,
	// a timeout, a missing credential, an answer past the size bound).
	StatusError Status = "error"
	// StatusUnsupported: the deployment cannot take the request (its
	// adapter or declared capabilities say so); routing skips it for
	// such requests, and it certifies nothing for them.
	StatusUnsupported Status = "unsupported"
)

// Report is a run's outcome, written as JSON by `spillway eval --json`.
type Report struct {
	Format string `json:"format"`
	// Evidence is the evidence hash ("sha256:<hex>"): see ComputeEvidence.
	Evidence string `json:"evidence"`
	// Pool is the pool's id; Model its exact model.
	Pool   string     `json:"pool"`
	Model  string     `json:"model"`
	Golden GoldenInfo `json:"golden"`
	// Started is when the run began (UTC); DurationMS how long it took.
	Started    time.Time `json:"started"`
	DurationMS float64   `json:"duration_ms"`
	// Deployments are the pool's deployments, in pool order.
	Deployments []DeploymentResult `json:"deployments"`
	Summary     Summary            `json:"summary"`
}

// GoldenInfo names the golden file a report ran.
type GoldenInfo struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Cases  int    `json:"cases"`
}

// DeploymentResult is one deployment's outcome, case by case in file order.
type DeploymentResult struct {
	ID       string `json:"id"`
	Provider string `json:"provider"`
	// Model is the provider's own model id.
	Model string       `json:"model"`
	Cases []CaseResult `json:"cases"`
	Tally
}

// CaseResult is one case on one deployment.
type CaseResult struct {
	Case   string `json:"case"`
	Status Status `json:"status"`
	// Misses say what went wrong: each expectation missed (fail), or the
	// error's kind (unreachable, timeout, http_NNN, a failure class,
	// no_credential, answer_too_large) or "unsupported", with why.
	Misses []Miss `json:"misses,omitempty"`
	// Finish is the answer's finish_reason; OutputTokens its reported
	// output; LatencyMS the whole answer's time. Not in the evidence hash.
	Finish       string  `json:"finish_reason,omitempty"`
	OutputTokens int     `json:"output_tokens,omitempty"`
	LatencyMS    float64 `json:"latency_ms,omitempty"`
}

// Tally counts outcomes; PassRate is Passed over all, 0 to 1.
type Tally struct {
	Passed      int     `json:"passed"`
	Failed      int     `json:"failed"`
	Errors      int     `json:"errors"`
	Unsupported int     `json:"unsupported"`
	PassRate    float64 `json:"pass_rate"`
}

func (t *Tally) add(s Status) {
	switch s {
	case StatusPass:
		t.Passed++
	case StatusFail:
		t.Failed++
	case StatusError:
		t.Errors++
	case StatusUnsupported:
		t.Unsupported++
	}
}

func (t *Tally) total() int { return t.Passed + t.Failed + t.Errors + t.Unsupported }

func (t *Tally) rate() {
	if n := t.total(); n > 0 {
		t.PassRate = float64(t.Passed) / float64(n)
	}
}

// Summary is the whole run's outcome.
type Summary struct {
	Deployments int `json:"deployments"`
	Cases       int `json:"cases"`
	Tally
	// Equivalent: every deployment passed every case. Only then is the
	// report evidence for an equivalence certification.
	Equivalent bool `json:"equivalent"`
	// Divergent lists the cases whose outcome is not the same on every
	// deployment (in file order): where the pool answers differently
	// depending on which deployment serves.
	Divergent []string `json:"divergent"`
}

// summarize fills the tallies and the summary.
func (r *Report) summarize() {
	s := Summary{Deployments: len(r.Deployments), Cases: r.Golden.Cases, Divergent: []string{}}
	for i := range r.Deployments {
		d := &r.Deployments[i]
		d.Tally = Tally{}
		for _, c := range d.Cases {
			d.add(c.Status)
			s.add(c.Status)
		}
		d.rate()
	}
	s.rate()
	s.Equivalent = s.total() > 0 && s.Passed == s.total()
	if len(r.Deployments) > 0 {
		for k, c := range r.Deployments[0].Cases {
			for _, d := range r.Deployments[1:] {
				if k >= len(d.Cases) || !sameOutcome(&c, &d.Cases[k]) {
					s.Divergent = append(s.Divergent, c.Case)
					break
				}
			}
		}
	}
	r.Summary = s
}

func sameOutcome(a, b *CaseResult) bool {
	return a.Status == b.Status && slices.Equal(checks(a.Misses), checks(b.Misses))
}

func checks(ms []Miss) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Check
	}
	return out
}

// evidenceDoc is what the evidence hash covers, encoded as compact JSON
// (encoding/json: struct fields in this order, slices in report order):
// the format, the golden file's digest, the pool and its exact model, and
// per deployment its id, provider model id and each case's id, status and
// the names of what it missed. Timings, reasons' wording and the answers
// themselves are left out, so the same deployments answering the same way
// give the same hash on every run.
type evidenceDoc struct {
	Format      string        `json:"format"`
	Golden      string        `json:"golden_sha256"`
	Pool        string        `json:"pool"`
	Model       string        `json:"model"`
	Deployments []evidenceDep `json:"deployments"`
}

type evidenceDep struct {
	ID    string         `json:"id"`
	Model string         `json:"model"`
	Cases []evidenceCase `json:"cases"`
}

type evidenceCase struct {
	Case   string   `json:"case"`
	Status Status   `json:"status"`
	Missed []string `json:"missed"`
}

// ComputeEvidence returns the evidence hash of the report's contents,
// "sha256:<hex>".
func (r *Report) ComputeEvidence() string {
	doc := evidenceDoc{Format: r.Format, Golden: r.Golden.SHA256, Pool: r.Pool, Model: r.Model, Deployments: []evidenceDep{}}
	for _, d := range r.Deployments {
		ed := evidenceDep{ID: d.ID, Model: d.Model, Cases: []evidenceCase{}}
		for _, c := range d.Cases {
			ed.Cases = append(ed.Cases, evidenceCase{Case: c.Case, Status: c.Status, Missed: checks(c.Misses)})
		}
		doc.Deployments = append(doc.Deployments, ed)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic(err) // strings and slices only: cannot fail
	}
	sum := sha256.Sum256(b)
	return EvidencePrefix + hex.EncodeToString(sum[:])
}

// Hex is the evidence hash's hex digits, the name of the report in an
// evidence directory (<hex>.json).
func (r *Report) Hex() string { return strings.TrimPrefix(r.Evidence, EvidencePrefix) }

// WriteJSON writes the report, indented.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

// WriteFile writes the report's JSON to path, through a temporary file
// renamed into place, so a reader never sees half a report.
func (r *Report) WriteFile(path string) error {
	tmp, err := os.CreateTemp(dirOf(path), ".eval-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := r.WriteJSON(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func dirOf(path string) string {
	if i := strings.LastIndexAny(path, `/\`); i >= 0 {
		return path[:i+1]
	}
	return "."
}

// MaxReportBytes bounds a report read back: MaxCases cases on a few
// dozen deployments, with their reasons.
const MaxReportBytes = 64 << 20

// ReadReport reads a report written by WriteJSON.
func ReadReport(path string) (*Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxReportBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxReportBytes {
		return nil, fmt.Errorf("%s: larger than %d MiB: not an eval report", path, MaxReportBytes>>20)
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: not an eval report: %v", path, jsonError(err))
	}
	if r.Format != Format {
		return nil, fmt.Errorf("%s: format %q, want %q (an eval report of this spillway)", path, r.Format, Format)
	}
	return &r, nil
}

// Certifies says why the report is not evidence that pool (with deps, its
// deployments) is equivalent; nil when it is. The report must be intact
// (its contents hash to its evidence), of the same pool and exact model,
// of exactly the pool's deployments (ids and provider model ids; order
// aside), and every case must have passed on every deployment.
func (r *Report) Certifies(pool *catalog.Pool, deps []*catalog.Deployment) error {
	if got := r.ComputeEvidence(); got != r.Evidence {
		return fmt.Errorf("the report's contents hash to %s, not to the %s it is named for: it was changed after it was written", got, r.Evidence)
	}
	if r.Pool != pool.ID || r.Model != pool.Model {
		return fmt.Errorf("the report is of pool %s (model %s), not %s (model %s)", r.Pool, r.Model, pool.ID, pool.Model)
	}
	want := make([]string, 0, len(deps))
	for _, d := range deps {
		want = append(want, d.ID+" ("+d.Model+")")
	}
	got := make([]string, 0, len(r.Deployments))
	for _, d := range r.Deployments {
		got = append(got, d.ID+" ("+d.Model+")")
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(want, got) {
		return fmt.Errorf("the report ran deployments %s; the pool has %s: run spillway eval again", strings.Join(got, ", "), strings.Join(want, ", "))
	}
	var bad []string
	for _, d := range r.Deployments {
		for _, c := range d.Cases {
			if c.Status != StatusPass {
				bad = append(bad, d.ID+"/"+c.Case+" "+string(c.Status))
			}
		}
		if len(d.Cases) != r.Golden.Cases {
			bad = append(bad, fmt.Sprintf("%s ran %d of %d cases", d.ID, len(d.Cases), r.Golden.Cases))
		}
	}
	if len(bad) > 0 {
		if len(bad) > 5 {
			bad = append(bad[:5], fmt.Sprintf("and %d more", len(bad)-5))
		}
		return errors.New("not every case passed on every deployment: " + strings.Join(bad, ", "))
	}
	return nil
}

// WriteTable writes the report for a person: every case on every
// deployment with what it missed, then a line per deployment, the
// divergent cases and the evidence hash.
func (r *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "pool %s (model %s): %d cases from %s (sha256 %s…) on %d deployments\n\n",
		r.Pool, r.Model, r.Golden.Cases, r.Golden.Path, short(r.Golden.SHA256), len(r.Deployments))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DEPLOYMENT\tCASE\tRESULT\tFINISH\tMS\tWHY")
	for _, d := range r.Deployments {
		for _, c := range d.Cases {
			why := "-"
			if len(c.Misses) > 0 {
				parts := make([]string, len(c.Misses))
				for i, m := range c.Misses {
					parts[i] = m.Check + ": " + m.Why
				}
				why = strings.Join(parts, "; ")
			}
			finish := c.Finish
			if finish == "" {
				finish = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.1f\t%s\n", d.ID, c.Case, c.Status, finish, c.LatencyMS, why)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, d := range r.Deployments {
		fmt.Fprintf(tw, "%s\t%s %s\t%d/%d passed (%.1f%%)%s\n", d.ID, d.Provider, d.Model, d.Passed, d.total(), 100*d.PassRate, others(&d.Tally))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	s := &r.Summary
	fmt.Fprintf(w, "\nall: %d/%d passed (%.1f%%)%s\n", s.Passed, s.total(), 100*s.PassRate, others(&s.Tally))
	if len(s.Divergent) > 0 {
		fmt.Fprintf(w, "divergent cases (not the same outcome on every deployment): %s\n", strings.Join(s.Divergent, ", "))
	}
	fmt.Fprintf(w, "evidence: %s\n", r.Evidence)
	if s.Equivalent {
		fmt.Fprintf(w, "every deployment passed every case: pools[%s].equivalence.evidence may cite %s\n", r.Pool, r.Evidence)
	} else {
		fmt.Fprintln(w, "not every deployment passed every case: this report is no evidence of equivalence")
	}
	return nil
}

func others(t *Tally) string {
	var parts []string
	for _, p := range []struct {
		n    int
		what string
	}{{t.Failed, "failed"}, {t.Errors, "error"}, {t.Unsupported, "unsupported"}} {
		switch {
		case p.n == 1 || p.what != "error" && p.n > 0:
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
		case p.n > 1:
			parts = append(parts, fmt.Sprintf("%d errors", p.n))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return ", " + strings.Join(parts, ", ")
}

func short(hex string) string {
	if len(hex) > 12 {
		return hex[:12]
	}
	return hex
}
