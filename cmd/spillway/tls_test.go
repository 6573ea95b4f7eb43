package main

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/tlscert/tlscerttest"
)

// A certificate that no longer loads at start-up is an error before
// anything is served, and the listener is given back.
func TestServeHTTPTLSRefusesABadPair(t *testing.T) {
	dir := t.TempDir()
	a := tlscerttest.Write(t, dir, "a", "a")
	b := tlscerttest.Write(t, dir, "b", "b")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sc := catalog.Server{TLS: catalog.TLS{CertFile: a.CertFile, KeyFile: b.KeyFile}}
	err = serveHTTP(context.Background(), ln, http.NotFoundHandler(), sc, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "server.tls") || !strings.Contains(err.Error(), "private key does not match") {
		t.Fatalf("serveHTTP = %v, want the pair's problem", err)
	}
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("listener left open: Accept = %v", err)
	}
}

// With server.tls, serveHTTP answers HTTPS (HTTP/2 too) with the
// configured certificate, refuses plain HTTP, and drains on shutdown.
func TestServeHTTPServesTLS(t *testing.T) {
	dir := t.TempDir()
	p := tlscerttest.Write(t, dir, "gw", "spillway-test")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sc := catalog.Server{TLS: catalog.TLS{CertFile: p.CertFile, KeyFile: p.KeyFile}, ShutdownGrace: catalog.Duration(5 * time.Second)}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.Proto) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveHTTP(ctx, ln, h, sc, slog.New(slog.DiscardHandler)) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serveHTTP after shutdown: %v", err)
		}
	}()

	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: p.Pool()}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	resp, err := client.Get("https://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.TLS == nil || resp.TLS.PeerCertificates[0].Subject.CommonName != "spillway-test" || string(body) != "HTTP/2.0" {
		t.Errorf("answer %q over %v", body, resp.TLS)
	}

	resp, err = (&http.Client{Timeout: 10 * time.Second}).Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("plain HTTP to the TLS listener: %d, want 400", resp.StatusCode)
	}
}

// Without server.tls nothing changes: plain HTTP.
func TestServerTLSOff(t *testing.T) {
	tc, err := serverTLS(catalog.TLS{}, slog.New(slog.DiscardHandler))
	if tc != nil || err != nil {
		t.Errorf("serverTLS(zero) = %v, %v", tc, err)
	}
	if _, err := serverTLS(catalog.TLS{CertFile: filepath.Join(t.TempDir(), "x.crt"), KeyFile: "x.key"}, nil); err == nil {
		t.Error("a missing certificate was accepted")
	}
}
