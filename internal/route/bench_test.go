package route

import (
	"fmt"
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/quality"
)

// bigConfig is a routing table of routes routes over deps deployments
// (five per pool), each route to its own model.
func bigConfig(routes, deps int) []byte {
	var b strings.Builder
	b.WriteString("deployments:\n")
	for i := range deps {
		fmt.Fprintf(&b, "  - {id: d%d, provider: openai, base_url: \"https://p%d.example\", model: m, price: {input_per_mtok: 1, output_per_mtok: 2}, max_output_tokens: 4096, context_window: 100000}\n", i, i)
	}
	b.WriteString("pools:\n")
	pools := max(deps/5, 1)
	for p := range pools {
		fmt.Fprintf(&b, "  - {id: p%d, model: m, deployments: [", p)
		for j := 0; j < 5 && p*5+j < deps; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "d%d", p*5+j)
		}
		b.WriteString("], equivalence: {by: t, date: \"2026-01-01\", evidence: e}}\n")
	}
	b.WriteString("routes:\n")
	for r := range routes {
		fmt.Fprintf(&b, "  - {model: model-%d, pool: p%d}\n", r, r%pools)
	}
	return []byte(b.String())
}

func buildBig(b testing.TB, routes, deps int) *catalog.Snapshot {
	cfg, err := catalog.Parse(bigConfig(routes, deps), "big.yaml")
	if err != nil {
		b.Fatal(err)
	}
	s, err := catalog.Build(cfg, "big.yaml")
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkMake is one request's selection: the same work whatever the
// size of the routing table (a map lookup, then the matched pool).
func BenchmarkMake(b *testing.B) {
	for _, size := range []struct{ routes, deps int }{{1, 5}, {1000, 5000}} {
		b.Run(fmt.Sprintf("routes=%d,deployments=%d", size.routes, size.deps), func(b *testing.B) {
			snap := buildBig(b, size.routes, size.deps)
			model := "model-0"
			req := &canonical.Request{Model: model, MaxTokens: 1024, Stream: true}
			// The quality gate as the server passes it: a monitor with no
			// deployment ejected (the common path) costs no allocation.
			in := &Input{Req: req, Attrs: catalog.Attributes{Model: model, Org: "acme", Team: "search"}, InputTokens: 300,
				Quality: quality.NewMonitor(nil, nil)}
			h, r := &fakeHealth{}, &fakeReady{}
			var p Plan
			b.ReportAllocs()
			for b.Loop() {
				if MakeInto(&p, snap, in, h, r); len(p.Order) != 5 {
					b.Fatal("wrong plan")
				}
			}
		})
	}
}

// BenchmarkReload is what a reload of a big routing table costs: parse,
// validate and build the snapshot.
func BenchmarkReload(b *testing.B) {
	data := bigConfig(1000, 5000)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		cfg, err := catalog.Parse(data, "big.yaml")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := catalog.Build(cfg, "big.yaml"); err != nil {
			b.Fatal(err)
		}
	}
}

// bigConfigJSON is bigConfig written as JSON, as a generator would.
func bigConfigJSON(routes, deps int) []byte {
	var b strings.Builder
	b.WriteString("{\n\"deployments\": [\n")
	for i := range deps {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `{"id": "d%d", "provider": "openai", "base_url": "https://p%d.example", "model": "m", "price": {"input_per_mtok": 1, "output_per_mtok": 2}, "max_output_tokens": 4096, "context_window": 100000}`, i, i)
	}
	b.WriteString("\n],\n\"pools\": [\n")
	pools := max(deps/5, 1)
	for p := range pools {
		if p > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `{"id": "p%d", "model": "m", "deployments": [`, p)
		for j := 0; j < 5 && p*5+j < deps; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, `"d%d"`, p*5+j)
		}
		b.WriteString(`], "equivalence": {"by": "t", "date": "2026-01-01", "evidence": "e"}}`)
	}
	b.WriteString("\n],\n\"routes\": [\n")
	for r := range routes {
		if r > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `{"model": "model-%d", "pool": "p%d"}`, r, r%pools)
	}
	b.WriteString("\n]\n}\n")
	return []byte(b.String())
}

// BenchmarkReloadJSON is the same reload from the JSON form of the file.
func BenchmarkReloadJSON(b *testing.B) {
	data := bigConfigJSON(1000, 5000)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		cfg, err := catalog.Parse(data, "big.json")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := catalog.Build(cfg, "big.json"); err != nil {
			b.Fatal(err)
		}
	}
}
