package eval

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/catalog"
)

func sampleReport() *Report {
	r := &Report{
		Format: Format, Pool: "p", Model: "exact",
		Golden:  GoldenInfo{Path: "g.jsonl", SHA256: strings.Repeat("a", 64), Cases: 2},
		Started: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		Deployments: []DeploymentResult{
			{ID: "a", Provider: "openai", Model: "m-a", Cases: []CaseResult{{Case: "one", Status: StatusPass, LatencyMS: 3}, {Case: "two", Status: StatusPass}}},
			{ID: "b", Provider: "anthropic", Model: "m-b", Cases: []CaseResult{{Case: "one", Status: StatusPass}, {Case: "two", Status: StatusPass}}},
		},
	}
	r.summarize()
	r.Evidence = r.ComputeEvidence()
	return r
}

// The hash covers the golden file, the pool, its model, each deployment
// and its provider model, and each outcome, and nothing that varies from
// run to run (timings, the wording of reasons, the golden file's path).
func TestEvidenceCovers(t *testing.T) {
	base := sampleReport().Evidence
	tests := []struct {
		name    string
		change  func(r *Report)
		differs bool
	}{
		{"golden file", func(r *Report) { r.Golden.SHA256 = strings.Repeat("b", 64) }, true},
		{"pool", func(r *Report) { r.Pool = "q" }, true},
		{"exact model", func(r *Report) { r.Model = "other" }, true},
		{"deployment id", func(r *Report) { r.Deployments[1].ID = "c" }, true},
		{"provider model id", func(r *Report) { r.Deployments[1].Model = "m-b-2" }, true},
		{"an outcome", func(r *Report) { r.Deployments[1].Cases[1].Status = StatusFail }, true},
		{"what was missed", func(r *Report) {
			r.Deployments[1].Cases[1].Status = StatusFail
			r.Deployments[1].Cases[1].Misses = []Miss{{Check: "text", Why: "w"}}
		}, true},
		{"a case dropped", func(r *Report) { r.Deployments[1].Cases = r.Deployments[1].Cases[:1] }, true},
		{"latency", func(r *Report) { r.Deployments[0].Cases[0].LatencyMS = 900; r.DurationMS = 5 }, false},
		{"start time", func(r *Report) { r.Started = r.Started.Add(time.Hour) }, false},
		{"golden path", func(r *Report) { r.Golden.Path = "/elsewhere/g.jsonl" }, false},
		{"finish and tokens", func(r *Report) { r.Deployments[0].Cases[0].Finish, r.Deployments[0].Cases[0].OutputTokens = "stop", 9 }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := sampleReport()
			tc.change(r)
			if got := r.ComputeEvidence(); (got != base) != tc.differs {
				t.Errorf("hash changed: %v, want %v", got != base, tc.differs)
			}
		})
	}
	r := sampleReport()
	r.Deployments[1].Cases[1] = CaseResult{Case: "two", Status: StatusFail, Misses: []Miss{{Check: "text", Why: "one wording"}}}
	h := r.ComputeEvidence()
	r.Deployments[1].Cases[1].Misses[0].Why = "another wording"
	if r.ComputeEvidence() != h {
		t.Error("the wording of a reason changes the hash")
	}
}

// A report certifies a pool only intact, of that pool, of exactly its
// deployments, and with every case passed everywhere.
func TestCertifies(t *testing.T) {
	pool := &catalog.Pool{ID: "p", Model: "exact", Deployments: []string{"b", "a"}}
	deps := []*catalog.Deployment{{ID: "b", Model: "m-b"}, {ID: "a", Model: "m-a"}}
	if err := sampleReport().Certifies(pool, deps); err != nil {
		t.Fatalf("a passing report of the pool (listed in another order): %v", err)
	}
	tests := []struct {
		name   string
		change func(r *Report) (*catalog.Pool, []*catalog.Deployment)
		want   string
	}{
		{"altered after writing", func(r *Report) (*catalog.Pool, []*catalog.Deployment) {
			r.Deployments[1].Cases[1].Status = StatusFail
			return pool, deps
		}, "it was changed after it was written"},
		{"another pool", func(r *Report) (*catalog.Pool, []*catalog.Deployment) {
			return &catalog.Pool{ID: "q", Model: "exact"}, deps
		}, "the report is of pool p (model exact), not q (model exact)"},
		{"a deployment added since", func(r *Report) (*catalog.Pool, []*catalog.Deployment) {
			return pool, append(deps[:2:2], &catalog.Deployment{ID: "c", Model: "m-c"})
		}, "the report ran deployments a (m-a), b (m-b); the pool has a (m-a), b (m-b), c (m-c)"},
		{"a provider model changed since", func(r *Report) (*catalog.Pool, []*catalog.Deployment) {
			return pool, []*catalog.Deployment{{ID: "b", Model: "m-b-2"}, deps[1]}
		}, "the pool has a (m-a), b (m-b-2)"},
		{"a case failed", func(r *Report) (*catalog.Pool, []*catalog.Deployment) {
			r.Deployments[1].Cases[1] = CaseResult{Case: "two", Status: StatusError, Misses: []Miss{{Check: "unreachable"}}}
			r.summarize()
			r.Evidence = r.ComputeEvidence()
			return pool, deps
		}, "not every case passed on every deployment: b/two error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := sampleReport()
			p, ds := tc.change(r)
			if err := r.Certifies(p, ds); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestReportFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	r := sampleReport()
	path := filepath.Join(dir, r.Hex()+".json")
	if err := r.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	back, err := ReadReport(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.ComputeEvidence() != r.Evidence || back.Evidence != r.Evidence || !back.Started.Equal(r.Started) {
		t.Errorf("read back %+v", back)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("left %d files behind", len(entries))
	}
	for name, content := range map[string]string{"not JSON": "{", "another format": `{"format":"x/9"}`} {
		p := filepath.Join(dir, "bad.json")
		os.WriteFile(p, []byte(content), 0o644)
		if _, err := ReadReport(p); err == nil {
			t.Errorf("%s: read", name)
		}
	}
}

func TestWriteTable(t *testing.T) {
	r := sampleReport()
	r.Deployments[1].Cases[1] = CaseResult{Case: "two", Status: StatusFail, Finish: "tool_calls",
		Misses: []Miss{{Check: "tool_call.arguments", Why: `$.city: missing, want "Paris"`}}}
	r.summarize()
	r.Evidence = r.ComputeEvidence()
	var b bytes.Buffer
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"pool p (model exact): 2 cases from g.jsonl (sha256 aaaaaaaaaaaa…) on 2 deployments",
		"DEPLOYMENT  CASE  RESULT  FINISH      MS   WHY",
		`b           two   fail    tool_calls  0.0  tool_call.arguments: $.city: missing, want "Paris"`,
		"a  openai m-a     2/2 passed (100.0%)",
		"b  anthropic m-b  1/2 passed (50.0%), 1 failed",
		"all: 3/4 passed (75.0%), 1 failed",
		"divergent cases (not the same outcome on every deployment): two",
		"evidence: " + r.Evidence,
		"this report is no evidence of equivalence",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}
