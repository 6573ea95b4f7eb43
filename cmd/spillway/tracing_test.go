package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/mock"
)

// An export header variable that is not set stops the start, naming the
// variable and never a value; tracing off starts nothing.
func TestOpenTracer(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	cfg := &catalog.Config{}
	if tr, err := openTracer(t.Context(), cfg, log); tr != nil || err != nil {
		t.Errorf("tracing off: %v, %v", tr, err)
	}
	cfg.Telemetry.Traces = catalog.Traces{Exporter: catalog.TraceExporterOTLPHTTP, Endpoint: "http://127.0.0.1:1", HeadersEnv: "SPILLWAY_TEST_UNSET_OTLP_HEADERS"}
	if tr, err := openTracer(t.Context(), cfg, log); tr != nil || err == nil || !strings.Contains(err.Error(), "SPILLWAY_TEST_UNSET_OTLP_HEADERS is not set") {
		t.Errorf("unset headers variable: %v, %v", tr, err)
	}
}

// `spillway serve` with telemetry.traces on: a request's spans reach the
// collector with the export headers from the environment, the answer
// names its trace, the caller's traceparent is the parent, the prompt is
// not in the export, and stopping flushes what is buffered.
func TestServeExportsTraces(t *testing.T) {
	m, err := mock.New("openai", mock.Options{Name: "p"})
	if err != nil {
		t.Fatal(err)
	}
	up := httptest.NewServer(m)
	defer up.Close()
	var mu sync.Mutex
	var exports [][]byte
	var auth []string
	coll := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		exports = append(exports, b)
		auth = append(auth, r.URL.Path+" "+r.Header.Get("X-Api-Key"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer coll.Close()
	t.Setenv("SPILLWAY_TEST_OTLP_HEADERS", "x-api-key=collector-secret")
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	yaml := `ledger: {path: ` + filepath.Join(t.TempDir(), "l.db") + `}
deployments:
  - {id: p, provider: openai, base_url: ` + up.URL + `, model: m, price: {input_per_mtok: 1, output_per_mtok: 1}, max_output_tokens: 100}
pools: [{id: pool, model: m, deployments: [p]}]
routes: [{model: m, pool: pool}]
telemetry:
  traces: {exporter: otlp_http, endpoint: "` + coll.URL + `", headers_env: SPILLWAY_TEST_OTLP_HEADERS, sample: 0}
`
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, []string{"--config", cfg, "--listen", "127.0.0.1:0", "--reload-every", "0"}, pw, io.Discard)
		pw.Close()
	}()
	br := bufio.NewReader(pr)
	var secret, addr string
	for addr == "" {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		switch l := strings.TrimSpace(line); {
		case strings.HasPrefix(l, "sk-spw-") && !strings.HasPrefix(l, "sk-spw-admin-"):
			secret = l
		case strings.HasPrefix(l, "spillway listening on "):
			addr = strings.Fields(strings.TrimPrefix(l, "spillway listening on "))[0]
		}
	}
	go func() { _, _ = io.Copy(io.Discard, br) }()
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	req, _ := http.NewRequest(http.MethodPost, addr+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"CANARY-prompt-91ad3e"}]}`))
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01") // sampled by the caller: recorded at sample 0
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	id := resp.Header.Get("X-Request-Id")
	if resp.StatusCode != 200 || resp.Header.Get("X-Spillway-Trace-Id") != traceID {
		t.Fatalf("status %d, trace header %q", resp.StatusCode, resp.Header.Get("X-Spillway-Trace-Id"))
	}
	cancel() // stopping flushes the batcher (its timer is 5s away)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not return")
	}
	mu.Lock()
	defer mu.Unlock()
	all := bytes.Join(exports, nil)
	if len(exports) == 0 || !bytes.Contains(all, []byte(id)) || !bytes.Contains(all, []byte("spillway.deployment")) {
		t.Fatalf("%d exports; the request %s is not among them", len(exports), id)
	}
	if bytes.Contains(all, []byte("CANARY-prompt-91ad3e")) {
		t.Error("the prompt was exported")
	}
	for _, a := range auth {
		if a != "/v1/traces collector-secret" {
			t.Errorf("export %q: want path /v1/traces with the header from the environment", a)
		}
	}
}
