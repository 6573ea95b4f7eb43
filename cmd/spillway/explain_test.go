package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/catalog"
)

func TestRunExplain(t *testing.T) {
	t.Setenv("SPILLWAY_ADMIN_KEY", "k")
	cfg, err := catalog.Parse([]byte(`ledger: {path: `+filepath.Join(t.TempDir(), "l.db")+`}
deployments:
  - {id: a, provider: openai, base_url: "http://127.0.0.1:9", model: m, price: {input_per_mtok: 1, output_per_mtok: 1}, max_output_tokens: 10}
  - {id: b, provider: anthropic, base_url: "http://127.0.0.1:9", model: m}
pools: [{id: p, model: m, deployments: [a, b], equivalence: {by: t, date: "2026-01-01", evidence: e}}]
routes: [{model: m, pool: p}]
`), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := catalog.Build(cfg, "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g, err := openGateway(ctx, catalog.NewHolder(snap), slog.New(slog.DiscardHandler), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer g.close(context.Background())
	gw := httptest.NewServer(g)
	defer gw.Close()
	var out bytes.Buffer
	if err := runExplain(context.Background(), []string{"--url", gw.URL, "--model", "m"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"pool p", "a ", "kept", "dropped: price_unknown", "order: a"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if err := runExplain(context.Background(), []string{"--url", gw.URL, "--model", "nope"}, &out, &out); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("unknown model: %v", err)
	}
}
