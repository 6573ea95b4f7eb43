package quality

import (
	"testing"
)

// feedUntilAlert makes the secondary diverge on one field and returns
// the monitor with its alert.
func feedUntilAlert(t *testing.T, m *Monitor, yaml string) {
	t.Helper()
	snap := testSnapshot(t, yaml)
	good := Sample{Structured: true, Measured: true, JSONValid: true, Schema: true, SchemaValid: true, Length: 100,
		Fields: []Field{{Path: "a", Populated: true}}}
	bad := good
	bad.Fields = []Field{{Path: "a", Populated: false}}
	for range 100 {
		m.Observe(snap, "primary", &good)
	}
	for range 100 {
		m.Observe(snap, "secondary", &bad)
	}
	if rep := m.Report(); len(rep.Alerts) != 1 || rep.Alerts[0].Field != "a" {
		t.Fatalf("alerts %+v", rep.Alerts)
	}
}

// A reload keeps a pair's alerts and ejection while its pool, secondary
// and primary are unchanged; a new primary starts the comparison over.
func TestMonitorReload(t *testing.T) {
	const q = "    quality: {shift: 0.3, eject: true}\n"
	m := NewMonitor(nil, nil)
	feedUntilAlert(t, m, q)
	if !m.Ejected("pool", "secondary") || m.Ejected("pool", "primary") || m.Ejected("other", "secondary") {
		t.Fatal("ejection")
	}
	// The same pools in a new snapshot (a reload): kept.
	m.Observe(testSnapshot(t, q), "primary", &Sample{})
	if rep := m.Report(); len(rep.Alerts) != 1 || !m.Ejected("pool", "secondary") {
		t.Fatalf("after reload: %+v", rep.Alerts)
	}
	// eject turned off: the alert stays, the ejection is lifted.
	m.Observe(testSnapshot(t, "    quality: {shift: 0.3}\n"), "primary", &Sample{})
	if rep := m.Report(); len(rep.Alerts) != 1 || m.Ejected("pool", "secondary") || rep.Alerts[0].Ejected {
		t.Fatalf("eject off: %+v", rep.Alerts)
	}
	// Clear: gone, and unknown pairs are refused.
	if n, ok := m.Clear("pool", "secondary"); !ok || n != 1 {
		t.Fatalf("clear: %d %v", n, ok)
	}
	if _, ok := m.Clear("pool", "primary"); ok {
		t.Fatal("cleared the primary")
	}
	if rep := m.Report(); len(rep.Alerts) != 0 || rep.Pools[0].Secondaries[0].AnswersTested != 0 {
		t.Fatalf("after clear: %+v", rep)
	}
	// The alerts counter survives a clear.
	if c := m.AlertCounts(); len(c) != 1 || c[0].N != 1 || c[0].Signal != SigField {
		t.Fatalf("counts %+v", c)
	}
}

func TestMonitorNewPrimaryStartsOver(t *testing.T) {
	m := NewMonitor(nil, nil)
	feedUntilAlert(t, m, "    quality: {shift: 0.3}\n")
	swapped := `
deployments:
  - {id: primary, provider: openai, base_url: "http://127.0.0.1:1/v1", model: m, funding: byok}
  - {id: secondary, provider: openai, base_url: "http://127.0.0.1:2/v1", model: m, funding: byok}
  - {id: third, provider: openai, base_url: "http://127.0.0.1:3/v1", model: m, funding: byok}
pools:
  - id: pool
    model: m
    deployments: [third, secondary, primary]
    equivalence: {by: ops, date: "2026-01-01", evidence: "eval:1"}
routes:
  - {model: m, pool: pool}
`
	snap := mustSnapshot(t, swapped)
	m.Observe(snap, "third", &Sample{})
	rep := m.Report()
	if len(rep.Alerts) != 0 || rep.Pools[0].Primary != "third" || len(rep.Pools[0].Secondaries) != 2 {
		t.Fatalf("after a new primary: %+v", rep)
	}
}
