package catalog

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// withRoute is base plus a second public name for the same pool, so that
// tests can tell two valid versions apart.
func withRoute(name string) string {
	return base + "  - model: " + name + "\n    pool: p\n"
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func newTestHolder(t *testing.T, content string) (*Holder, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "spillway.yaml")
	writeFile(t, path, content)
	s, err := LoadSnapshot(path)
	if err != nil {
		t.Fatal(err)
	}
	return NewHolder(s), path
}

func hasModel(s *Snapshot, m string) bool {
	_, ok := s.Route(m)
	return ok
}

func TestHolderReload(t *testing.T) {
	h, path := newTestHolder(t, withRoute("v1"))
	first := h.Load()

	// Bad files of every kind keep the last good snapshot and say why.
	for _, bad := range []string{
		"",                     // empty
		"routes: [\n",          // syntax
		base + "colour: red\n", // unknown key
		strings.Replace(base, "[a, b]", "[a, a]", 1), // validation
	} {
		writeFile(t, path, bad)
		err := h.Reload(path)
		var ps Problems
		if !errors.As(err, &ps) || len(ps) == 0 {
			t.Errorf("Reload(%q) = %v, want Problems", bad, err)
		}
		if h.Load() != first {
			t.Fatalf("a bad file replaced the snapshot: %q", bad)
		}
	}
	if err := h.Reload(filepath.Join(t.TempDir(), "missing.yaml")); err == nil || h.Load() != first {
		t.Errorf("missing file: %v", err)
	}

	writeFile(t, path, withRoute("v2"))
	if err := h.Reload(path); err != nil {
		t.Fatal(err)
	}
	if s := h.Load(); s == first || !hasModel(s, "v2") || hasModel(s, "v1") {
		t.Error("a good file was not swapped in")
	}
}

// Readers see one whole snapshot or the other while reloads swap them,
// and never need a lock (run with -race).
func TestHolderConcurrentReaders(t *testing.T) {
	h, path := newTestHolder(t, withRoute("v0"))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				s := h.Load()
				r, ok := s.Route("m")
				if !ok || len(r.Deployments) != 2 || r.Deployments[0].ID != "a" || len(s.Models()) != 2 {
					t.Error("reader saw a broken snapshot")
					return
				}
			}
		}()
	}
	for i := range 20 {
		content := withRoute("v" + string(rune('a'+i)))
		if i%3 == 0 {
			content = "bogus: [\n"
		}
		writeFile(t, path, content)
		_ = h.Reload(path)
	}
	cancel()
	wg.Wait()
	if !hasModel(h.Load(), "vt") {
		t.Errorf("last good version not served: %v", h.Load().Models())
	}
}

func TestWatcherPoll(t *testing.T) {
	h, path := newTestHolder(t, withRoute("v1"))
	var logs bytes.Buffer
	w := h.newWatcher(path, slog.New(slog.NewTextHandler(&logs, nil)))
	first := h.Load()

	if w.poll() {
		t.Fatal("reloaded an unchanged file")
	}
	// Same content, new mtime: no reload.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	if w.poll() || h.Load() != first {
		t.Fatal("reloaded a touched file")
	}

	writeFile(t, path, withRoute("v1")+"# a comment\n")
	if !w.poll() || !hasModel(h.Load(), "v1") {
		t.Fatal("changed file not reloaded")
	}
	good := h.Load()

	writeFile(t, path, base+"colour: red\n")
	if w.poll() || h.Load() != good {
		t.Fatal("bad file swapped in")
	}
	if !strings.Contains(logs.String(), "colour: unknown key") || !strings.Contains(logs.String(), "keeping the last good config") {
		t.Errorf("bad file not explained in the log:\n%s", logs.String())
	}
	logs.Reset()
	bumpMtime(t, path)
	if w.poll() || logs.Len() != 0 {
		t.Errorf("the same bad content was reported again:\n%s", logs.String())
	}

	// A vanished file (an editor's rename) is logged once and survived.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	w.poll()
	w.poll()
	if n := strings.Count(logs.String(), "cannot read config"); n != 1 {
		t.Errorf("missing file logged %d times:\n%s", n, logs.String())
	}
	writeFile(t, path, withRoute("v3"))
	if !w.poll() || !hasModel(h.Load(), "v3") {
		t.Fatal("recovered file not loaded")
	}
}

// A snapshot built in code takes the file as it is when watching starts.
func TestWatcherBaselineWithoutHash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	writeFile(t, path, base)
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Build(c, path)
	if err != nil {
		t.Fatal(err)
	}
	h := NewHolder(s)
	w := h.newWatcher(path, nil)
	if w.poll() || h.Load() != s {
		t.Fatal("reloaded an unchanged file")
	}
	writeFile(t, path, withRoute("v2"))
	bumpMtime(t, path)
	if !w.poll() {
		t.Fatal("change not seen")
	}
}

func bumpMtime(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	next := fi.ModTime().Add(time.Second)
	if err := os.Chtimes(path, next, next); err != nil {
		t.Fatal(err)
	}
}

func TestWatchLoop(t *testing.T) {
	h, path := newTestHolder(t, withRoute("v1"))
	w := h.newWatcher(path, nil)
	ticks := make(chan time.Time) // unbuffered: a send returns once the loop took it
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		w.run(ctx, ticks)
		close(done)
	}()

	writeFile(t, path, withRoute("v2"))
	bumpMtime(t, path)
	ticks <- time.Time{} // poll
	ticks <- time.Time{} // taken only after the first poll finished
	if !hasModel(h.Load(), "v2") {
		t.Error("tick did not reload")
	}
	cancel()
	<-done
}

func TestWatchExitsOnCancel(t *testing.T) {
	h, path := newTestHolder(t, base)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		h.Watch(ctx, path, time.Hour, nil)
		close(done)
	}()
	cancel()
	<-done // the test times out if Watch does not return
}

func TestNewHolderNil(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("NewHolder(nil) did not panic")
		}
	}()
	NewHolder(nil)
}

// A reload that changes a setting read only at start-up (the listener,
// the ledger) applies the rest and says, naming each, that those need a
// restart; it keeps saying so while they differ from the running values.
func TestReloadSaysWhatNeedsARestart(t *testing.T) {
	h, path := newTestHolder(t, withRoute("v1"))
	var logs bytes.Buffer
	w := h.newWatcher(path, slog.New(slog.NewTextHandler(&logs, nil)))

	writeFile(t, path, "server: {listen: \"127.0.0.1:9999\", max_body_bytes: 1024}\nledger: {path: other.db}\n"+withRoute("v2"))
	if !w.poll() || !hasModel(h.Load(), "v2") || h.Load().Config().Server.MaxBodyBytes != 1024 {
		t.Fatal("the live settings were not applied")
	}
	for _, want := range []string{"take effect only on a restart", "server.listen (127.0.0.1:8080 → 127.0.0.1:9999)", "ledger.path (spillway.db → other.db)"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
	if strings.Contains(logs.String(), "max_body_bytes") {
		t.Errorf("a live setting was reported as needing a restart:\n%s", logs.String())
	}
	logs.Reset()
	writeFile(t, path, withRoute("v3"))
	if !w.poll() || strings.Contains(logs.String(), "restart") {
		t.Errorf("back to the running values, a restart is still asked for:\n%s", logs.String())
	}
}

// Every setting serve reads once at start-up outside shared_state (those
// are TestSharedStateIsRestartOnly's) is named when a reload changes it,
// so a reload never silently keeps the running value.
func TestRestartOnlyStartupSettings(t *testing.T) {
	half, one := 0.5, 1.0
	tests := []struct {
		name string
		set  func(c *Config)
		want string
	}{
		{"retention", func(c *Config) { c.Ledger.Retention = Retention(90 * 24 * time.Hour) }, "ledger.retention (0s → 2160h0m0s)"},
		{"access ok", func(c *Config) { c.Log.Access.OK = &half }, "log.access.ok (unset → 0.5)"},
		{"access client_error", func(c *Config) { c.Log.Access.ClientError = &half }, "log.access.client_error (unset → 0.5)"},
		{"access error", func(c *Config) { c.Log.Access.Error = &half }, "log.access.error (unset → 0.5)"},
		{"sticky_capacity", func(c *Config) { c.Routing.StickyCapacity = 10 }, "routing.sticky_capacity (100000 → 10)"},
		{"exporter", func(c *Config) { c.Telemetry.Traces.Exporter = TraceExporterOTLPHTTP }, "telemetry.traces.exporter (none → otlp_http)"},
		{"endpoint", func(c *Config) { c.Telemetry.Traces.Endpoint = "http://collector:4318" }, "telemetry.traces.endpoint ( → http://collector:4318)"},
		{"sample", func(c *Config) { c.Telemetry.Traces.Sample = &half }, "telemetry.traces.sample (1 → 0.5)"},
		{"headers_env", func(c *Config) { c.Telemetry.Traces.HeadersEnv = "OTLP_HEADERS" }, "telemetry.traces.headers_env ( → OTLP_HEADERS)"},
		{"service_name", func(c *Config) { c.Telemetry.Traces.ServiceName = "gw" }, "telemetry.traces.service_name (spillway → gw)"},
		{"timeout", func(c *Config) { c.Telemetry.Traces.Timeout = Duration(time.Second) }, "telemetry.traces.timeout (10s → 1s)"},
		{"queue_size", func(c *Config) { c.Telemetry.Traces.QueueSize = 16 }, "telemetry.traces.queue_size (2048 → 16)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			boot := &Config{Routing: Routing{StickyCapacity: 100000}, Telemetry: Telemetry{Traces: Traces{
				Exporter: TraceExporterNone, Sample: &one, ServiceName: "spillway", Timeout: Duration(10 * time.Second), QueueSize: 2048}}}
			now := *boot
			tc.set(&now)
			if got := RestartOnly(boot, &now); len(got) != 1 || got[0] != tc.want {
				t.Errorf("RestartOnly = %q, want [%q]", got, tc.want)
			}
			if got := RestartOnly(boot, boot); len(got) != 0 {
				t.Errorf("unchanged config: RestartOnly = %q", got)
			}
		})
	}
}
