package server_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/health"
	"github.com/spillway-gw/spillway/internal/mock"
	"github.com/spillway-gw/spillway/internal/provider"
	anthropicprov "github.com/spillway-gw/spillway/internal/provider/anthropic"
	openaiprov "github.com/spillway-gw/spillway/internal/provider/openai"
	"github.com/spillway-gw/spillway/internal/server"
)

// publicModel is the name callers use; exactModel the pool's exact model.
const (
	publicModel = "claude-sonnet-4-5"
	exactModel  = "claude-sonnet-4-5"
)

// rungSpec is one mock deployment of the test pool.
type rungSpec struct {
	id, kind string
}

// harness is mocks behind the gateway behind an httptest server.
type harness struct {
	t     testing.TB
	gw    *httptest.Server
	mocks map[string]*mock.Mock
	cfg   *catalog.Config
	// clock drives health: tests move it instead of sleeping.
	clock *fakeClock
}

// adminKey is the harness gateway's admin key.
const adminKey = "admin-secret"

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeClock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// silence bounds short enough to test, long enough for a loaded CI machine.
const (
	testFirstByte = 400 * time.Millisecond
	testIdle      = 400 * time.Millisecond
	// testTotal bounds a non-streamed attempt, whose headers come only with
	// the whole answer.
	testTotal = 2 * time.Second
)

func newHarness(t testing.TB, rungs ...rungSpec) *harness {
	t.Helper()
	return newHarnessWith(t, nil, rungs...)
}

// newHarnessWith lets a test edit the config before the gateway starts.
func newHarnessWith(t testing.TB, edit func(*catalog.Config), rungs ...rungSpec) *harness {
	t.Helper()
	h := &harness{t: t, mocks: map[string]*mock.Mock{}, clock: &fakeClock{now: time.Now()}}
	cfg := &catalog.Config{}
	pool := catalog.Pool{ID: "pool", Model: exactModel,
		Equivalence: &catalog.Equivalence{By: "test", Date: "2026-11-29", Evidence: "sha256:test"}}
	for _, r := range rungs {
		m, err := mock.New(r.kind, mock.Options{Name: r.id})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(m)
		t.Cleanup(srv.Close)
		h.mocks[r.id] = m
		cfg.Deployments = append(cfg.Deployments, catalog.Deployment{
			ID: r.id, Provider: r.kind, BaseURL: srv.URL, Model: "mock-" + r.id,
			Price:         &catalog.Price{InputPerMTok: 3, OutputPerMTok: 15},
			ContextWindow: 200000, MaxOutputTokens: 8192,
			Timeouts: catalog.Timeouts{FirstByte: catalog.Duration(testFirstByte), Idle: catalog.Duration(testIdle), Total: catalog.Duration(testTotal)},
		})
		pool.Deployments = append(pool.Deployments, r.id)
	}
	cfg.Pools = []catalog.Pool{pool}
	cfg.Routes = []catalog.Route{{Model: publicModel, Pool: "pool"}}
	cfg.Server.MaxBodyBytes = 64 << 10
	if edit != nil {
		edit(cfg)
	}
	h.cfg = cfg
	snap, err := catalog.Build(cfg, "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	reg := provider.NewRegistry()
	reg.Register(catalog.KindOpenAI, openaiprov.New())
	reg.Register(catalog.KindAnthropic, anthropicprov.New())
	log := slog.New(slog.DiscardHandler)
	gw := server.New(server.Options{Catalog: catalog.NewHolder(snap), Registry: reg, Log: log,
		Health: health.NewTracker(h.clock), AdminKey: adminKey})
	h.gw = httptest.NewServer(gw)
	t.Cleanup(h.gw.Close)
	return h
}

func (h *harness) client(opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{
		option.WithBaseURL(h.gw.URL + "/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0),
	}, opts...)...)
}

func (h *harness) fault(id, script string) {
	h.t.Helper()
	if err := h.mocks[id].SetFault(script); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) counts() map[string]int {
	c := map[string]int{}
	for id, m := range h.mocks {
		c[id] = m.Count()
	}
	return c
}

func hdr(r *http.Response, k string) string {
	if r == nil {
		return ""
	}
	return r.Header.Get(k)
}
