package catalog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/tlscert/tlscerttest"
)

func TestTLSRefusals(t *testing.T) {
	dir := t.TempDir()
	a := tlscerttest.Write(t, dir, "a", "a")
	b := tlscerttest.Write(t, dir, "b", "b")
	big := filepath.Join(dir, "big.key")
	if err := os.WriteFile(big, make([]byte, 2<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.crt")
	tlsBlock := func(cert, key string) string {
		s := "server:\n  tls:\n"
		if cert != "" {
			s += "    cert_file: " + cert + "\n"
		}
		if key != "" {
			s += "    key_file: " + key + "\n"
		}
		return s + minimal
	}
	tests := []struct {
		name  string
		src   string
		wants []want
	}{
		{"cert without key", tlsBlock(a.CertFile, ""), []want{{2, "server.tls.key_file", "required with cert_file"}}},
		{"key without cert", tlsBlock("", a.KeyFile), []want{{2, "server.tls.cert_file", "required with key_file"}}},
		{"cert missing", tlsBlock(missing, a.KeyFile), []want{{3, "server.tls.cert_file", "cannot read " + missing + ": no such file or directory"}}},
		{"key a directory", tlsBlock(a.CertFile, dir), []want{{4, "server.tls.key_file", "not a regular file"}}},
		{"key too large", tlsBlock(a.CertFile, big), []want{{4, "server.tls.key_file", "larger than 1048576 bytes"}}},
		{"not a pair", tlsBlock(a.CertFile, b.KeyFile), []want{{2, "server.tls", "are not a certificate and its key"}}},
		{"a key for a cert", tlsBlock(a.KeyFile, a.KeyFile), []want{{2, "server.tls", "are not a certificate and its key"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			requireProblems(t, parseProblems(t, tc.src), tc.wants...)
		})
	}
}

// Relative certificate paths are the config file's neighbours, wherever
// the gateway was started from.
func TestTLSPathsRelativeToConfig(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "certs"), 0o700); err != nil {
		t.Fatal(err)
	}
	p := tlscerttest.Write(t, filepath.Join(dir, "certs"), "gw", "gateway")
	cfg := filepath.Join(dir, "spillway.yaml")
	writeFile(t, cfg, "server:\n  tls: {cert_file: certs/gw.crt, key_file: "+p.KeyFile+"}\n"+minimal)
	c, err := Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Server.TLS; got.CertFile != p.CertFile || got.KeyFile != p.KeyFile || !got.Enabled() {
		t.Errorf("tls = %+v, want %s and %s", got, p.CertFile, p.KeyFile)
	}
	if _, err := Build(c, cfg); err != nil {
		t.Fatal(err)
	}
}

func TestTLSIsRestartOnly(t *testing.T) {
	boot := &Config{}
	now := &Config{Server: Server{TLS: TLS{CertFile: "/c.crt", KeyFile: "/c.key"}}}
	got := strings.Join(RestartOnly(boot, now), "; ")
	if !strings.Contains(got, "server.tls.cert_file ( → /c.crt)") || !strings.Contains(got, "server.tls.key_file ( → /c.key)") {
		t.Errorf("RestartOnly = %s", got)
	}
}

func TestCORSRefusals(t *testing.T) {
	cors := func(body string) string { return "server:\n  cors:\n" + body + minimal }
	tests := []struct {
		name  string
		src   string
		wants []want
	}{
		{"* with credentials", cors("    allowed_origins: ['*']\n    allow_credentials: true\n"),
			[]want{{3, "server.cors.allowed_origins[0]", `"*" cannot be used with allow_credentials: true`}}},
		{"* among others", cors("    allowed_origins: [https://a.example, '*']\n"),
			[]want{{3, "server.cors.allowed_origins[1]", `"*" allows every origin: list it alone`}}},
		{"null origin", cors("    allowed_origins: ['null']\n"),
			[]want{{3, "server.cors.allowed_origins[0]", `the "null" origin`}}},
		{"a path", cors("    allowed_origins:\n      - https://app.example.com/\n"),
			[]want{{4, "server.cors.allowed_origins[0]", "an origin has no path, query or credentials (write https://app.example.com)"}}},
		{"no scheme", cors("    allowed_origins: [app.example.com]\n"),
			[]want{{3, "server.cors.allowed_origins[0]", `"app.example.com" is not an origin: write scheme://host[:port]`}}},
		{"wildcard host", cors("    allowed_origins: ['https://*.example.com']\n"),
			[]want{{3, "server.cors.allowed_origins[0]", "wildcards in a host are not supported"}}},
		{"empty", cors("    allowed_origins: ['']\n"),
			[]want{{3, "server.cors.allowed_origins[0]", "empty origin"}}},
		{"credentials not a bool", cors("    allowed_origins: [https://a.example]\n    allow_credentials: yes\n"),
			[]want{{4, "server.cors.allow_credentials", `expected true or false, got "yes"`}}},
		{"max_age without unit", cors("    allowed_origins: [https://a.example]\n    max_age: 600\n"),
			[]want{{4, "server.cors.max_age", "has no unit"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			requireProblems(t, parseProblems(t, tc.src), tc.wants...)
		})
	}
}

func TestCORSAccepted(t *testing.T) {
	for _, src := range []string{
		"server:\n  cors: {allowed_origins: ['*'], max_age: 1h}\n",
		"server:\n  cors:\n    allowed_origins: [https://app.example.com, 'http://localhost:5173', chrome-extension://abcdef]\n    allow_credentials: true\n",
	} {
		c, err := Parse([]byte(src+minimal), "test.yaml")
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if len(c.Server.CORS.AllowedOrigins) == 0 {
			t.Errorf("%s: no origins decoded", src)
		}
	}
	c, _ := Parse([]byte("server:\n  cors: {allowed_origins: ['*'], max_age: 1h}\n"+minimal), "test.yaml")
	if c.Server.CORS.MaxAge.D() != time.Hour || c.Server.CORS.AllowCredentials {
		t.Errorf("cors = %+v", c.Server.CORS)
	}
}
