// Package server is spillway's HTTP surface: it authenticates and decodes a
// caller's request in its dialect, selects the rungs, runs the engine and
// writes the answer back with the headers that say which hops it took.
package server

import (
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spillway-gw/spillway/internal/accesslog"
	"github.com/spillway-gw/spillway/internal/activity"
	"github.com/spillway-gw/spillway/internal/billing"
	"github.com/spillway-gw/spillway/internal/budget"
	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/dialect/anthropicmsgs"
	"github.com/spillway-gw/spillway/internal/dialect/openaiembed"
	"github.com/spillway-gw/spillway/internal/dialect/openairesponses"
	"github.com/spillway-gw/spillway/internal/engine"
	"github.com/spillway-gw/spillway/internal/failure"
	"github.com/spillway-gw/spillway/internal/health"
	"github.com/spillway-gw/spillway/internal/idempotency"
	"github.com/spillway-gw/spillway/internal/keys"
	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/metrics"
	"github.com/spillway-gw/spillway/internal/provider"
	"github.com/spillway-gw/spillway/internal/quality"
	"github.com/spillway-gw/spillway/internal/sticky"
	"github.com/spillway-gw/spillway/internal/tracing"
)

// Snapshots supplies the current catalog snapshot (a *catalog.Holder).
type Snapshots interface {
	Load() *catalog.Snapshot
}

// Options assembles a Server. Nil hooks have documented defaults.
type Options struct {
	Catalog  Snapshots
	Registry *provider.Registry
	// Health tracks deployment health (default: a tracker on the system
	// clock).
	Health *health.Tracker
	// AdminKey is a fixed admin secret (SPILLWAY_ADMIN_KEY), accepted
	// besides Admin's key from the ledger; empty: none.
	AdminKey string
	// Admin checks the admin credential that protects /v1/admin/* (and
	// /metrics, per server.metrics_auth). Nil: AdminKey alone; with
	// neither, the admin endpoints are disabled.
	Admin *keys.AdminAuth
	// Auth authenticates virtual keys. Required: every generation
	// endpoint needs a valid key.
	Auth *keys.Authenticator
	// Budget gates spend and rates at org, team, key and model scope (nil:
	// no gates; the worst case is still reserved in the ledger).
	Budget *budget.Accountant
	// Ledger records reservations and settlements (nil: nothing recorded).
	Ledger *ledger.Writer
	// Store serves the admin key, budget and usage endpoints (nil: those
	// endpoints answer 404).
	Store ledger.Store
	// UsageWait bounds how long GET /v1/usage waits for Ledger's journal
	// to reach Store before it answers 503 ledger_unavailable (0: 3s).
	UsageWait time.Duration
	// Idempotency keeps Idempotency-Key answers (default: a store with the
	// default bounds). When it is shared across replicas and a key cannot
	// be claimed there, the request is answered 503 idempotency_unavailable
	// in its dialect before any gate or provider, or run with the key owned
	// here alone, per the store's DownPolicy (shared_state.
	// idempotency_when_down); requests without a key are unaffected.
	Idempotency *idempotency.Store
	// Metrics records Prometheus metrics (default: a fresh registry).
	Metrics *metrics.Metrics
	// AccessLog, when set, receives one JSON line per request (the same
	// fields as the slog "request" record, written without slog); nil logs
	// through Log.
	AccessLog io.Writer
	// AccessSample keeps a share of the access-log lines per outcome
	// (log.access); nil writes every line. Metrics, the ledger and traces
	// count every request either way.
	AccessSample *accesslog.Sampler
	Log          *slog.Logger
	// Getenv resolves credential environment variables (default os.Getenv).
	Getenv func(string) string
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Transport wraps each deployment's transport, e.g. for tests
	// (default nil: the deployment's own transport).
	Transport func(d *catalog.Deployment, base http.RoundTripper) http.RoundTripper
	// Sticky keeps the conversation pins (default: a store of
	// routing.sticky_capacity pins on Now).
	Sticky *sticky.Store
	// SharedStats reports the shared-state client (shared_state.driver
	// redis) for /metrics: spillway_shared_state_up and its counters, to
	// which the server adds the Idempotency store's keys that could not be
	// claimed across replicas (refused or run locally). Nil (driver none):
	// not exported.
	SharedStats func() metrics.SharedStats
	// Tracer exports a span per request and one per attempt (nil, the
	// default: tracing off, and nothing allocated for it).
	Tracer *tracing.Tracer
}

// Server serves the gateway's HTTP API.
type Server struct {
	opts Options
	idem *idempotency.Store
	mux  *http.ServeMux
	bufs sync.Pool // 4 KiB: whole answers and error bodies
	// streamBufs: 1 KiB, held by a stream for its life (see stream)
	streamBufs sync.Pool
	health     *health.Tracker
	engine     *engine.Engine
	pins       *sticky.Store
	// billing reserves and settles each request (money.go).
	billing billing.Biller
	// quality measures answers per deployment and alerts on divergence
	// (quality.go); in this process only.
	quality *quality.Monitor
	// activity keeps recent traffic and failed attempts for the dashboard.
	activity *activity.Recorder

	rtMu sync.Mutex
	rt   atomic.Pointer[runtime]
}

// New builds a Server.
func New(opts Options) *Server {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Health == nil {
		opts.Health = health.NewTracker(nil)
	}
	if opts.Auth == nil {
		panic("server: Options.Auth is required")
	}
	if opts.Idempotency == nil {
		opts.Idempotency = idempotency.New(idempotency.Options{})
	}
	if opts.Admin == nil {
		opts.Admin = keys.NewAdminAuth(nil, opts.AdminKey)
	}
	ownMetrics := opts.Metrics == nil
	if ownMetrics {
		opts.Metrics = metrics.New(opts.Health)
		if opts.Ledger != nil {
			opts.Metrics.WatchLedger(opts.Ledger.Stats)
		}
		if cs, ok := opts.Catalog.(configStatus); ok {
			opts.Metrics.WatchConfig(cs.Status)
		}
	}
	if opts.SharedStats != nil {
		opts.Metrics.WatchShared(sharedStats(opts.SharedStats, opts.Idempotency))
	}
	if opts.Sticky == nil {
		opts.Sticky = newPins(&opts)
	}
	s := &Server{opts: opts, mux: http.NewServeMux(), health: opts.Health, idem: opts.Idempotency, pins: opts.Sticky}
	s.billing = billing.Biller{Budget: opts.Budget, Log: opts.Log, Now: opts.Now}
	if opts.Ledger != nil { // never a typed nil in the interface
		s.billing.Ledger = opts.Ledger
	}
	if ownMetrics {
		opts.Metrics.WatchRungs(s.healthyRungs)
	}
	s.engine = engine.New(opts.Log, engine.WithGate(quotaGate{next: healthGate{opts.Health}, s: s}),
		engine.WithAnswerMemory(opts.Catalog.Load().Config().Server.MaxAnswerMemory),
		engine.WithObserver(opts.Metrics))
	s.quality = s.newQuality()
	s.bufs.New = func() any { b := make([]byte, 0, 4096); return &b }
	s.streamBufs.New = func() any { b := make([]byte, 0, 1024); return &b }
	s.routes()
	return s
}

func (s *Server) routes() {
	s.mux.HandleFunc("GET /healthz", s.handleHealthz)
	s.mux.HandleFunc("GET /readyz", s.handleHealthz)
	s.mux.HandleFunc("GET /v1/models", s.handleModels)
	s.mux.HandleFunc("GET /v1/models/{id...}", s.handleModel)
	s.mux.Handle("GET /v1/admin/health", s.admin(s.handleAdminHealth))
	s.mux.Handle("GET /v1/admin/explain", s.admin(s.handleExplain))
	s.mux.Handle("POST /v1/admin/explain", s.admin(s.handleExplain))
	s.mux.Handle("POST /v1/admin/keys", s.admin(s.handleCreateKey))
	s.mux.Handle("GET /v1/admin/keys", s.admin(s.handleListKeys))
	s.mux.Handle("DELETE /v1/admin/keys/{id}", s.admin(s.handleRevokeKey))
	s.mux.Handle("PUT /v1/admin/budgets", s.admin(s.handleSetBudget))
	s.mux.Handle("GET /v1/admin/budgets", s.admin(s.handleListBudgets))
	s.mux.Handle("GET /v1/admin/config", s.admin(s.handleAdminConfig))
	s.mux.HandleFunc("GET /v1/usage", s.handleUsage)
	s.mux.Handle("GET /metrics", s.metricsHandler())
	s.handle("POST /v1/chat/completions", openaiChat())
	s.handle("POST /v1/responses", openaiResponses())
	s.handle("POST /v1/messages", anthropicMessages())
	s.handle("POST /v1/embeddings", openaiembed.New())
	s.mux.Handle("POST /v1/messages/count_tokens", &countHandler{s: s, d: anthropicmsgs.New()})
	s.mux.Handle("POST /v1/responses/input_tokens", &countHandler{s: s, d: openairesponses.New()})
	s.routeStateless()
	s.routeQuality()
	s.routeDashboard()
}

func (s *Server) handle(pattern string, d dialect.Dialect) {
	s.mux.Handle(pattern, &generateHandler{s: s, d: d, endpoint: pattern})
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.cors(w, r) {
		return // a browser's preflight, answered
	}
	w, r = s.guardBody(w, r)
	s.mux.ServeHTTP(w, r)
}

// newRequestID returns a request id that sorts by time: six bytes of Unix
// milliseconds, then six random bytes. The ledger keys its rows by it, and
// time-ordered keys land at the end of its b-trees instead of on random
// pages, which keeps each ingest's page writes few.
func newRequestID(now time.Time) string {
	var b [12]byte
	ms := uint64(now.UnixMilli())
	for i := 5; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	_, _ = rand.Read(b[6:])
	return hex.EncodeToString(b[:])
}

func (s *Server) getBuf() *[]byte { return s.bufs.Get().(*[]byte) }

func (s *Server) putBuf(b *[]byte) {
	if cap(*b) > 1<<20 {
		return // do not pin big buffers
	}
	*b = (*b)[:0]
	s.bufs.Put(b)
}

// metricsHandler serves Prometheus metrics; with an admin key configured,
// scrapes must present it (as a bearer token).
// metricsAllowed applies server.metrics_auth: "loopback" (the default)
// lets a scraper on the same host in without a credential, "none" lets
// anyone in, "admin" asks everyone for the admin key. Without any admin
// key, metrics are open (there is nothing to ask for).
func (s *Server) metricsAllowed(r *http.Request) bool {
	if !s.opts.Admin.Enabled() || s.isAdmin(r) {
		return true
	}
	switch s.opts.Catalog.Load().Config().Server.MetricsAuth {
	case catalog.MetricsAuthNone:
		return true
	case catalog.MetricsAuthAdmin:
		return false
	}
	return isLoopback(r.RemoteAddr)
}

// isLoopback reports whether a peer address is on this host.
func isLoopback(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

func (s *Server) metricsHandler() http.Handler {
	h := s.opts.Metrics.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.metricsAllowed(r) {
			writeJSONError(w, &failure.Public{Status: http.StatusUnauthorized, Code: "invalid_admin_key",
				Message: "metrics need the gateway's admin key as a bearer token from this address (server.metrics_auth)"})
			return
		}
		h.ServeHTTP(w, r)
	})
}

// sharedStats adds to the shared-state client's counters the keyed
// requests whose claim across replicas could not be made, read at scrape.
func sharedStats(client func() metrics.SharedStats, idem *idempotency.Store) func() metrics.SharedStats {
	return func() metrics.SharedStats {
		s, st := client(), idem.Stats()
		s.IdempotencyRefused, s.IdempotencyLocal = st.SharedRefused, st.SharedLocal
		return s
	}
}
