package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/eval"
	"github.com/spillway-gw/spillway/internal/mock"
)

var updateEvidence = flag.Bool("update-evidence", false, "rewrite examples/evidence and the evidence examples/mock.yaml cites from a run on the mocks")

const (
	exampleConfig = "../../examples/mock.yaml"
	exampleGolden = "../../examples/golden/sonnet.jsonl"
	exampleDir    = "../../examples/evidence"
)

// mockExample writes examples/mock.yaml with each deployment on its own
// httptest mock, named by its deployment id as serve --mocks names them;
// faults gives a deployment's mock-wide fault script, and an address of
// "closed" puts the deployment where nothing listens.
func mockExample(t *testing.T, faults map[string]string) string {
	t.Helper()
	data, err := os.ReadFile(exampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(data)
	for _, d := range []struct{ id, kind, addr string }{
		{"mock-primary", "openai", "127.0.0.1:9101"},
		{"mock-secondary", "anthropic", "127.0.0.1:9102"},
		{"mock-gpt", "openai", "127.0.0.1:9103"},
	} {
		var url string
		if faults[d.id] == "closed" {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			url = "http://" + ln.Addr().String()
			ln.Close()
		} else {
			m, err := mock.New(d.kind, mock.Options{Name: d.id, Fault: faults[d.id]})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(m)
			t.Cleanup(func() { m.Close(); srv.Close() })
			url = srv.URL
		}
		cfg = strings.ReplaceAll(cfg, "http://"+d.addr, url)
	}
	p := filepath.Join(t.TempDir(), "spillway.yaml")
	if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// cli runs one spillway command line in process.
func cli(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func readReport(t *testing.T, path string) *eval.Report {
	t.Helper()
	r, err := eval.ReadReport(path)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestEvalUsage(t *testing.T) {
	cfg := mockExample(t, nil)
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"no pool", []string{"eval", "--config", cfg, "--golden", exampleGolden}, 2, "--pool is required"},
		{"no golden file", []string{"eval", "--config", cfg, "--pool", "sonnet"}, 2, "--golden is required"},
		{"a pool that does not exist", []string{"eval", "--config", cfg, "--pool", "opus", "--golden", exampleGolden}, 2,
			`spillway eval: no pool "opus" in the config (its pools: gpt, sonnet) in ` + cfg},
		{"a golden file that does not exist", []string{"eval", "--config", cfg, "--pool", "sonnet", "--golden", "nope.jsonl"}, 1, "nope.jsonl: no such file"},
		{"a zero timeout", []string{"eval", "--config", cfg, "--pool", "sonnet", "--golden", exampleGolden, "--timeout", "0s"}, 2, "--timeout must be positive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errb := cli(t, tc.args...)
			if code != tc.code || !strings.Contains(errb, tc.stderr) {
				t.Errorf("exit %d, want %d; stderr %q lacks %q", code, tc.code, errb, tc.stderr)
			}
			if out != "" {
				t.Errorf("stdout: %s", out)
			}
		})
	}
}

// A golden file with bad lines runs nothing and names every bad line.
func TestEvalMalformedGolden(t *testing.T) {
	cfg := mockExample(t, nil)
	good, err := os.ReadFile(exampleGolden)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(good), "\n")
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	four := strings.TrimSuffix(strings.Replace(first, `"id":"one-token"`, `"id":"four"`, 1), "}") + `,"expected":{}}`
	os.WriteFile(bad, []byte(first+"\n"+`{"id":"two","request":{"messages":[]}`+"\n\n"+four+"\n"), 0o644)
	code, out, errb := cli(t, "eval", "--config", cfg, "--pool", "sonnet", "--golden", bad)
	if code != 1 || out != "" {
		t.Errorf("exit %d, stdout %q", code, out)
	}
	for _, want := range []string{bad + ":2: not a golden case (unexpected EOF)", bad + `:4: not a golden case (unknown field "expected")`} {
		if !strings.Contains(errb, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb)
		}
	}
}

// A deployment that answers a tool call with arguments of another shape
// fails that case, the report names the case as divergent, and check
// refuses the report as evidence.
func TestEvalDivergentDeployment(t *testing.T) {
	cfg := mockExample(t, map[string]string{"mock-secondary": `args={"town":"Paris"}`})
	dir := t.TempDir()
	jsonOut := filepath.Join(dir, "report.json")
	code, out, errb := cli(t, "eval", "--config", cfg, "--pool", "sonnet", "--golden", exampleGolden, "--json", jsonOut, "--evidence-dir", dir)
	if code != 1 || !strings.Contains(errb, "spillway eval: 1 of 12 results did not pass") {
		t.Fatalf("exit %d, stderr %s\n%s", code, errb, out)
	}
	for _, want := range []string{
		`mock-secondary  weather-tool   fail    tool_calls`,
		`tool_call.arguments: $.city: missing, want "Paris"; tool_call.schema: validating root: unexpected additional properties ["town"]`,
		"mock-primary    openai mock-sonnet     6/6 passed (100.0%)",
		"mock-secondary  anthropic mock-sonnet  5/6 passed (83.3%), 1 failed",
		"divergent cases (not the same outcome on every deployment): weather-tool",
		"this report is no evidence of equivalence",
		"report: " + jsonOut,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	r := readReport(t, jsonOut)
	if s := r.Summary; s.Equivalent || len(s.Divergent) != 1 || s.Divergent[0] != "weather-tool" || s.Failed != 1 || s.Passed != 11 {
		t.Errorf("summary %+v", s)
	}
	if d := r.Deployments[1]; d.ID != "mock-secondary" || d.Failed != 1 || d.Cases[3].Status != eval.StatusFail {
		t.Errorf("mock-secondary: %+v", d)
	}
	// Cited anyway, it does not pass check.
	cited := citing(t, cfg, r.Evidence)
	code, out, _ = cli(t, "check", cited, "--evidence-dir", dir)
	if code != 1 || !strings.Contains(out, `does not certify pool "sonnet": not every case passed on every deployment: mock-secondary/weather-tool fail`) {
		t.Errorf("check: exit %d\n%s", code, out)
	}
}

// citing writes a copy of the config whose sonnet pool cites evidence.
func citing(t *testing.T, cfg, evidence string) string {
	t.Helper()
	data, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := evidenceLine.ReplaceAll(data, []byte("evidence: "+evidence))
	p := filepath.Join(t.TempDir(), "cited.yaml")
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

var evidenceLine = regexp.MustCompile(`evidence: sha256:[0-9a-f]{64}`)

// A deployment nothing listens for is reported case by case as
// unreachable; the run completes and says it did not pass.
func TestEvalUnreachableDeployment(t *testing.T) {
	cfg := mockExample(t, map[string]string{"mock-secondary": "closed"})
	jsonOut := filepath.Join(t.TempDir(), "r.json")
	code, out, errb := cli(t, "eval", "--config", cfg, "--pool", "sonnet", "--golden", exampleGolden, "--json", jsonOut)
	if code != 1 || !strings.Contains(errb, "6 of 12 results did not pass") {
		t.Fatalf("exit %d, stderr %s", code, errb)
	}
	if !strings.Contains(out, "mock-secondary  anthropic mock-sonnet  0/6 passed (0.0%), 6 error") {
		t.Errorf("stdout:\n%s", out)
	}
	r := readReport(t, jsonOut)
	for _, c := range r.Deployments[1].Cases {
		if c.Status != eval.StatusError || len(c.Misses) != 1 || c.Misses[0].Check != "unreachable" || !strings.Contains(c.Misses[0].Why, "connection refused") {
			t.Errorf("case %s: %+v", c.Case, c)
		}
	}
	if r.Deployments[0].Passed != 6 {
		t.Errorf("mock-primary: %+v", r.Deployments[0].Tally)
	}
}

// The example's golden set passes on both mock deployments of
// examples/mock.yaml's sonnet pool; the evidence hash is the one the
// example cites, the report written to an evidence directory is what
// check verifies it against, and so is the report shipped in
// examples/evidence. go test -update-evidence rewrites both after a change
// to the golden set or the mocks.
func TestEvalMockExample(t *testing.T) {
	cfg := mockExample(t, nil)
	dir := t.TempDir()
	code, out, errb := cli(t, "eval", "--config", cfg, "--pool", "sonnet", "--golden", exampleGolden, "--evidence-dir", dir)
	if code != 0 || errb != "" {
		t.Fatalf("exit %d, stderr %s\n%s", code, errb, out)
	}
	m := regexp.MustCompile(`evidence: (sha256:[0-9a-f]{64})\n`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no evidence line:\n%s", out)
	}
	hash := m[1]
	for _, want := range []string{
		"pool sonnet (model claude-sonnet-4-5): 6 cases from " + exampleGolden,
		"mock-primary    openai mock-sonnet     6/6 passed (100.0%)",
		"mock-secondary  anthropic mock-sonnet  6/6 passed (100.0%)",
		"all: 12/12 passed (100.0%)\n",
		"every deployment passed every case: pools[sonnet].equivalence.evidence may cite " + hash,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	report := filepath.Join(dir, strings.TrimPrefix(hash, "sha256:")+".json")
	r := readReport(t, report)
	if r.Evidence != hash || !r.Summary.Equivalent || r.Summary.Passed != 12 || len(r.Summary.Divergent) != 0 {
		t.Errorf("report: %s %+v", r.Evidence, r.Summary)
	}
	if *updateEvidence {
		updateExampleEvidence(t, r)
	}

	example, err := os.ReadFile(exampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(example, []byte("evidence: "+hash+"\n")) {
		t.Errorf("%s does not cite %s, the evidence of its golden set on the mocks (go test ./cmd/spillway -run TestEvalMockExample -update-evidence)", exampleConfig, hash)
	}
	for _, evidenceDir := range []string{dir, exampleDir} {
		code, out, _ = cli(t, "check", exampleConfig, "--evidence-dir", evidenceDir)
		if code != 0 || out != exampleConfig+": 3 deployments, 2 pools, 2 routes: ok\n" {
			t.Errorf("check --evidence-dir %s: exit %d\n%s", evidenceDir, code, out)
		}
	}
}

// updateExampleEvidence replaces examples/evidence with r and makes the
// example cite it.
func updateExampleEvidence(t *testing.T, r *eval.Report) {
	old, _ := filepath.Glob(filepath.Join(exampleDir, "*.json"))
	for _, p := range old {
		os.Remove(p)
	}
	r.Golden.Path = "examples/golden/sonnet.jsonl"
	if err := os.MkdirAll(exampleDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteFile(filepath.Join(exampleDir, r.Hex()+".json")); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(exampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exampleConfig, evidenceLine.ReplaceAll(data, []byte("evidence: "+r.Evidence)), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("examples/evidence/%s.json written and cited", r.Hex())
}

// check --evidence-dir refuses evidence that does not hold, and check
// warns of a certification past its age whether or not it is given.
func TestCheckEvidence(t *testing.T) {
	cfg := mockExample(t, nil)
	dir := t.TempDir()
	if code, out, errb := cli(t, "eval", "--config", cfg, "--pool", "sonnet", "--golden", exampleGolden, "--evidence-dir", dir); code != 0 {
		t.Fatalf("eval: exit %d %s\n%s", code, errb, out)
	}
	reports, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(reports) != 1 {
		t.Fatalf("reports: %v", reports)
	}
	r := readReport(t, reports[0])
	edit := func(name string, f func(s string) string) string {
		data, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), name)
		os.WriteFile(p, []byte(f(string(data))), 0o644)
		return p
	}
	cited := citing(t, cfg, r.Evidence)
	tampered := t.TempDir()
	data, _ := os.ReadFile(reports[0])
	os.WriteFile(filepath.Join(tampered, r.Hex()+".json"), bytes.Replace(data, []byte(`"status": "pass"`), []byte(`"status": "fail"`), 1), 0o644)
	otherHash := t.TempDir()
	os.WriteFile(filepath.Join(otherHash, strings.Repeat("0", 64)+".json"), data, 0o644)
	grown := edit("grown.yaml", func(s string) string {
		return strings.Replace(evidenceLine.ReplaceAllString(s, "evidence: "+r.Evidence), "deployments: [mock-primary, mock-secondary]", "deployments: [mock-primary, mock-secondary, mock-gpt]", 1)
	})

	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no report in the directory", []string{"check", cited, "--evidence-dir", t.TempDir()}, 1,
			"pools[0].equivalence.evidence: no eval report " + r.Hex() + ".json in "},
		{"a report changed after it was written", []string{"check", cited, "--evidence-dir", tampered}, 1,
			"it was changed after it was written"},
		{"a report under another hash's name", []string{"check", edit("zero.yaml", func(s string) string {
			return evidenceLine.ReplaceAllString(s, "evidence: sha256:"+strings.Repeat("0", 64))
		}), "--evidence-dir", otherHash}, 1, "is the report " + r.Evidence + ", not sha256:000"},
		{"a deployment added to the pool since", []string{"check", grown, "--evidence-dir", dir}, 1,
			"the report ran deployments mock-primary (mock-sonnet), mock-secondary (mock-sonnet); the pool has mock-gpt (mock-gpt-4.1), mock-primary (mock-sonnet), mock-secondary (mock-sonnet): run spillway eval again"},
		{"evidence that cites no report (flags before the file)", []string{"check", "--evidence-dir", dir, edit("free.yaml", func(s string) string {
			return evidenceLine.ReplaceAllString(s, "evidence: ran it by hand")
		})}, 0, `pools[0].equivalence.evidence: "ran it by hand" cites no eval report (sha256:<64 hex digits>, as spillway eval prints it): nothing verifies pool "sonnet"`},
		{"a certification past its max_age", []string{"check", edit("old.yaml", func(s string) string {
			return strings.Replace(strings.Replace(s, `date: "2026-12-01"`, `date: "2020-01-01"`, 1), "max_age: 3650d", "max_age: 30d", 1)
		})}, 0, `pool "sonnet" was certified 2020-01-01, `},
		{"a certification past the default age", []string{"check", edit("default.yaml", func(s string) string {
			return strings.Replace(strings.Replace(s, `date: "2026-12-01"`, `date: "2020-01-01"`, 1), "max_age: 3650d", "", 1)
		})}, 0, "older than its max_age (90d); run spillway eval on it again and renew the certification"},
		{"the cited report holds", []string{"check", cited, "--evidence-dir", dir}, 0, ": 3 deployments, 2 pools, 2 routes: ok\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errb := cli(t, tc.args...)
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, want %d; stdout lacks %q:\n%s%s", code, tc.code, tc.want, out, errb)
			}
		})
	}
}

// An unparsable max_age is refused at its line.
func TestCheckMaxAgeRefused(t *testing.T) {
	data, err := os.ReadFile(exampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(p, bytes.Replace(data, []byte("max_age: 3650d"), []byte("max_age: ten years"), 1), 0o644)
	code, out, _ := cli(t, "check", p)
	if code != 1 || !regexp.MustCompile(`bad\.yaml:\d+: pools\[0\]\.equivalence\.max_age: age "ten years": want days \("90d"\) or a Go duration`).MatchString(out) {
		t.Errorf("exit %d\n%s", code, out)
	}
}

// The report's JSON has the documented top-level shape.
func TestEvalReportShape(t *testing.T) {
	cfg := mockExample(t, nil)
	jsonOut := filepath.Join(t.TempDir(), "r.json")
	if code, _, errb := cli(t, "eval", "--config", cfg, "--pool", "sonnet", "--golden", exampleGolden, "--json", jsonOut); code != 0 {
		t.Fatal(errb)
	}
	data, _ := os.ReadFile(jsonOut)
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"format", "evidence", "pool", "model", "golden", "started", "duration_ms", "deployments", "summary"} {
		if _, ok := top[k]; !ok {
			t.Errorf("report lacks %q", k)
		}
	}
	if len(top) != 9 {
		t.Errorf("report has %d keys", len(top))
	}
}
