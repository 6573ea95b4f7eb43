package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/loadgen/wrk"
)

// needWrk returns wrk's path, or skips the test when wrk is not installed
// (and fails it when SPILLWAY_TEST_WRK is set: CI installs it, .ci/wrk).
func needWrk(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("wrk")
	if err != nil {
		if os.Getenv("SPILLWAY_TEST_WRK") != "" {
			t.Fatal("SPILLWAY_TEST_WRK is set but wrk is not on PATH (bash .ci/wrk installs Debian's wrk package)")
		}
		t.Skip("wrk is not installed (apt-get install wrk, or bash .ci/wrk as root): the wrk driver is not tested")
	}
	return p
}

// bench.lua sends, for every mode, the Go generator's request: the same
// path, body and headers that matter (content type, bearer key, Anthropic
// version).
func TestWrkSendsTheGoBodies(t *testing.T) {
	bin := needWrk(t)
	type seen struct {
		path, auth, version, ctype string
		body                       []byte
	}
	var mu sync.Mutex
	var got *seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		mu.Lock()
		if got == nil {
			got = &seen{r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Anthropic-Version"), r.Header.Get("Content-Type"), body}
		}
		mu.Unlock()
		_, _ = io.WriteString(w, "{}")
	}))
	defer srv.Close()
	script, err := wrk.WriteScript(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b := &bencher{mock: &child{url: srv.URL}, bare: &child{url: srv.URL}, gw: &child{url: srv.URL}, key: "sk-spw-test"}
	for _, tt := range []struct{ path, mode string }{
		{"direct", "plain"}, {"direct", "stream"}, {"spillway", "plain"}, {"spillway", "stream"}, {"spillway", "translated"},
	} {
		t.Run(tt.path+" "+tt.mode, func(t *testing.T) {
			mu.Lock()
			got = nil
			mu.Unlock()
			key := ""
			if tt.path == "spillway" {
				key = b.key
			}
			if _, _, err := wrk.Run(context.Background(), wrk.Options{Bin: bin, Script: script, BaseURL: srv.URL, Mode: tt.mode,
				Key: key, Model: benchModel, Connections: 1, Duration: time.Second}); err != nil {
				t.Fatal(err)
			}
			want := b.target(tt.path, tt.mode)
			mu.Lock()
			defer mu.Unlock()
			if got == nil {
				t.Fatal("wrk sent nothing")
			}
			if !strings.HasSuffix(want.URL, got.path) || !bytes.Equal(got.body, want.Body) || got.auth != want.Header.Get("Authorization") ||
				got.version != want.Header.Get("Anthropic-Version") || got.ctype != want.Header.Get("Content-Type") {
				t.Errorf("wrk sent %s %q auth %q version %q type %q\nthe Go generator sends %s %q auth %q version %q", got.path, got.body,
					got.auth, got.version, got.ctype, want.URL, want.Body, want.Header.Get("Authorization"), want.Header.Get("Anthropic-Version"))
			}
		})
	}
}

// wrk and the Go generator side by side, about 2 s of wrk against the
// mock through the bare proxy and spillway: both drivers' cells and
// ratios, nothing cut or failed, wrk's own CPU counted.
func TestRunBenchWrk(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs wrk and three processes under load")
	}
	needWrk(t)
	out, rep := benchRun(t, "--driver", "go,wrk", "--duration", "1s", "--warmup", "0s",
		"--concurrency", "4", "--paths", "bare,spillway", "--modes", "translated")
	for _, want := range []string{"wrk bare translated", "wrk spillway translated", "bare translated", "driver"} {
		if !strings.Contains(out, want) {
			t.Errorf("the table has no %q:\n%s", want, out)
		}
	}
	if len(rep.Cells) != 4 || len(rep.Ratios) != 2 {
		t.Fatalf("report: %d cells, %d ratios\n%s", len(rep.Cells), len(rep.Ratios), out)
	}
	for _, c := range rep.Cells {
		if c.Load == nil || c.Load.OK == 0 || c.Load.Failed() != 0 || c.Load.Window <= 0 || c.ProxyRSS <= 0 {
			t.Errorf("%s cell %s %s: %+v", c.Driver, c.Path, c.Mode, c.Load)
		}
		if c.Driver == "wrk" && (c.Load.TTFB != nil || c.LoadCPU <= 0 || c.Wrk == nil || c.Wrk.TextRPS <= 0 || len(c.Wrk.TextLatencyMS) == 0 || c.Wrk.OK != c.Load.OK) {
			t.Errorf("wrk cell %s: ttfb %v, wrk's CPU %v, wrk's report %+v", c.Path, c.Load.TTFB, c.LoadCPU, c.Wrk)
		}
		if c.Driver == "go" && c.Wrk != nil {
			t.Errorf("go cell %s has a wrk report", c.Path)
		}
	}
	drivers := map[string]bool{}
	for _, r := range rep.Ratios {
		drivers[r.Driver] = true
		if r.RPS <= 0 || r.RSS <= 0 || r.Mode != "translated" {
			t.Errorf("ratio %+v", r)
		}
	}
	if !drivers["go"] || !drivers["wrk"] {
		t.Errorf("ratios by driver: %v", drivers)
	}
}
