package server

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/route"
)

const routingConfig = `
deployments:
  - {id: a, provider: openai, base_url: "https://a.example", model: m, price: {input_per_mtok: 1, output_per_mtok: 2}, max_output_tokens: 4096}
  - {id: b, provider: openai, base_url: "https://b.example", model: m, price: {input_per_mtok: 1, output_per_mtok: 2}, max_output_tokens: 4096, quota: {rpm: 100}}
  - {id: c, provider: openai, base_url: "https://c.example", model: m, price: {input_per_mtok: 1, output_per_mtok: 2}, max_output_tokens: 4096}
pools:
  - {id: p, model: m, deployments: [a, b, c], equivalence: {by: t, date: "2026-01-01", evidence: e}}
routes:
  - {model: m, pool: p, exercise: 0.02}
`

func routingSnap(t testing.TB) *catalog.Snapshot {
	t.Helper()
	cfg, err := catalog.Parse([]byte(routingConfig), "r.yaml")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := catalog.Build(cfg, "r.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// The server's exercise decision: 10,000 requests planned concurrently with
// the server's turn taker send exactly 2% to a secondary first (the
// done-when bound is ±1 point), half to each; explain's peek takes no turn.
func TestServerExerciseShare(t *testing.T) {
	snap := routingSnap(t)
	rg := buildRouting(snap, nil, time.Now)
	var exercised, toB atomic.Int64
	var wg sync.WaitGroup
	const workers, each = 8, 1250
	for range workers {
		wg.Go(func() {
			for range each {
				in := &route.Input{Req: &canonical.Request{Model: "m", MaxTokens: 10}, Attrs: catalog.Attributes{Model: "m"},
					Rates: rg, Turns: (*turnTaker)(rg)}
				p := route.Make(snap, in, nil, nil)
				if p.Exercise != nil {
					exercised.Add(1)
					if p.Exercise.ID == "b" {
						toB.Add(1)
					}
				}
			}
		})
	}
	wg.Wait()
	n := workers * each
	share := float64(exercised.Load()) / float64(n)
	t.Logf("exercise share over %d concurrent requests: %.2f%% (%d; %d to b)", n, 100*share, exercised.Load(), toB.Load())
	if exercised.Load() != 200 || toB.Load() != 100 {
		t.Errorf("exercised %d (%d to b) of %d, want exactly 200 (100 to b)", exercised.Load(), toB.Load(), n)
	}
	if share < 0.01 || share > 0.03 {
		t.Errorf("share %.4f outside 2%%±1 point", share)
	}
	before := rg.turns[0].Load()
	for range 10 {
		in := &route.Input{Req: &canonical.Request{Model: "m"}, Attrs: catalog.Attributes{Model: "m"}, Turns: (*turnPeeker)(rg)}
		route.Make(snap, in, nil, nil)
	}
	if rg.turns[0].Load() != before {
		t.Errorf("explain's peek took turns")
	}
}

// The rate window: counts over the last minute, seconds expiring as time
// passes, the whole window after a long gap; claim checks and counts in one
// step; until says when room comes back.
func TestRateWindow(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	w := &rateWindow{}
	for i := range 10 {
		w.add(t0.Add(time.Duration(i)*time.Second), 1, 100)
	}
	if r, tk := w.rate(t0.Add(9 * time.Second)); r != 10 || tk != 1000 {
		t.Fatalf("rate %d %d, want 10 1000", r, tk)
	}
	// Second 0 leaves at 60, second 4 at 64.
	if r, _ := w.rate(t0.Add(60 * time.Second)); r != 9 {
		t.Errorf("after 60s: %d, want 9", r)
	}
	if r, _ := w.rate(t0.Add(64 * time.Second)); r != 5 {
		t.Errorf("after 64s: %d, want 5", r)
	}
	// A clock that steps back counts at the newest second.
	w.add(t0, 1, 0)
	if r, _ := w.rate(t0.Add(64 * time.Second)); r != 6 {
		t.Errorf("after a step back: %d, want 6", r)
	}
	if r, tk := w.rate(t0.Add(10 * time.Minute)); r != 0 || tk != 0 {
		t.Errorf("after 10 minutes: %d %d", r, tk)
	}

	q := catalog.Quota{RPM: 10, TPM: 0}
	w = &rateWindow{}
	now := t0
	for i := range 8 {
		if !w.claim(now.Add(time.Duration(i)*time.Second), q, 0.8, 5, true) {
			t.Fatalf("claim %d refused within the share", i)
		}
	}
	now = t0.Add(7 * time.Second)
	if w.claim(now, q, 0.8, 5, true) {
		t.Error("claim past the share admitted")
	}
	if !w.claim(now, q, 0.8, 5, false) {
		t.Error("an unchecked claim (a protected request) refused")
	}
	// Nine counted at seconds 0..7 (two at 7): room for one more when
	// seconds 0 and 1 have left: at 61, 54s from now.
	if got := w.until(now, q, 0.8, 5); got != 54*time.Second {
		t.Errorf("until %v, want 54s", got)
	}
	if got := w.until(now, catalog.Quota{TPM: 10}, 0.5, 6); got != 60*time.Second {
		t.Errorf("a request larger than the share: until %v, want the window", got)
	}
	if got := (&rateWindow{}).until(now, q, 0.8, 1); got != time.Second {
		t.Errorf("an empty window: until %v, want a second", got)
	}
}

// Rate windows outlive a reload for deployments that still declare a
// quota; turns restart.
func TestRoutingAcrossReload(t *testing.T) {
	snap := routingSnap(t)
	old := &runtime{snap: snap, routing: buildRouting(snap, nil, time.Now)}
	old.routing.rates["b"].add(time.Now(), 3, 0)
	old.routing.turns[0].Add(5)
	rg := buildRouting(snap, old, time.Now)
	if r, _ := rg.Rate("b"); r != 3 || rg.turns[0].Load() != 0 {
		t.Errorf("after reload: rate %d, turns %d", r, rg.turns[0].Load())
	}
	if _, ok := rg.rates["a"]; ok {
		t.Error("a window for a deployment without a quota")
	}
}
