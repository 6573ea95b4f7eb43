package route

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/health"
	"github.com/spillway-gw/spillway/internal/sticky"
)

// BenchmarkMakeSticky is BenchmarkMake with real pins and a real health
// tracker, on a five-rung route: "plain" with stickiness off (what
// BenchmarkMake measures, plus the tracker's reads), "sticky" (the
// default: the conversation key derived from a 1.2 KB prompt, its pin
// looked up and moved first) and "sticky+ranked" (also each rung priced,
// its median first-token latency read, and the five sorted). None
// allocates.
func BenchmarkMakeSticky(b *testing.B) {
	variants := []struct {
		name, opts string
		sticky     bool
		ranked     bool
	}{
		{"plain", ", sticky: {enabled: false}", false, false},
		{"sticky", "", true, false},
		{"sticky+ranked", ", rank: cost_latency", true, true},
	}
	for _, size := range []struct{ routes, deps int }{{1, 5}, {1000, 5000}} {
		for _, v := range variants {
			b.Run(fmt.Sprintf("%s/routes=%d,deployments=%d", v.name, size.routes, size.deps), func(b *testing.B) {
				head, routes, _ := strings.Cut(string(bigConfig(size.routes, size.deps)), "routes:\n")
				snap := buildOrdered(b, head+"routes:\n"+strings.ReplaceAll(routes, "}\n", v.opts+"}\n"))
				model := "model-0"
				req := &canonical.Request{Model: model, MaxTokens: 1024, Stream: true, System: strings.Repeat("Be careful. ", 100),
					Messages: []canonical.Message{
						{Role: canonical.RoleUser, Content: []canonical.Part{canonical.TextPart("What is the capital of France?")}},
						{Role: canonical.RoleAssistant, Content: []canonical.Part{canonical.TextPart("Paris.")}},
						{Role: canonical.RoleUser, Content: []canonical.Part{canonical.TextPart("And of Italy?")}},
					}}
				pins := sticky.New(1000, nil)
				k, _ := pins.Key(model, "", req)
				pins.Record(k, "d3", time.Hour)
				tr := health.NewTracker(nil)
				pol := map[string]health.Policy{}
				for i := range 5 {
					pol[fmt.Sprint("d", i)] = health.Policy{}
				}
				tr.Sync(pol)
				for i := range 5 {
					tok, _ := tr.Begin(fmt.Sprint("d", i), false)
					tr.Done(tok, health.Outcome{FirstToken: time.Duration(100-i) * time.Millisecond})
				}
				in := &Input{Req: req, Attrs: catalog.Attributes{Model: model, Org: "acme", Team: "search"}, InputTokens: 300, Sticky: pins}
				r := &fakeReady{}
				var p Plan
				b.ReportAllocs()
				for b.Loop() {
					MakeInto(&p, snap, in, tr, r)
					if len(p.Order) != 5 || (p.Sticky == "d3") != v.sticky || (len(p.Ranking) == 5) != v.ranked {
						b.Fatalf("wrong plan: %d rungs, sticky %q, ranked %d", len(p.Order), p.Sticky, len(p.Ranking))
					}
				}
			})
		}
	}
}

func buildOrdered(b testing.TB, cfg string) *catalog.Snapshot {
	c, err := catalog.Parse([]byte(cfg), "big.yaml")
	if err != nil {
		b.Fatal(err)
	}
	s, err := catalog.Build(c, "big.yaml")
	if err != nil {
		b.Fatal(err)
	}
	return s
}
