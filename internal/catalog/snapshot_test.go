package catalog

import (
	"flag"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "rewrite golden files")

// render describes a snapshot in a stable text form for golden files.
func render(t *testing.T, s *Snapshot) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "models: %v\n", s.Models())
	for _, m := range s.Models() {
		r, ok := s.Route(m)
		if !ok {
			t.Fatalf("Models lists %q but Route does not find it", m)
		}
		fmt.Fprintf(&b, "route %s -> pool %s (exact model %s, line %d)\n", r.Public, r.Pool.ID, r.Pool.Model, r.Pool.Line)
		for i, d := range r.Deployments {
			fmt.Fprintf(&b, "  %d. %s %s %s model=%s funding=%s priced=%v ceiling=%d timeouts=%s/%s/%s/%s line=%d\n",
				i+1, d.ID, d.Provider, d.BaseURL, d.Model, d.Funding, d.Priced(), d.OutputCeiling(0),
				d.Timeouts.Connect, d.Timeouts.FirstByte, d.Timeouts.Idle, d.Timeouts.Total, d.Line)
		}
	}
	b.WriteString("deployments:")
	for _, d := range s.Deployments() {
		b.WriteString(" " + d.ID)
	}
	b.WriteString("\n--- config as served\n")
	out, err := yaml.Marshal(s.Config())
	if err != nil {
		t.Fatal(err)
	}
	b.Write(out)
	return b.String()
}

func TestSnapshotGolden(t *testing.T) {
	const in, golden = "testdata/snapshot.yaml", "testdata/snapshot.golden"
	c, err := Load(in)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Build(c, in)
	if err != nil {
		t.Fatal(err)
	}
	got := render(t, s)
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("snapshot differs from %s (go test -update rewrites it):\n%s", golden, got)
	}

	// The served config, written back out, reads back as itself.
	out, _ := yaml.Marshal(s.Config())
	again, err := Parse(out, "roundtrip.yaml")
	if err != nil {
		t.Fatalf("round trip: %v\n%s", err, out)
	}
	clearLines(again)
	served := s.Config().Clone()
	clearLines(served)
	if !reflect.DeepEqual(again, served) {
		t.Errorf("round trip differs:\n%+v\n%+v", again, served)
	}
}

func clearLines(c *Config) {
	c.lines = nil
	for i := range c.Deployments {
		c.Deployments[i].Line = 0
	}
	for i := range c.Pools {
		c.Pools[i].Line = 0
	}
	for i := range c.Routes {
		c.Routes[i].Line = 0
	}
}

func TestSnapshotLookups(t *testing.T) {
	c, err := Parse([]byte(base), "base.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Build(c, "base.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Route("nope"); ok {
		t.Error("unknown model resolved")
	}
	if _, ok := s.Deployment("nope"); ok {
		t.Error("unknown deployment found")
	}
	r, _ := s.Route("m")
	if d, _ := s.Deployment("b"); r.Deployments[1] != d {
		t.Error("route and Deployment disagree about b")
	}
	// Results are the caller's slices; the snapshot does not change.
	s.Models()[0] = "x"
	s.Deployments()[0] = nil
	if s.Models()[0] != "m" || s.Deployments()[0] == nil {
		t.Error("snapshot changed through a returned slice")
	}
}

func TestBuildIsolatesTheSnapshot(t *testing.T) {
	c := &Config{
		Deployments: []Deployment{{ID: "a", Provider: KindOpenAI, BaseURL: "https://x.example/", Model: "m", Price: &Price{InputPerMTok: 1}}},
		Pools:       []Pool{{ID: "p", Model: "m", Deployments: []string{"a"}}},
		Routes:      []Route{{Model: "m", Pool: "p"}},
	}
	s, err := Build(c, "")
	if err != nil {
		t.Fatal(err)
	}
	if c.Deployments[0].Funding != "" || c.Deployments[0].BaseURL != "https://x.example/" {
		t.Error("Build changed its argument")
	}
	c.Deployments[0].Price.InputPerMTok = 99
	c.Pools[0].Deployments[0] = "zz"
	d, _ := s.Deployment("a")
	if d.Price.InputPerMTok != 1 || s.Config().Pools[0].Deployments[0] != "a" {
		t.Error("a change to the Config reached the snapshot")
	}
	if d.Funding != FundingHost || d.BaseURL != "https://x.example" {
		t.Errorf("defaults not applied: %+v", d)
	}

	c.Pools[0].Deployments[0] = "a"
	c.Routes[0].Pool = "missing"
	_, err = Build(c, "x.yaml")
	if ps, ok := err.(Problems); !ok || len(ps) != 1 || ps[0].Field != "routes[0].pool" {
		t.Errorf("Build of a bad config: %v", err)
	}
}
