package server_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/spillway-gw/spillway/internal/ui"
)

// chromiumForTest finds the browser for the dashboard test:
// SPILLWAY_TEST_CHROMIUM names it (then a binary that does not run fails
// the test: CI sets it, so CI never skips), else the first of chromium,
// chromium-browser and google-chrome on PATH; with none, the test skips.
func chromiumForTest(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("SPILLWAY_TEST_CHROMIUM"); bin != "" {
		path, err := exec.LookPath(bin)
		if err != nil {
			t.Fatalf("SPILLWAY_TEST_CHROMIUM=%s: %v", bin, err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, path, "--headless", "--no-sandbox", "--version").CombinedOutput()
		if err != nil {
			t.Fatalf("SPILLWAY_TEST_CHROMIUM=%s does not run: %v\n%s", bin, err, out)
		}
		return path
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	t.Skip("no Chromium found (chromium, chromium-browser or google-chrome on PATH, or SPILLWAY_TEST_CHROMIUM naming one): " +
		"the dashboard's browser test is skipped; .ci/chromium installs Debian's chromium package")
	return ""
}

// browserTab starts a headless Chromium for the test and returns a tab
// and the page's console messages so far.
func browserTab(t *testing.T, bin string) (context.Context, func() []chromedp.ConsoleMessage) {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
		// This machine's network is closed: Chromium must not reach out.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
	)
	if os.Geteuid() == 0 {
		// Chromium refuses to run as root with its sandbox (CI runs as root).
		opts = append(opts, chromedp.NoSandbox)
	}
	// The whole browser session is bounded: a hung Chromium fails the test
	// instead of holding go test until its timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	tab, cancelTab := chromedp.NewContext(alloc, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() { cancelTab(); cancelAlloc(); cancel() })
	// Start the browser now: the first Run's context owns it.
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	var mu sync.Mutex
	var msgs []chromedp.ConsoleMessage
	console := chromedp.Console(tab)
	go func() {
		for m, err := range console {
			if err != nil {
				return
			}
			mu.Lock()
			msgs = append(msgs, m)
			mu.Unlock()
		}
	}()
	return tab, func() []chromedp.ConsoleMessage {
		mu.Lock()
		defer mu.Unlock()
		return append([]chromedp.ConsoleMessage(nil), msgs...)
	}
}

// TestDashboardInBrowser drives the dashboard in headless Chromium: the
// page without a key says every call is refused, a wrong key is refused,
// the admin key shows every panel; then a scripted outage of the primary
// mock (every answer a 503) makes the page show the primary's circuit
// open, the failovers to the secondary and the failed attempts. It saves
// screenshots before and after the outage, and checks that no prompt or
// answer text reached the page.
func TestDashboardInBrowser(t *testing.T) {
	bin := chromiumForTest(t)
	start := time.Now()
	h := newHarness(t, rungSpec{"primary", "openai"}, rungSpec{"secondary", "anthropic"})
	const canary = "CANARY-dashboard-6a41c9"
	ask := func(want string) {
		t.Helper()
		resp, err := h.post("/v1/chat/completions", `{"model":"`+publicModel+`","max_tokens":16,"messages":[{"role":"user","content":"`+canary+`"}]}`)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || hdr(resp, "X-Spillway-Deployment") != want {
			t.Fatalf("served by %q (%s), want %s: %s", hdr(resp, "X-Spillway-Deployment"), resp.Status, want, b)
		}
	}
	for range 3 {
		ask("primary")
	}

	tab, console := browserTab(t, bin)
	t.Logf("%s started in %v", bin, time.Since(start).Round(time.Millisecond))
	// Screenshots go to the test's artifact directory: kept under
	// -outputdir/_artifacts with go test -artifacts (.ci/run passes it),
	// a temporary directory otherwise.
	dir := t.ArtifactDir()
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(tab, chromedp.FullScreenshot(100)) // 100: PNG
		if err != nil {
			t.Errorf("screenshot %s: %v", name, err)
			return
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", path)
	}
	text := func() string {
		s, _ := chromedp.Run(tab, chromedp.Evaluate[string](`document.body.innerText`))
		return s
	}
	// waitFor polls a JavaScript predicate until it holds.
	waitFor := func(what, js string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(tab, 15*time.Second)
		defer cancel()
		if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingInterval(50*time.Millisecond),
			chromedp.WithPollingTimeout(15*time.Second))); err != nil {
			shot("dashboard-failed.png")
			t.Fatalf("the page never showed %s (%s): %v\npage text:\n%s", what, js, err, text())
		}
	}
	has := func(sel, sub string) string {
		return `(document.querySelector(` + jsString(sel) + `)?.textContent || '').includes(` + jsString(sub) + `)`
	}
	exists := func(sel string) string { return `document.querySelector(` + jsString(sel) + `) !== null` }

	// 1. No key: every data call is 401, and the page says so.
	if err := chromedp.Do(tab, chromedp.Navigate(h.gw.URL+"/ui?refresh=300")); err != nil {
		t.Fatal(err)
	}
	waitFor("the 401 of a page without the key", has("#status", "401"))
	for _, panel := range []string{"health", "traffic", "failures", "usage"} {
		waitFor(panel+" refused without the key", exists("#"+panel+`[data-state="unauthorized"]`))
	}
	// 2. A wrong key is refused.
	if err := chromedp.Do(tab, chromedp.SendKeys("#admin-key", "not-the-admin-key"), chromedp.Click(`#login button[type="submit"]`)); err != nil {
		t.Fatal(err)
	}
	waitFor("the wrong key refused", has("#status", "refused this admin key"))

	// 3. The admin key: every panel renders.
	if err := chromedp.Do(tab, chromedp.SendKeys("#admin-key", adminKey), chromedp.Click(`#login button[type="submit"]`)); err != nil {
		t.Fatal(err)
	}
	waitFor("signed in", has("#status", "Signed in"))
	waitFor("the primary healthy", exists(`#health-deployments tr[data-deployment="primary"][data-state="healthy"]`))
	waitFor("the route with both rungs", has(`#health-routes tr[data-route="`+publicModel+`"]`, "2 of 2"))
	waitFor("the primary's three served attempts", exists(`#traffic-deployments tr[data-deployment="primary"] td[data-served="3"]`))
	waitFor("no failover yet", `!document.querySelector('#failovers-empty').hidden`)
	waitFor("the team's usage", has(`#usage-table tr[data-team="search"][data-model="`+publicModel+`"]`, "3"))
	// Quality answers 404 until its endpoint exists, then 200.
	// Quality: "no quality data" while GET /v1/admin/quality answers 404,
	// else the report, the primary's answers counted.
	waitFor("the quality panel", exists(`#quality[data-state="empty"]`)+" || "+
		exists(`#quality[data-state="ok"] #quality-deployments tr[data-deployment="primary"]`))
	waitFor("no failed attempt yet", has("#failures-note", "No failed attempt"))
	if err := chromedp.Do(tab, chromedp.SendKeys(`#explain-form input[name="model"]`, publicModel), chromedp.Click(`#explain-form button[type="submit"]`)); err != nil {
		t.Fatal(err)
	}
	waitFor("explain's order", exists(`#explain-facts dd[data-order="primary,secondary"]`))
	shot("dashboard-healthy.png")

	// 4. The scripted outage: the primary answers 503. Two failures open
	// its circuit; the third request goes straight to the secondary.
	h.fault("primary", "status=503")
	for range 3 {
		ask("secondary")
	}
	waitFor("the primary's circuit open", exists(`#health-deployments tr[data-deployment="primary"][data-state="open"]`))
	waitFor("the route down to one rung", has(`#health-routes tr[data-route="`+publicModel+`"]`, "1 of 2"))
	waitFor("two failovers primary → secondary", exists(`#traffic-failovers tr[data-from="primary"][data-to="secondary"] td[data-count="2"]`))
	waitFor("the primary's failed attempts counted", exists(`#traffic-deployments tr[data-deployment="primary"] td[data-failed="2"]`))
	waitFor("the secondary serving", exists(`#traffic-deployments tr[data-deployment="secondary"] td[data-served="3"]`))
	waitFor("the failed attempts in the trail",
		`document.querySelectorAll('#failures-table tr[data-deployment="primary"][data-verdict="provider_unavailable"]').length === 2`)
	waitFor("the trail's status and what served next", has(`#failures-table tbody tr`, "503")+" && "+has(`#failures-table tbody tr`, "secondary"))
	if err := chromedp.Do(tab, chromedp.Click(`#explain-form button[type="submit"]`)); err != nil {
		t.Fatal(err)
	}
	waitFor("explain without the open primary", exists(`#explain-facts dd[data-order="secondary"]`))
	shot("dashboard-outage.png")
	outageHTML, err := chromedp.Run(tab, chromedp.OuterHTML("html"))
	if err != nil {
		t.Fatal(err)
	}

	// Quality alerts render: a stand-in admin API answers a report with
	// an ejected deployment (the real detector needs hundreds of answers
	// to raise one; internal/quality measures that).
	fake := &fakeQualityAPI{}
	srv := httptest.NewServer(fake.handler())
	defer srv.Close()
	if err := chromedp.Do(tab, chromedp.Navigate(srv.URL+"/ui?refresh=300"), chromedp.SendKeys("#admin-key", "any"),
		chromedp.Click(`#login button[type="submit"]`)); err != nil {
		t.Fatal(err)
	}
	waitFor("the alert", exists(`#quality-alerts tr[data-deployment="secondary"][data-signal="field_populated"]`)+" && "+
		has("#quality-alerts", "ineligible until cleared")+" && "+has("#quality-alerts", "$.city"))
	waitFor("the pair's comparison", has(`#quality-pools tr[data-deployment="secondary"]`, "ejected"))
	waitFor("the signals", has(`#quality-deployments tr[data-deployment="secondary"]`, "97.0% of 300"))
	waitFor("the other panels' errors", has("#traffic .panel-status", "404"))
	shot("dashboard-quality-alert.png")
	// Clear sends the pool and deployment, and the alert goes.
	if err := chromedp.Do(tab, chromedp.Click(`#quality-alerts tr[data-deployment="secondary"] button.clear`)); err != nil {
		shot("dashboard-failed.png")
		t.Fatal(err)
	}
	waitFor("the alert cleared", has("#quality-action", "Cleared 1 alert(s) of secondary in pool pool")+" && "+exists("#quality-no-alerts"))
	if got := fake.cleared.Load(); got == nil || *got != `{"pool":"pool","deployment":"secondary"}` {
		t.Errorf("the clear call sent %v", got)
	}

	// Content-free: the prompt never reaches the page.
	if strings.Contains(outageHTML, canary) {
		t.Error("the prompt's canary is on the page")
	}
	for _, m := range console() {
		if m.IsException() || strings.Contains(m.Text, "Content Security Policy") {
			t.Errorf("the page's console: %s", m)
		}
	}
	t.Logf("whole test: %v", time.Since(start).Round(time.Millisecond))
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// fakeQualityAPI serves the dashboard and a canned quality report with one
// alert until a clear call; every other admin call is a 404.
type fakeQualityAPI struct {
	cleared atomic.Pointer[string] // the clear call's body
}

func (f *fakeQualityAPI) handler() http.Handler {
	mux := http.NewServeMux()
	h := ui.Handler()
	mux.Handle("GET /ui", h)
	mux.Handle("GET /ui/{file...}", h)
	mux.HandleFunc("POST /v1/admin/quality/clear", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 4096))
		s := string(b)
		f.cleared.Store(&s)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"pool":"pool","deployment":"secondary","cleared":1}`)
	})
	mux.HandleFunc("GET /v1/admin/quality", func(w http.ResponseWriter, r *http.Request) {
		alerts, ejected, n := `[{"pool":"pool","deployment":"secondary","primary":"primary","signal":"field_populated","field":"$.city",
   "direction":"lower","primary_rate":1,"deployment_rate":0.93,"answers":260,"since":"2026-12-01T10:00:00Z","ejected":true}]`, "true", "1"
		if f.cleared.Load() != nil {
			alerts, ejected, n = "[]", "false", "0"
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"scope":"replica",
 "deployments":[
  {"deployment":"primary","answers":900,"signals":[{"signal":"json_valid","answers":400,"events":400,"rate":1}],
   "fields":[{"path":"$.city","answers":400,"populated":400,"rate":1}],"fields_dropped":0,"unmeasured":0,
   "finish_reasons":[{"reason":"stop","answers":900,"rate":1}],"length_bytes":{"p50":120,"p90":300,"p99":800}},
  {"deployment":"secondary","answers":300,"signals":[{"signal":"json_valid","answers":300,"events":291,"rate":0.97}],
   "fields":[{"path":"$.city","answers":300,"populated":279,"rate":0.93}],"fields_dropped":0,"unmeasured":0,
   "finish_reasons":[{"reason":"stop","answers":300,"rate":1}],"length_bytes":{"p50":110,"p90":290,"p99":700}}],
 "pools":[{"pool":"pool","primary":"primary","false_alarm":0.01,"horizon":5000,"shift":0.03,"eject":true,
   "secondaries":[{"deployment":"secondary","answers_tested":260,"alerts":`+n+`,"ejected":`+ejected+`}]}],
 "alerts":`+alerts+`}`)
	})
	mux.HandleFunc("/", http.NotFound)
	return mux
}
