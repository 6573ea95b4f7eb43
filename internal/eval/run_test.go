package eval

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/mock"
	"github.com/spillway-gw/spillway/internal/provider"
	"github.com/spillway-gw/spillway/internal/provider/anthropic"
	"github.com/spillway-gw/spillway/internal/provider/openai"
)

func testRegistry() *provider.Registry {
	r := provider.NewRegistry()
	r.Register(catalog.KindOpenAI, openai.New())
	r.Register(catalog.KindAnthropic, anthropic.New())
	return r
}

// startMock runs a mock provider; Close releases stalled answers first.
func startMock(t *testing.T, kind, name, fault string) string {
	t.Helper()
	m, err := mock.New(kind, mock.Options{Name: name, Fault: fault, APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m)
	t.Cleanup(func() { m.Close(); srv.Close() })
	return srv.URL
}

// closedURL is a loopback address nothing listens on.
func closedURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// testPool builds a pool "p" of one deployment per (id, kind, url, extra
// YAML) row.
func testPool(t *testing.T, rows ...[4]string) (*catalog.Pool, []*catalog.Deployment) {
	t.Helper()
	var b strings.Builder
	b.WriteString("deployments:\n")
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r[0]
		fmt.Fprintf(&b, "  - {id: %s, provider: %s, base_url: %q, model: m-%s, funding: byok, credential_env: EVAL_TEST_KEY%s}\n", r[0], r[1], r[2], r[1], r[3])
	}
	fmt.Fprintf(&b, "pools:\n  - id: p\n    model: exact\n    deployments: [%s]\n", strings.Join(ids, ", "))
	if len(rows) > 1 {
		b.WriteString("    equivalence: {by: t, date: \"2026-01-01\", evidence: e}\n")
	}
	b.WriteString("routes: [{model: exact, pool: p}]\n")
	c, err := catalog.Parse([]byte(b.String()), "t.yaml", catalog.WithLookupEnv(func(string) (string, bool) { return "", false }))
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	snap, err := catalog.Build(c, "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pool, deps, err := Pool(snap, "p")
	if err != nil {
		t.Fatal(err)
	}
	return pool, deps
}

func parse(t *testing.T, lines ...string) *Golden {
	t.Helper()
	g, err := ParseGolden(strings.NewReader(strings.Join(lines, "\n")), "g.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func opts(getenv func(string) string) Options {
	if getenv == nil {
		getenv = func(string) string { return "k" }
	}
	return Options{Registry: testRegistry(), Getenv: getenv, Timeout: 5 * time.Second}
}

// A deployment that cannot answer is reported case by case with what
// went wrong, under a stable name; the run itself completes.
func TestRunReportsBrokenDeployments(t *testing.T) {
	g := parse(t,
		goldenLine("a", chatReq, `{"finish_reason":"stop"}`),
		goldenLine("b", `{"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_object"}}`, `{"json":true}`))
	tests := []struct {
		name   string
		kind   string
		url    string
		extra  string
		getenv func(string) string
		max    int
		want   [2]string // status/check of case a, then b
		why    string    // in case a's reason
	}{
		{name: "unreachable", kind: "openai", url: closedURL(t), want: [2]string{"error/unreachable", "error/unreachable"}, why: "connection refused"},
		{name: "silent after the headers", kind: "openai", url: startMock(t, "openai", "x", "stall"), extra: ", timeouts: {first_byte: 150ms}",
			want: [2]string{"error/timeout", "error/timeout"}, why: "first_byte"},
		{name: "silent mid-stream", kind: "openai", url: startMock(t, "openai", "x", "stall_after=1"), extra: ", timeouts: {idle: 150ms}",
			want: [2]string{"error/timeout", "error/timeout"}, why: "idle"},
		{name: "provider error", kind: "openai", url: startMock(t, "openai", "x", "status=503"), want: [2]string{"error/http_503", "error/http_503"}, why: "provider_unavailable (status 503)"},
		{name: "wrong credential", kind: "openai", url: startMock(t, "openai", "x", ""), getenv: func(string) string { return "wrong" },
			want: [2]string{"error/http_401", "error/http_401"}, why: "provider_authentication"},
		{name: "credential not set", kind: "openai", url: startMock(t, "openai", "x", ""), getenv: func(string) string { return "" },
			want: [2]string{"error/no_credential", "error/no_credential"}, why: "EVAL_TEST_KEY is not set"},
		{name: "answer past the bound", kind: "openai", url: startMock(t, "openai", "x", "tokens=200"), max: 100,
			want: [2]string{"error/answer_too_large", "pass/"}},
		{name: "feature the adapter cannot send", kind: "anthropic", url: startMock(t, "anthropic", "x", ""),
			want: [2]string{"pass/", "unsupported/unsupported"}},
		{name: "feature the deployment declares it lacks", kind: "openai", url: startMock(t, "openai", "x", ""), extra: ", capabilities: {json_mode: false}",
			want: [2]string{"pass/", "unsupported/unsupported"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pool, deps := testPool(t, [4]string{"d", tc.kind, tc.url, tc.extra})
			o := opts(tc.getenv)
			o.MaxAnswerBytes = tc.max
			start := time.Now()
			r, err := Run(context.Background(), pool, deps, g, o)
			if err != nil {
				t.Fatal(err)
			}
			if el := time.Since(start); el > 3*time.Second {
				t.Errorf("took %v", el)
			}
			cs := r.Deployments[0].Cases
			for i, c := range cs {
				got := string(c.Status) + "/"
				if len(c.Misses) > 0 {
					got += c.Misses[0].Check
				}
				if got != tc.want[i] {
					t.Errorf("case %s: %s %+v, want %s", c.Case, got, c.Misses, tc.want[i])
				}
			}
			if tc.why != "" && (len(cs[0].Misses) == 0 || !strings.Contains(cs[0].Misses[0].Why, tc.why)) {
				t.Errorf("case a: %+v, want a reason with %q", cs[0].Misses, tc.why)
			}
			if r.Summary.Equivalent {
				t.Error("a run with a broken deployment is evidence of equivalence")
			}
		})
	}
}

// The mocks answer deterministically: the same deployments give the same
// evidence hash on every run, and a deployment that answers differently
// gives another, with the case named as divergent.
func TestRunEvidenceIsStable(t *testing.T) {
	g := parse(t,
		goldenLine("one", chatReq, `{"finish_reason":"stop"}`),
		goldenLine("tool", toolReq, `{"tool_call":{"name":"get_weather","arguments":{"city":"Paris"},"schema":"request"}}`))
	a, b := startMock(t, "openai", "a", ""), startMock(t, "anthropic", "b", "")
	pool, deps := testPool(t, [4]string{"a", "openai", a, ""}, [4]string{"b", "anthropic", b, ""})
	run := func() *Report {
		r, err := Run(context.Background(), pool, deps, g, opts(nil))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r1, r2 := run(), run()
	if !r1.Summary.Equivalent || r1.Evidence != r2.Evidence || !strings.HasPrefix(r1.Evidence, "sha256:") || len(r1.Hex()) != 64 {
		t.Fatalf("runs differ or fail: %+v\n%s %s", r1.Summary, r1.Evidence, r2.Evidence)
	}
	if len(r1.Summary.Divergent) != 0 || r1.Summary.PassRate != 1 || r1.Deployments[1].Passed != 2 {
		t.Errorf("summary %+v", r1.Summary)
	}

	diverging := startMock(t, "anthropic", "b", `args={"town":"Paris"}`)
	pool, deps = testPool(t, [4]string{"a", "openai", a, ""}, [4]string{"b", "anthropic", diverging, ""})
	r3, err := Run(context.Background(), pool, deps, g, opts(nil))
	if err != nil {
		t.Fatal(err)
	}
	s := r3.Summary
	if s.Equivalent || r3.Evidence == r1.Evidence || len(s.Divergent) != 1 || s.Divergent[0] != "tool" || s.Failed != 1 || s.Passed != 3 || s.PassRate != 0.75 {
		t.Errorf("diverging run: %+v %s", s, r3.Evidence)
	}
	if c := r3.Deployments[1].Cases[1]; c.Status != StatusFail || len(c.Misses) != 2 || c.Misses[0].Check != "tool_call.arguments" || c.Misses[1].Check != "tool_call.schema" {
		t.Errorf("diverging case: %+v", c)
	}
}

// A cancelled run stops and says so, rather than reporting half a run.
func TestRunCancelled(t *testing.T) {
	g := parse(t, goldenLine("a", chatReq, `{"finish_reason":"stop"}`))
	pool, deps := testPool(t, [4]string{"d", "openai", startMock(t, "openai", "x", "stall"), ""})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	if r, err := Run(ctx, pool, deps, g, opts(nil)); err == nil {
		t.Fatalf("report %+v, want an error", r.Summary)
	}
}

func TestPoolNotFound(t *testing.T) {
	c, err := catalog.Parse([]byte("deployments: [{id: d, provider: openai, base_url: \"http://x\", model: m, funding: byok}]\n"+
		"pools: [{id: p, model: m, deployments: [d]}, {id: e, model: e, kind: embeddings, deployments: [d]}]\nroutes: [{model: m, pool: p}, {model: e, pool: e}]\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := catalog.Build(c, "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Pool(snap, "nope"); err == nil || err.Error() != `no pool "nope" in the config (its pools: e, p)` {
		t.Errorf("unknown pool: %v", err)
	}
	if _, _, err := Pool(snap, "e"); err == nil || !strings.Contains(err.Error(), "serves embeddings") {
		t.Errorf("embeddings pool: %v", err)
	}
}
