// Package tlscert serves a TLS certificate from a pair of PEM files and
// reloads it when either file changes, keeping the last good pair.
package tlscert

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spillway-gw/spillway/internal/clock"
)

// MaxFileBytes bounds what ReadFile reads: a certificate chain or a key is
// a few kilobytes, and a path to something else must not be read whole.
const MaxFileBytes = 1 << 20

// DefaultCheckEvery is how often a Reloader looks at the files when its
// Options give no interval.
const DefaultCheckEvery = 5 * time.Second

// ReadFile reads a PEM file of at most MaxFileBytes. Anything but a
// regular file (a FIFO, a device, a directory) is refused before it is
// opened, so that a wrong path cannot block or read forever.
func ReadFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &os.PathError{Op: "read", Path: path, Err: errors.New("not a regular file")}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, &os.PathError{Op: "read", Path: path, Err: fmt.Errorf("larger than %d bytes: not a certificate or key", MaxFileBytes)}
	}
	return data, nil
}

// Load reads and parses a certificate and its key.
func Load(certFile, keyFile string) (*tls.Certificate, error) {
	cert, err := ReadFile(certFile)
	if err != nil {
		return nil, err
	}
	key, err := ReadFile(keyFile)
	if err != nil {
		return nil, err
	}
	c, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("%s and %s: %w", certFile, keyFile, err)
	}
	return &c, nil
}

// Options tune a Reloader. Zero fields take the defaults given.
type Options struct {
	// CheckEvery is the least time between two looks at the files (a
	// stat of each, done by the handshake that finds it due). Default
	// DefaultCheckEvery.
	CheckEvery time.Duration
	// Clock tells the time. Default clock.Real.
	Clock clock.Passive
	// Log receives a line for each reload and each failed one. Default:
	// discarded.
	Log *slog.Logger
}

// Reloader serves the certificate of a pair of files through
// GetCertificate. When either file's modification time or size has
// changed, the next handshake after the check interval loads the pair
// again; a pair that fails to load (half-written, or a key that does not
// match yet) is logged and the last good certificate stays.
type Reloader struct {
	certFile, keyFile string
	opts              Options
	cur               atomic.Pointer[tls.Certificate]

	mu      sync.Mutex // guards the rest: one handshake checks at a time
	checked time.Time  // when the files were last looked at
	seen    [2]stamp   // the files as last loaded or tried
	lastErr string     // the last failure logged, logged once
}

// stamp tells two versions of a file apart without reading it.
type stamp struct {
	mod  time.Time
	size int64
}

// New loads the pair once and returns a Reloader serving it; an error
// means the pair does not load now.
func New(certFile, keyFile string, opts Options) (*Reloader, error) {
	if opts.CheckEvery <= 0 {
		opts.CheckEvery = DefaultCheckEvery
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	r := &Reloader{certFile: certFile, keyFile: keyFile, opts: opts}
	r.seen = r.stamps()
	c, err := Load(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	r.cur.Store(c)
	r.checked = opts.Clock.Now()
	r.logLoaded("tls certificate loaded", c)
	return r, nil
}

// GetCertificate returns the current certificate, first reloading it if
// the files changed and the check is due. It fits
// tls.Config.GetCertificate and never fails once New succeeded.
func (r *Reloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.maybeReload()
	return r.cur.Load(), nil
}

// Current returns the certificate being served.
func (r *Reloader) Current() *tls.Certificate { return r.cur.Load() }

func (r *Reloader) maybeReload() {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.opts.Clock.Now()
	if now.Sub(r.checked) < r.opts.CheckEvery {
		return
	}
	r.checked = now
	st := r.stamps()
	if st == r.seen {
		return
	}
	r.seen = st
	c, err := Load(r.certFile, r.keyFile)
	if err != nil {
		if msg := err.Error(); msg != r.lastErr {
			r.lastErr = msg
			r.opts.Log.Error("tls certificate reload failed; keeping the last good certificate",
				"cert_file", r.certFile, "key_file", r.keyFile, "error", msg)
		}
		return
	}
	r.lastErr = ""
	r.cur.Store(c)
	r.logLoaded("tls certificate reloaded", c)
}

func (r *Reloader) stamps() [2]stamp {
	var st [2]stamp
	for i, p := range []string{r.certFile, r.keyFile} {
		if fi, err := os.Stat(p); err == nil {
			st[i] = stamp{fi.ModTime(), fi.Size()}
		}
	}
	return st
}

func (r *Reloader) logLoaded(msg string, c *tls.Certificate) {
	attrs := []any{"cert_file", r.certFile}
	if leaf := c.Leaf; leaf != nil {
		attrs = append(attrs, "subject", leaf.Subject.String(), "not_after", leaf.NotAfter.UTC().Format(time.RFC3339))
		if now := r.opts.Clock.Now(); now.After(leaf.NotAfter) {
			r.opts.Log.Warn("the tls certificate has expired; clients will refuse it", attrs...)
			return
		}
	}
	r.opts.Log.Info(msg, attrs...)
}
