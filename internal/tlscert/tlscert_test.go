package tlscert

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/clock/clocktest"
	"github.com/spillway-gw/spillway/internal/tlscert/tlscerttest"
)

func TestReadFileRefusals(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.pem")
	if err := os.WriteFile(big, make([]byte, MaxFileBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		path string
		want string
	}{
		"missing":   {filepath.Join(dir, "nope.pem"), "no such file"},
		"directory": {dir, "not a regular file"},
		"too large": {big, "larger than 1048576 bytes"},
	}
	if runtime.GOOS != "windows" {
		fifo := filepath.Join(dir, "fifo")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		// Opening a FIFO would block until a writer came: it is refused
		// before it is opened.
		cases["fifo"] = struct{ path, want string }{fifo, "not a regular file"}
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ReadFile(tc.path)
			var pe *fs.PathError
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &pe) {
				t.Errorf("ReadFile(%s) = %v, want a PathError saying %q", tc.path, err, tc.want)
			}
		})
	}
}

func TestLoadRefusals(t *testing.T) {
	dir := t.TempDir()
	a := tlscerttest.Write(t, dir, "a", "a")
	b := tlscerttest.Write(t, dir, "b", "b")
	for name, tc := range map[string]struct{ cert, key, want string }{
		"key of another cert": {a.CertFile, b.KeyFile, "private key does not match public key"},
		"key as cert":         {a.KeyFile, a.KeyFile, "certificate"},
		"missing key":         {a.CertFile, filepath.Join(dir, "nope.key"), "no such file"},
	} {
		if _, err := Load(tc.cert, tc.key); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Load = %v, want %q", name, err, tc.want)
		}
		if _, err := New(tc.cert, tc.key, Options{}); err == nil {
			t.Errorf("%s: New accepted a pair that does not load", name)
		}
	}
}

// rewrite replaces a file's content and moves its modification time on,
// as a renewal does; the explicit time keeps a coarse file-system clock
// from hiding the change.
func rewrite(t *testing.T, path string, data []byte, mod time.Time) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mod, mod); err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a log destination that the test reads while handshakes
// may write to it.
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

// subject returns the common name of the certificate a handshake with
// srv presents, trusting roots.
func subject(t *testing.T, addr string, roots *x509.CertPool) string {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, ServerName: "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
}

// serveTLS accepts connections on a loopback listener and completes their
// handshakes with cfg until the test ends.
func serveTLS(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// A renewal is served once the check is due, without a restart; a pair
// caught half-written is logged and the last good certificate stays until
// the other file follows.
func TestReloaderRotation(t *testing.T) {
	dir := t.TempDir()
	a := tlscerttest.Write(t, dir, "gw", "first")
	b, c := tlscerttest.New(t, "second"), tlscerttest.New(t, "third")
	roots := a.Pool()
	roots.AddCert(b.Cert)
	roots.AddCert(c.Cert)

	clk := clocktest.New(time.Now())
	var logs syncBuffer
	r, err := New(a.CertFile, a.KeyFile, Options{Clock: clk, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	addr := serveTLS(t, &tls.Config{GetCertificate: r.GetCertificate})
	if got := subject(t, addr, roots); got != "first" {
		t.Fatalf("serving %q, want first", got)
	}

	mod := time.Now().Add(time.Hour)
	rewrite(t, a.CertFile, b.CertPEM, mod)
	rewrite(t, a.KeyFile, b.KeyPEM, mod)
	clk.Advance(DefaultCheckEvery - time.Millisecond)
	if got := subject(t, addr, roots); got != "first" {
		t.Errorf("before the check is due: serving %q, want first still", got)
	}
	clk.Advance(time.Millisecond)
	if got := subject(t, addr, roots); got != "second" {
		t.Errorf("after a renewal: serving %q, want second", got)
	}

	// Half a renewal: the new certificate with the old key.
	mod = mod.Add(time.Hour)
	rewrite(t, a.CertFile, c.CertPEM, mod)
	clk.Advance(DefaultCheckEvery)
	if got := subject(t, addr, roots); got != "second" {
		t.Errorf("with a mismatched pair: serving %q, want second (the last good)", got)
	}
	if l := logs.String(); !strings.Contains(l, "tls certificate reload failed; keeping the last good certificate") ||
		!strings.Contains(l, "private key does not match public key") {
		t.Errorf("the failed reload was not logged with its reason:\n%s", l)
	}
	clk.Advance(DefaultCheckEvery)
	subject(t, addr, roots)
	if n := strings.Count(logs.String(), "reload failed"); n != 1 {
		t.Errorf("the same failure was logged %d times, want once", n)
	}

	rewrite(t, a.KeyFile, c.KeyPEM, mod)
	clk.Advance(DefaultCheckEvery)
	if got := subject(t, addr, roots); got != "third" {
		t.Errorf("after the key followed: serving %q, want third", got)
	}
	if got := r.Current().Leaf.Subject.CommonName; got != "third" {
		t.Errorf("Current = %q", got)
	}
}

// Files that have not changed are not read again, however many handshakes.
func TestReloaderUnchanged(t *testing.T) {
	dir := t.TempDir()
	a := tlscerttest.Write(t, dir, "gw", "first")
	clk := clocktest.New(time.Now())
	r, err := New(a.CertFile, a.KeyFile, Options{Clock: clk, CheckEvery: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	first := r.Current()
	for range 3 {
		clk.Advance(time.Second)
		if c, _ := r.GetCertificate(nil); c != first {
			t.Fatal("an unchanged pair was loaded again")
		}
	}
	// A pair that vanished keeps the last good certificate.
	os.Remove(a.CertFile)
	clk.Advance(time.Second)
	if c, _ := r.GetCertificate(nil); c != first {
		t.Fatal("a vanished certificate replaced the last good one")
	}
}
