package main

import (
	"bytes"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/catalog"
)

func snapWith(t *testing.T, deployments string) *catalog.Snapshot {
	t.Helper()
	cfg, err := catalog.Parse([]byte("deployments:\n"+deployments+`pools: [{id: p, model: m, deployments: [a]}]
routes: [{model: m, pool: p}]
`), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := catalog.Build(cfg, "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func listening(addr string) bool {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// --mocks follows reloads: a deployment moved to a new port gets its mock
// there and the old port is let go; two kinds on one address are called
// out; without mocks, start-up names each deployment nothing listens for.
func TestMocksFollowReloads(t *testing.T) {
	p1, p2, p3 := "127.0.0.1:"+freePort(t), "127.0.0.1:"+freePort(t), "127.0.0.1:"+freePort(t)
	dep := func(id, kind, addr string) string {
		return "  - {id: " + id + ", provider: " + kind + ", base_url: http://" + addr + ", model: m, price: {input_per_mtok: 1, output_per_mtok: 1}}\n"
	}
	first := snapWith(t, dep("a", "openai", p1))
	var out bytes.Buffer
	log := slog.New(slog.DiscardHandler)
	if n := warnUnreachable(first, &out, log); n != 1 || !strings.Contains(out.String(), "nothing listens on "+p1+" for a") {
		t.Errorf("without mocks: %d warnings:\n%s", n, out.String())
	}
	m := newMockSet(&out, log)
	defer m.close()
	if err := m.sync(first, true); err != nil {
		t.Fatal(err)
	}
	if !listening(p1) {
		t.Fatal("no mock on the first address")
	}
	out.Reset()
	if n := warnUnreachable(first, &out, log); n != 0 {
		t.Errorf("with the mock running: %s", out.String())
	}
	moved := snapWith(t, dep("a", "openai", p2)+dep("b", "anthropic", p3)+dep("c", "gemini", p3))
	out.Reset()
	if err := m.sync(moved, false); err != nil {
		t.Fatal(err)
	}
	if listening(p1) || !listening(p2) || !listening(p3) {
		t.Errorf("after the reload: old %v new %v %v", listening(p1), listening(p2), listening(p3))
	}
	if !strings.Contains(out.String(), "b (anthropic) and c (gemini) share "+p3) || !strings.Contains(out.String(), "stopped") {
		t.Errorf("the reload said:\n%s", out.String())
	}
}
