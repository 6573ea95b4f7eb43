package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	"time"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/logsink"
)

const serveUsage = `usage:
  spillway serve [--config FILE] [--data-dir DIR] [--listen ADDR] [--mocks] [--reload-every 2s] [--pprof ADDR]

Runs the gateway. The config is --config, else $SPILLWAY_CONFIG, else
./spillway.yaml; a relative ledger.path lives in --data-dir ($SPILLWAY_DATA),
else beside the config. The first start creates the ledger and prints a
virtual key and an admin key, once each. The config is re-read when it
changes; SIGINT/SIGTERM drain in-flight requests for server.shutdown_grace.
`

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", serveUsage, stderr)
	cfgFlag := fs.String("config", "", "config file (default: $"+configEnv+", else ./"+defaultConfigFile+")")
	dataDir := fs.String("data-dir", os.Getenv(dataDirEnv), "where a relative ledger.path lives (default: $"+dataDirEnv+", else the config file's directory)")
	listen := fs.String("listen", "", "listen address (overrides server.listen)")
	reload := fs.Duration("reload-every", 2*time.Second, "how often to check the config file for changes (0 = never)")
	withMocks := fs.Bool("mocks", false, "also run the built-in mock provider of every loopback deployment, on its configured address (following reloads)")
	pprofAddr := fs.String("pprof", os.Getenv("SPILLWAY_PPROF"), "serve Go's pprof profiles on this loopback address (default $SPILLWAY_PPROF; empty = off)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	cfgPath, err := findConfig(*cfgFlag)
	if err != nil {
		return err
	}
	// The access log is handed off: a request never waits on stderr.
	logOut := logsink.New(stderr, 0)
	defer logOut.Close()
	log := slog.New(slog.NewJSONHandler(logOut, nil))
	snap, err := catalog.LoadSnapshot(cfgPath)
	if err != nil {
		return err
	}
	// The port first: a gateway that cannot listen creates no ledger and
	// no key.
	addr := snap.Config().Server.Listen
	if *listen != "" {
		addr = *listen
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w (server.listen or --listen sets the address)", addr, err)
	}
	defer ln.Close()
	holder := catalog.NewHolder(snap)
	// The refreshers stop with bg; the ledger closes after the server drained.
	bg, stopBG := context.WithCancel(context.Background())
	defer stopBG()
	if *withMocks {
		mocks := newMockSet(stdout, log)
		if err := mocks.sync(snap, true); err != nil {
			return err
		}
		defer mocks.close()
		if *reload > 0 {
			go mocks.follow(bg, holder, *reload)
		}
	}
	if *pprofAddr != "" {
		stop, err := servePprof(*pprofAddr, log)
		if err != nil {
			return err
		}
		defer stop()
	}
	if *reload > 0 {
		go holder.Watch(bg, cfgPath, *reload, log)
	}
	ledgerPath := statePath(snap.Config().Ledger.Path, cfgPath, *dataDir)
	gw, err := openGateway(bg, holder, log, stdout, withAccessLog(logOut), withLedgerPath(ledgerPath), withConfigPath(cfgPath))
	if err != nil {
		return err
	}
	warnUnreachable(snap, stdout, log)
	scheme := "http"
	if snap.Config().Server.TLS.Enabled() {
		scheme = "https"
	}
	fmt.Fprintf(stdout, "spillway listening on %s://%s (config %s, ledger %s)\n", scheme, ln.Addr(), cfgPath, gw.ledgerDesc)
	log.Info("spillway listening", "addr", ln.Addr().String(), "scheme", scheme, "config", cfgPath, "ledger", gw.ledgerDesc)
	err = serveHTTP(ctx, ln, gw, snap.Config().Server, log)
	grace := snap.Config().Server.ShutdownGrace.D()
	if ctx.Err() != nil {
		fmt.Fprintf(stdout, "spillway shutting down: in-flight requests had up to %s to finish; closing the ledger\n", grace)
		log.Info("spillway shutting down", "grace", grace.String())
	}
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if cerr := gw.close(cctx); err == nil {
		err = cerr
	}
	if err == nil {
		fmt.Fprintln(stdout, "spillway stopped")
		log.Info("spillway stopped")
	}
	return err
}

// servePprof serves the runtime profiles on a separate loopback listener,
// never on the gateway's own.
func servePprof(addr string, log *slog.Logger) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("pprof: %w", err)
	}
	// Contention is what a profile of a gateway most often has to explain,
	// so the mutex and block profiles are on while pprof is: one mutex
	// contention in 100, and a blocking event for every millisecond
	// blocked (each sampled event costs a stack walk, so not finer).
	runtime.SetMutexProfileFraction(100)
	runtime.SetBlockProfileRate(int(time.Millisecond.Nanoseconds()))
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	log.Info("pprof listening", "addr", ln.Addr().String())
	return serveBackground(ln, mux), nil
}

// serveBackground serves h on ln until the returned stop is called.
func serveBackground(ln net.Listener, h http.Handler) func() {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-done
	}
}

// serveHTTP serves until ctx ends, then drains in-flight requests for the
// configured grace period. With server.tls set it serves HTTPS (and
// HTTP/2) on ln, its certificate reloaded when the files change.
func serveHTTP(ctx context.Context, ln net.Listener, h http.Handler, sc catalog.Server, log *slog.Logger) error {
	tc, err := serverTLS(sc.TLS, log)
	if err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: sc.ReadHeaderTimeout.D(),
		IdleTimeout:       sc.IdleTimeout.D(),
		// No WriteTimeout: streams legitimately last minutes; each attempt
		// is bounded by its deployment's silence bounds instead.
		ErrorLog:  slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		TLSConfig: tc,
	}
	errc := make(chan error, 1)
	go func() {
		if tc != nil {
			errc <- srv.ServeTLS(ln, "", "")
			return
		}
		errc <- srv.Serve(ln)
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	grace := sc.ShutdownGrace.D()
	if grace <= 0 {
		grace = 30 * time.Second
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err = srv.Shutdown(sctx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}
