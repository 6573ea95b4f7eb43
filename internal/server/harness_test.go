package server_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/spillway-gw/spillway/internal/budget"
	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/health"
	"github.com/spillway-gw/spillway/internal/keys"
	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/ledger/sqlite"
	"github.com/spillway-gw/spillway/internal/mock"
	"github.com/spillway-gw/spillway/internal/provider"
	anthropicprov "github.com/spillway-gw/spillway/internal/provider/anthropic"
	bedrockprov "github.com/spillway-gw/spillway/internal/provider/bedrock"
	geminiprov "github.com/spillway-gw/spillway/internal/provider/gemini"
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
	t  testing.TB
	gw *httptest.Server
	// handler is the gateway itself, for requests that need a chosen
	// remote address.
	handler http.Handler
	mocks   map[string]*mock.Mock
	cfg     *catalog.Config
	// clock drives health: tests move it instead of sleeping.
	clock *fakeClock
	// key is a valid virtual key (org "acme", team "search").
	key    string
	keyRec *ledger.Key
	store  *sqlite.Store
	dbPath string
	// logs holds everything the gateway logged.
	logs   *syncBuffer
	writer *ledger.Writer
	budget *budget.Accountant
	auth   *keys.Authenticator
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
	return newHarnessOpts(t, edit, nil, rungs...)
}

// newHarnessOpts also lets a test change the server's options.
func newHarnessOpts(t testing.TB, edit func(*catalog.Config), tweak func(*server.Options), rungs ...rungSpec) *harness {
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
		if r.kind == catalog.KindBedrock {
			// Bedrock signs every request: give it an API key (the mock
			// accepts any bearer token).
			cfg.Deployments[len(cfg.Deployments)-1].CredentialEnv = "SPILLWAY_TEST_BEDROCK_KEY"
		}
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
	ctx := context.Background()
	h.dbPath = filepath.Join(t.TempDir(), "ledger.db")
	store, err := sqlite.Open(ctx, h.dbPath)
	if err != nil {
		t.Fatal(err)
	}
	h.store = store
	// The gateway's ledger: a journal in front of the store (ledger_helpers
	// Syncs before reading the file).
	journal, err := ledger.OpenJournal(h.dbPath + ".journal")
	if err != nil {
		t.Fatal(err)
	}
	h.writer = ledger.NewWriter(store, ledger.WriterOptions{Journal: journal,
		Watch: []string{h.dbPath}, CheckEvery: 10 * time.Millisecond, MinFreeBytes: -1})
	t.Cleanup(func() {
		_ = h.writer.Close(context.Background())
		_ = store.Close()
	})
	h.logs = &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h.auth = keys.NewAuthenticator(store, log, nil)
	h.key, h.keyRec, err = keys.New(ctx, store, "acme", "search", nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	h.budget = budget.New(nil)
	reg := provider.NewRegistry()
	reg.Register(catalog.KindOpenAI, openaiprov.New())
	reg.Register(catalog.KindAnthropic, anthropicprov.New())
	reg.Register(catalog.KindGemini, geminiprov.New())
	reg.Register(catalog.KindBedrock, bedrockprov.New())
	opts := server.Options{Catalog: catalog.NewHolder(snap), Registry: reg, Log: log,
		Getenv: func(string) string { return "test-credential" },
		Health: health.NewTracker(h.clock), AdminKey: adminKey,
		Auth: h.auth, Budget: h.budget, Ledger: h.writer, Store: store}
	if tweak != nil {
		tweak(&opts)
	}
	gw := server.New(opts)
	h.handler = gw
	h.gw = httptest.NewServer(gw)
	t.Cleanup(h.gw.Close)
	return h
}

func (h *harness) client(opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{
		option.WithBaseURL(h.gw.URL + "/v1/"), option.WithAPIKey(h.key), option.WithMaxRetries(0),
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

// post sends a raw JSON request with the harness's virtual key.
func (h *harness) post(path, body string, headers ...string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, h.gw.URL+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+h.key)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return http.DefaultClient.Do(req)
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// restrictedKey creates a virtual key that may call only models.
func (h *harness) restrictedKey(t testing.TB, models ...string) string {
	t.Helper()
	k, _, err := keys.New(context.Background(), h.store, "acme", "search", models, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// newKey creates another virtual key of org acme, team search, and returns
// its secret and id.
func (h *harness) newKey(t testing.TB) (string, string) {
	t.Helper()
	k, rec, err := keys.New(context.Background(), h.store, "acme", "search", nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := h.auth.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	return k, rec.ID
}

func optionAPIKey(k string) option.RequestOption { return option.WithAPIKey(k) }
