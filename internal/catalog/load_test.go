package catalog

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// want is one expected problem: its line, field path and a piece of its
// message.
type want struct {
	line  int
	field string
	msg   string
}

// requireProblems checks that every wanted problem is among ps.
func requireProblems(t *testing.T, ps Problems, wants ...want) {
	t.Helper()
	for _, w := range wants {
		found := false
		for _, p := range ps {
			if p.Line == w.line && p.Field == w.field && strings.Contains(p.Msg, w.msg) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("missing problem %d: %s: ...%s...; got:\n%s", w.line, w.field, w.msg, ps.Error())
		}
	}
}

func parseProblems(t *testing.T, src string) Problems {
	t.Helper()
	c, err := Parse([]byte(src), "test.yaml")
	if err == nil {
		t.Fatalf("Parse accepted:\n%s", src)
	}
	if c != nil {
		t.Errorf("Parse returned a config with an error")
	}
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("error is %T, not Problems: %v", err, err)
	}
	for _, p := range ps {
		if p.File != "test.yaml" {
			t.Errorf("problem without file: %+v", p)
		}
	}
	return ps
}

// minimal is the smallest valid config; decode cases break one piece.
const minimal = `deployments:
  - id: d1
    provider: openai
    base_url: https://api.openai.com
    model: gpt-4.1
    price: {input_per_mtok: 2, output_per_mtok: 8}
pools:
  - id: p1
    model: gpt-4.1
    deployments: [d1]
routes:
  - model: gpt-4.1
    pool: p1
`

func TestParseDecodeRefusals(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		wants []want
	}{
		{"empty file", ``, []want{{0, "", "file is empty"}}},
		{"only comments", "# nothing\n\n", []want{{0, "", "file is empty"}}},
		{"null document", "~\n", []want{{1, "", "file is empty"}}},
		{"not a mapping", "- a\n- b\n", []want{{1, "", "expected a mapping"}}},
		{"syntax error", "routes: [\n", []want{{1, "", "invalid YAML"}}},
		{"tab indentation", "server:\n\tlisten: x\n", []want{{2, "", "invalid YAML"}}},
		{"two documents", minimal + "---\nroutes: []\n", []want{{14, "", "second YAML document"}}},
		{"unknown top-level key", minimal + "rutes: []\n", []want{{14, "rutes", `did you mean "routes"`}}},
		{"unknown key lists known", "colour: red\n" + minimal, []want{{1, "colour", "known: deployments, idempotency, ledger, log, pools, routes, routing, server"}}},
		{"unknown nested key", strings.Replace(minimal, "    model: gpt-4.1\n    price", "    model: gpt-4.1\n    timeouts: {conect: 1s}\n    price", 1),
			[]want{{6, "deployments[0].timeouts.conect", `did you mean "connect"`}}},
		{"unknown key in server", "server:\n  listen: x\n  max_body: 3\n" + minimal, []want{{3, "server.max_body", "unknown key"}}},
		{"duplicate key", strings.Replace(minimal, "    model: gpt-4.1\n    price", "    model: gpt-4.1\n    model: other\n    price", 1),
			[]want{{6, "deployments[0].model", "duplicate key (first at line 5)"}}},
		{"merge key", "server:\n  <<: {listen: a}\n" + minimal, []want{{2, "server", "merge keys (<<) are not supported"}}},
		{"wrong type: string for int", "server:\n  max_body_bytes: lots\n" + minimal, []want{{2, "server.max_body_bytes", `expected a whole number, got "lots"`}}},
		{"wrong type: float for int", strings.Replace(minimal, "    price", "    context_window: 1.5\n    price", 1), []want{{6, "deployments[0].context_window", "expected a whole number"}}},
		{"wrong type: list for string", strings.Replace(minimal, "model: gpt-4.1\n    price", "model: [a]\n    price", 1), []want{{5, "deployments[0].model", "expected a string, got a list"}}},
		{"wrong type: mapping for list", strings.Replace(minimal, "deployments: [d1]", "deployments: {d1: x}", 1), []want{{10, "pools[0].deployments", "expected a list, got a mapping"}}},
		{"wrong type: scalar for mapping", "server: yes\n" + minimal, []want{{1, "server", "expected a mapping"}}},
		{"wrong type: price", strings.Replace(minimal, "input_per_mtok: 2", "input_per_mtok: two", 1), []want{{6, "deployments[0].price.input_per_mtok", `expected a number, got "two"`}}},
		{"bad duration", "server:\n  idle_timeout: 5 minutes\n" + minimal, []want{{2, "server.idle_timeout", `invalid duration "5 minutes"`}}},
		{"duration without unit", "server:\n  idle_timeout: 30\n" + minimal, []want{{2, "server.idle_timeout", "has no unit"}}},
		{"negative duration", "server:\n  shutdown_grace: -1s\n" + minimal, []want{{2, "server.shutdown_grace", "negative"}}},
		{"duration as mapping", "server:\n  shutdown_grace: {s: 1}\n" + minimal, []want{{2, "server.shutdown_grace", "expected a duration"}}},
		{"several problems at once", "server:\n  listen: [x]\n  idle_timeout: soon\nbogus: 1\n" + minimal,
			[]want{{2, "server.listen", "expected a string"}, {3, "server.idle_timeout", "invalid duration"}, {4, "bogus", "unknown key"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			requireProblems(t, parseProblems(t, tc.src), tc.wants...)
		})
	}
}

func TestDecodeErrorSuppressesItsEcho(t *testing.T) {
	// id failed to decode, so "id: required" would only repeat it.
	src := strings.Replace(minimal, "id: d1", "id: [d1]", 1)
	ps := parseProblems(t, src)
	for _, p := range ps {
		if p.Field == "deployments[0].id" && strings.Contains(p.Msg, "required") {
			t.Errorf("echo of a decode problem: %v", p)
		}
	}
	requireProblems(t, ps, want{2, "deployments[0].id", "expected a string"})
}

func TestParseMinimalAndDefaults(t *testing.T) {
	c, err := Parse([]byte(minimal), "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := c.Server
	if s.Listen != "127.0.0.1:8080" || s.MaxBodyBytes != 8<<20 || s.ReadHeaderTimeout.D() != 10*time.Second ||
		s.IdleTimeout.D() != 120*time.Second || s.ShutdownGrace.D() != 30*time.Second {
		t.Errorf("server defaults: %+v", s)
	}
	d := c.Deployments[0]
	if d.Funding != FundingHost {
		t.Errorf("funding default %q", d.Funding)
	}
	if got, want := d.Timeouts, (Timeouts{Duration(5 * time.Second), Duration(15 * time.Second), Duration(30 * time.Second), Duration(10 * time.Minute)}); got != want {
		t.Errorf("timeouts %+v, want %+v", got, want)
	}
	if d.Line != 2 || c.Pools[0].Line != 8 || c.Routes[0].Line != 12 {
		t.Errorf("lines: deployment %d pool %d route %d", d.Line, c.Pools[0].Line, c.Routes[0].Line)
	}
}

func TestApplyDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   Timeouts
		want Timeouts
	}{
		{"all defaults", Timeouts{}, Timeouts{dur("5s"), dur("15s"), dur("30s"), dur("10m")}},
		{"set values kept", Timeouts{dur("1s"), dur("2s"), dur("3s"), dur("4s")}, Timeouts{dur("1s"), dur("2s"), dur("3s"), dur("4s")}},
		{"short total caps defaults", Timeouts{Total: dur("10s")}, Timeouts{dur("5s"), dur("10s"), dur("10s"), dur("10s")}},
		{"tiny total", Timeouts{Total: dur("1s")}, Timeouts{dur("1s"), dur("1s"), dur("1s"), dur("1s")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &Config{Deployments: []Deployment{{Timeouts: tc.in, BaseURL: "https://x.example/", Funding: FundingBYOK}}}
			c.ApplyDefaults()
			c.ApplyDefaults() // idempotent
			d := c.Deployments[0]
			if d.Timeouts != tc.want {
				t.Errorf("got %+v, want %+v", d.Timeouts, tc.want)
			}
			if d.BaseURL != "https://x.example" || d.Funding != FundingBYOK {
				t.Errorf("base_url %q funding %q", d.BaseURL, d.Funding)
			}
		})
	}
	c := &Config{Server: Server{Listen: ":9", MaxBodyBytes: 1, ShutdownGrace: dur("1s")}}
	c.ApplyDefaults()
	if c.Server.Listen != ":9" || c.Server.MaxBodyBytes != 1 || c.Server.ShutdownGrace != dur("1s") || c.Server.IdleTimeout != dur("120s") {
		t.Errorf("server: %+v", c.Server)
	}
}

func dur(s string) Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		panic(err)
	}
	return Duration(d)
}

func TestDurationYAML(t *testing.T) {
	src := "server:\n  read_header_timeout: 1.5s\n  idle_timeout: 200ms\n  shutdown_grace: 0\n" + minimal
	c, err := Parse([]byte(src), "d.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.ReadHeaderTimeout != dur("1.5s") || c.Server.IdleTimeout != dur("200ms") || c.Server.ShutdownGrace != dur("30s") {
		t.Errorf("%+v", c.Server)
	}
	v, err := dur("1m30s").MarshalYAML()
	if err != nil || v != "1m30s" {
		t.Errorf("MarshalYAML = %v, %v", v, err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(t.TempDir() + "/nope.yaml")
	var ps Problems
	if !errors.As(err, &ps) || len(ps) != 1 || !strings.Contains(ps[0].Msg, "no such file") {
		t.Fatalf("err = %v", err)
	}
}

func TestProblemString(t *testing.T) {
	tests := []struct {
		p    Problem
		want string
	}{
		{Problem{"a.yaml", 3, "routes[0].pool", "unknown pool"}, "a.yaml:3: routes[0].pool: unknown pool"},
		{Problem{"a.yaml", 0, "", "file is empty"}, "a.yaml: file is empty"},
		{Problem{"", 4, "x", "m"}, "line 4: x: m"},
		{Problem{"", 0, "", "m"}, "m"},
	}
	for _, tc := range tests {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("%+v: got %q, want %q", tc.p, got, tc.want)
		}
	}
	ps := Problems{tests[0].p, tests[1].p}
	if got := ps.Error(); got != "a.yaml:3: routes[0].pool: unknown pool\na.yaml: file is empty" {
		t.Errorf("Error() = %q", got)
	}
	if Problems(nil).Err() != nil || ps.Err() == nil {
		t.Error("Err")
	}
}
