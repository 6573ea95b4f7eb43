package main

import (
	"crypto/tls"
	"fmt"
	"log/slog"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/tlscert"
)

// serverTLS is the TLS configuration serveHTTP answers HTTPS with, or nil
// when server.tls is not set. The certificate is re-read when either file
// changes (checked at most every tlscert.DefaultCheckEvery, by a
// handshake), so a renewed certificate needs no restart; one that fails
// to load is logged and the last good one stays.
func serverTLS(t catalog.TLS, log *slog.Logger) (*tls.Config, error) {
	if !t.Enabled() {
		return nil, nil
	}
	r, err := tlscert.New(t.CertFile, t.KeyFile, tlscert.Options{Log: log})
	if err != nil {
		return nil, fmt.Errorf("server.tls: %w", err)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: r.GetCertificate}, nil
}
