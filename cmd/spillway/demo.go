package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/keys"
	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/mock"
)

// runDemo starts a mock provider for every loopback deployment of the
// config, the gateway in front of them, and sends traffic while it takes the
// primary down and brings it back, printing what each request saw.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("demo", `usage: spillway demo [flags]

Starts a mock provider for every loopback deployment of the config, the
gateway in front of them, and sends traffic while the primary suffers a
fault in the middle third, printing what each request saw.`, stderr)
	cfgPath := fs.String("config", "examples/mock.yaml", "config whose loopback deployments get mock providers")
	model := fs.String("model", "claude-sonnet-4-5", "public model to call")
	n := fs.Int("requests", 24, "requests to send")
	fault := fs.String("fault", "status=529", "fault the primary suffers during the middle third")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if *n < 1 {
		return usageErrorf("--requests must be at least 1")
	}
	cfg, err := catalog.Load(*cfgPath)
	if err != nil {
		return err
	}
	mocks := map[string]*mock.Mock{}
	for i := range cfg.Deployments {
		d := &cfg.Deployments[i]
		u, err := url.Parse(d.BaseURL)
		if err != nil || (u.Hostname() != "127.0.0.1" && u.Hostname() != "localhost") {
			continue
		}
		m, err := mock.New(d.Provider, mock.Options{Name: d.ID})
		if err != nil {
			return fmt.Errorf("mock for %s: %w", d.ID, err)
		}
		addr, stop, err := listenLoopback(m)
		if err != nil {
			return err
		}
		defer stop()
		d.BaseURL = "http://" + addr
		d.CredentialEnv = "" // mocks take any key
		mocks[d.ID] = m
	}
	// The demo's ledger lives and dies with the demo.
	dir, err := os.MkdirTemp("", "spillway-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg.Ledger.Path = filepath.Join(dir, "demo.db")
	snap, err := catalog.Build(cfg, *cfgPath)
	if err != nil {
		return err
	}
	rr, ok := snap.Route(*model)
	if !ok {
		return fmt.Errorf("model %q has no route in %s", *model, *cfgPath)
	}
	primary := rr.Deployments[0].ID
	pm := mocks[primary]
	if pm == nil {
		return fmt.Errorf("the primary %s of %s is not a loopback deployment", primary, *model)
	}
	bg, stopBG := context.WithCancel(context.Background())
	defer stopBG()
	gw, err := openGateway(bg, catalog.NewHolder(snap), slog.New(slog.DiscardHandler), io.Discard)
	if err != nil {
		return err
	}
	defer gw.close(context.Background())
	secret, _, err := keys.New(ctx, gw.store, "demo", "demo", nil, time.Now())
	if err != nil {
		return err
	}
	gwAddr, stopGW, err := listenLoopback(gw)
	if err != nil {
		return err
	}
	defer stopGW()
	fmt.Fprintf(stdout, "gateway http://%s  model %s  pool %v\n", gwAddr, *model, deploymentIDs(rr))
	fmt.Fprintf(stdout, "requests %d-%d: primary %s suffers %q\n\n", *n/3+1, 2**n/3, primary, *fault)

	const rowFmt = "%-3v %-6s %-6v %-16s %-8v %-5v %s\n"
	fmt.Fprintf(stdout, rowFmt, "#", "mode", "status", "served by", "attempts", "ms", "trail")
	okCount := 0
	for i := 1; i <= *n; i++ {
		switch i {
		case *n/3 + 1:
			if err := pm.SetFault(*fault); err != nil {
				return err
			}
		case 2**n/3 + 1:
			_ = pm.SetFault("")
			// The primary's circuit is open: wait out its open period so the
			// next request is the half-open probe that brings it back.
			wait := rr.Deployments[0].Health.OpenFor.D()
			if wait <= 0 || wait > 30*time.Second {
				wait = 30 * time.Second
			}
			fmt.Fprintf(stdout, "-- %s is healthy again; waiting %v for its circuit to half-open --\n", primary, wait)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wait):
			}
		}
		stream := i%2 == 0
		r := demoRequest(ctx, "http://"+gwAddr, secret, *model, stream)
		if r.ok {
			okCount++
		}
		fmt.Fprintf(stdout, rowFmt, i, r.mode, r.status, r.deployment, r.attempts, r.ms, r.trail)
	}
	fmt.Fprintf(stdout, "\n%d/%d requests succeeded; %s received %d requests\n", okCount, *n, primary, pm.Count())
	// Every request was billed once, against the rung that served it.
	// What the journal holds and the store has not ingested yet counts too.
	if err := gw.writer.Sync(ctx); err != nil {
		return err
	}
	rows, err := gw.store.Usage(ctx, ledger.UsageQuery{GroupBy: []string{"deployment"}})
	if err == nil {
		for _, r := range rows {
			fmt.Fprintf(stdout, "ledger: %-16s %3d requests  %3d failed over  %s USD\n", orDash(r.Group["deployment"]), r.Requests, r.FailedOver, usd(r.CostMicroUSD))
		}
	}
	return nil
}

func deploymentIDs(rr *catalog.ResolvedRoute) []string {
	var ids []string
	for _, d := range rr.Deployments {
		ids = append(ids, d.ID)
	}
	return ids
}

// demoRow is what one demo request saw.
type demoRow struct {
	mode, status, deployment, attempts, trail string
	ms                                        int64
	ok                                        bool
}

// demoRequest sends one chat completion.
func demoRequest(ctx context.Context, base, key, model string, stream bool) demoRow {
	body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"Say hello."}],"max_tokens":64,"stream":%v}`, model, stream)
	mode := "plain"
	if stream {
		mode = "stream"
	}
	start := time.Now()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return demoRow{mode: mode, status: "error", deployment: "-", attempts: "-", trail: err.Error()}
	}
	defer resp.Body.Close()
	ok := resp.StatusCode == http.StatusOK
	if stream && ok {
		// A stream succeeded only if it ended with [DONE], not an error event.
		ok = false
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if bytes.Equal(sc.Bytes(), []byte("data: [DONE]")) {
				ok = true
			}
		}
	} else {
		_, _ = io.Copy(io.Discard, resp.Body)
	}
	h := resp.Header
	return demoRow{mode: mode, status: fmt.Sprint(resp.StatusCode), deployment: orDash(h.Get("X-Spillway-Deployment")),
		attempts: orDash(h.Get("X-Spillway-Attempts")), trail: orDash(h.Get("X-Spillway-Trail")),
		ms: time.Since(start).Milliseconds(), ok: ok}
}

// listenLoopback serves h on an ephemeral loopback port until stop is called.
func listenLoopback(h http.Handler) (addr string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	return ln.Addr().String(), serveBackground(ln, h), nil
}
