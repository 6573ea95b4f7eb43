package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"time"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/logsink"
	"github.com/spillway-gw/spillway/internal/mock"
)

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "examples/mock.yaml", "config file")
	listen := fs.String("listen", "", "listen address (overrides server.listen)")
	reload := fs.Duration("reload-every", 2*time.Second, "how often to check the config file for changes (0 = never)")
	withMocks := fs.Bool("mocks", false, "also run the built-in mock provider of every loopback deployment, on its configured address")
	pprofAddr := fs.String("pprof", os.Getenv("SPILLWAY_PPROF"), "serve Go's pprof profiles on this loopback address (default $SPILLWAY_PPROF; empty = off)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	// The access log is handed off: a request never waits on stderr.
	logOut := logsink.New(stderr, 0)
	defer logOut.Close()
	log := slog.New(slog.NewJSONHandler(logOut, nil))
	snap, err := catalog.LoadSnapshot(*cfgPath)
	if err != nil {
		return err
	}
	if *withMocks {
		stop, err := startConfiguredMocks(ctx, snap, stdout)
		if err != nil {
			return err
		}
		defer stop()
	}
	if *pprofAddr != "" {
		stop, err := servePprof(*pprofAddr, log)
		if err != nil {
			return err
		}
		defer stop()
	}
	holder := catalog.NewHolder(snap)
	if *reload > 0 {
		go holder.Watch(ctx, *cfgPath, *reload, log)
	}
	// The refreshers stop with bg; the ledger closes after the server drained.
	bg, stopBG := context.WithCancel(context.Background())
	defer stopBG()
	gw, err := openGateway(bg, holder, log, stdout, withAccessLog(logOut))
	if err != nil {
		return err
	}
	addr := snap.Config().Server.Listen
	if *listen != "" {
		addr = *listen
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		_ = gw.close(context.Background())
		return err
	}
	fmt.Fprintf(stdout, "spillway listening on http://%s (config %s, ledger %s)\n", ln.Addr(), *cfgPath, snap.Config().Ledger.Path)
	err = serveHTTP(ctx, ln, gw, snap.Config().Server, log)
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if cerr := gw.close(cctx); err == nil {
		err = cerr
	}
	return err
}

// startConfiguredMocks runs a mock provider on the address of every
// loopback deployment, so a mock config serves with no other process.
func startConfiguredMocks(ctx context.Context, snap *catalog.Snapshot, stdout io.Writer) (func(), error) {
	var stops []func()
	stopAll := func() {
		for _, s := range stops {
			s()
		}
	}
	seen := map[string]bool{}
	for _, d := range snap.Deployments() {
		u, err := url.Parse(d.BaseURL)
		if err != nil || (u.Hostname() != "127.0.0.1" && u.Hostname() != "localhost") || seen[u.Host] {
			continue
		}
		seen[u.Host] = true
		m, err := mock.New(d.Provider, mock.Options{Name: d.ID})
		if err != nil {
			stopAll()
			return nil, fmt.Errorf("mock for %s: %w", d.ID, err)
		}
		ln, err := net.Listen("tcp", u.Host)
		if err != nil {
			stopAll()
			return nil, fmt.Errorf("mock for %s: %w", d.ID, err)
		}
		stops = append(stops, serveBackground(ln, m))
		fmt.Fprintf(stdout, "mock %s provider for %s on http://%s\n", d.Provider, d.ID, ln.Addr())
	}
	return stopAll, nil
}

// servePprof serves the runtime profiles on a separate loopback listener,
// never on the gateway's own.
func servePprof(addr string, log *slog.Logger) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("pprof: %w", err)
	}
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
