package drill

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/ledger/sqlite"
	"github.com/spillway-gw/spillway/internal/mock"
)

// brokenTarget is a pool of three mocks in front of a "gateway" that cuts
// every stream short, answers every plain request in the Chat shape
// whatever the dialect, and settles nothing.
func brokenTarget(t *testing.T) Target {
	t.Helper()
	var n atomic.Int64
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := fmt.Sprintf("req%d", n.Add(1))
		h := w.Header()
		h.Set("X-Request-Id", id)
		h.Set("X-Spillway-Model", testModel)
		h.Set("X-Spillway-Deployment", "p")
		h.Set("X-Spillway-Attempts", "1")
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"stream":true`)) {
			h.Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"id\":\"x\",\"model\":%q,\"choices\":[]}\n\n", testModel)
			return
		}
		h.Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object":"chat.completion","model":%q,"choices":[{"message":{"content":"mock p"}}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`, testModel)
	}))
	t.Cleanup(gw.Close)
	path := filepath.Join(t.TempDir(), "ledger.db")
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	tg := Target{BaseURL: gw.URL, Key: "k", Model: testModel, LedgerPath: path}
	for i, kind := range []string{"openai", "anthropic", "gemini"} {
		m, err := mock.New(kind, mock.Options{})
		if err != nil {
			t.Fatal(err)
		}
		rs := testRungs()
		d := rs[i].Deployment
		d.Model, d.BaseURL = "mock-"+d.ID, "http://127.0.0.1:1"
		tg.Rungs = append(tg.Rungs, Rung{Deployment: d, Mock: m})
	}
	return tg
}

// Run fails, with a report naming what broke, against a gateway that
// truncates streams and settles nothing.
func TestRunCatchesABrokenGateway(t *testing.T) {
	tg := brokenTarget(t)
	rep, err := Run(context.Background(), tg, Config{Requests: 60, Concurrency: 4, Rate: -1, Seed: 3})
	if !errors.Is(err, ErrInvariant) {
		t.Fatalf("err %v, want ErrInvariant", err)
	}
	if rep == nil || rep.Pass {
		t.Fatal("no failing report")
	}
	broken := rep.Broken()
	for _, want := range []string{invNoTruncation, invSettledOnce, invWellFormed, invAnswered} {
		if !slices.Contains(broken, want) {
			t.Errorf("%s not broken; broken: %v", want, broken)
		}
	}
	if rep.Streams.Truncated == 0 || len(rep.Phases) != len(phaseSpecs()) {
		t.Errorf("truncated %d, %d phases", rep.Streams.Truncated, len(rep.Phases))
	}
	// The mocks are left healthy.
	for _, r := range tg.Rungs {
		if r.Mock.Count() != 0 {
			t.Errorf("%s received requests", r.Deployment.ID)
		}
	}
}

func TestRunRefusesBadTargets(t *testing.T) {
	tg := brokenTarget(t)
	if _, err := Run(context.Background(), Target{Rungs: tg.Rungs[:2]}, Config{Requests: 1}); err == nil || errors.Is(err, ErrInvariant) {
		t.Errorf("two rungs: %v", err)
	}
	bad := tg
	bad.Rungs = append([]Rung{{Deployment: &catalog.Deployment{ID: "x"}, Mock: tg.Rungs[0].Mock}}, tg.Rungs...)
	if _, err := Run(context.Background(), bad, Config{Requests: 1}); err == nil {
		t.Error("an unpriced rung was taken")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if rep, err := Run(ctx, tg, Config{Requests: 10, Rate: -1}); err == nil || errors.Is(err, ErrInvariant) || rep != nil {
		t.Errorf("cancelled: %v", err)
	}
}
