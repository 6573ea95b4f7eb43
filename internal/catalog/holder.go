package catalog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultWatchInterval is how often Watch polls when given no interval.
const DefaultWatchInterval = 2 * time.Second

// Holder holds the current Snapshot. Readers call Load on every request;
// a reload builds the whole new snapshot first and swaps it in atomically,
// so a reader sees either the old config or the new one, never a mix, and
// a bad file never replaces a good snapshot.
type Holder struct {
	cur atomic.Pointer[Snapshot]
	// mu serializes reloads, so that two racing reloads cannot swap in
	// an older file after a newer one.
	mu sync.Mutex

	// statusMu guards status, which scrapes and the admin API read while
	// a reload may be writing it.
	statusMu sync.Mutex
	status   Status
	// now stamps the status; nil means time.Now.
	now func() time.Time
}

// Status says which config a Holder serves and what became of the reloads
// since, for operators: a file that is being refused is otherwise only a
// log line.
type Status struct {
	// Version is the served file's SHA-256, its first 12 hex digits;
	// empty for a config built in code.
	Version string
	// Path is the file the config was loaded from; empty until a reload
	// or Watch names it.
	Path string
	// LoadedAt is when the served config was swapped in (for the first,
	// when the Holder was made).
	LoadedAt time.Time
	// Applied and Refused count the reloads since start that swapped a
	// file in and that refused one. Watch tries each content once, so a
	// bad file is counted once however long it stays.
	Applied, Refused int64
	// LastRefused is the last file refused since the served one was
	// loaded; nil when none was.
	LastRefused *Refusal
}

// Refusal is a file a reload refused. It is never modified once recorded.
type Refusal struct {
	// At is when it was refused.
	At time.Time
	// Version is the refused file's short SHA-256, as Status.Version.
	Version string
	// Problems are why, one "file:line: field: message" each.
	Problems []string
}

// Version shortens a file's SHA-256 to the 12 hex digits operators compare
// (sha256sum's first 12); the zero sum, a config built in code, is "".
func Version(sum [32]byte) string {
	if sum == ([32]byte{}) {
		return ""
	}
	return hex.EncodeToString(sum[:6])
}

// Status returns which config is served and what the reloads did.
func (h *Holder) Status() Status {
	h.statusMu.Lock()
	defer h.statusMu.Unlock()
	return h.status
}

func (h *Holder) stamp() time.Time {
	if h.now != nil {
		return h.now()
	}
	return time.Now()
}

// applied records that s, read from path, is now served.
func (h *Holder) applied(s *Snapshot, path string) {
	h.statusMu.Lock()
	defer h.statusMu.Unlock()
	h.status.Applied++
	h.status.Version, h.status.Path, h.status.LoadedAt = Version(s.sum), path, h.stamp()
	h.status.LastRefused = nil
}

// refused records that data, read from path, was refused with err.
func (h *Holder) refused(data []byte, err error) {
	var ps Problems
	var why []string
	if errors.As(err, &ps) {
		for _, p := range ps {
			why = append(why, p.String())
		}
	} else {
		why = []string{err.Error()}
	}
	h.statusMu.Lock()
	defer h.statusMu.Unlock()
	h.status.Refused++
	h.status.LastRefused = &Refusal{At: h.stamp(), Version: Version(hash(data)), Problems: why}
}

// notePath records the file a config built before Watch came from.
func (h *Holder) notePath(path string) {
	h.statusMu.Lock()
	defer h.statusMu.Unlock()
	if h.status.Path == "" {
		h.status.Path = path
	}
}

// NewHolder returns a Holder serving s, which must not be nil.
func NewHolder(s *Snapshot) *Holder {
	if s == nil {
		panic("catalog: NewHolder with a nil snapshot")
	}
	h := &Holder{}
	h.cur.Store(s)
	h.status = Status{Version: Version(s.sum), LoadedAt: h.stamp()}
	return h
}

// Load returns the current snapshot. It never blocks.
func (h *Holder) Load() *Snapshot { return h.cur.Load() }

// Reload loads, validates and builds the file at path and swaps it in. On
// any error the current snapshot stays and the error (a Problems) says why.
func (h *Holder) Reload(path string) error {
	data, err := readFile(path)
	if err != nil {
		return err
	}
	return h.reloadData(data, path)
}

func (h *Holder) reloadData(data []byte, path string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, err := buildFromData(data, path)
	if err != nil {
		h.refused(data, err)
		return err
	}
	h.cur.Store(s)
	h.applied(s, path)
	return nil
}

// Watch polls the file at path every interval (≤ 0 means
// DefaultWatchInterval) and reloads it when its content changes. A bad
// file is logged with every problem and the last good snapshot stays; the
// same bad content is not reported again. A poll reads the file only
// when its size or modification time changed, and reloads only when its
// SHA-256 did. Watch returns when ctx is done; run it in a goroutine the
// caller owns. logger may be nil.
func (h *Holder) Watch(ctx context.Context, path string, every time.Duration, logger *slog.Logger) {
	if every <= 0 {
		every = DefaultWatchInterval
	}
	t := time.NewTicker(every)
	defer t.Stop()
	h.newWatcher(path, logger).run(ctx, t.C)
}

// watcher is Watch's state, apart from the clock so that tests can drive
// polls one at a time.
type watcher struct {
	h       *Holder
	path    string
	log     *slog.Logger
	stat    fileStat // last stat seen; unchanged means the content is not read
	sum     [32]byte // hash of the last content acted on (loaded or refused)
	hasSum  bool
	lastErr string // last stat/read error logged, so it is logged once
	// boot is the config the process started with: the settings read once
	// at start-up keep its values until a restart.
	boot *Config
}

type fileStat struct {
	mod  time.Time
	size int64
}

func (h *Holder) newWatcher(path string, logger *slog.Logger) *watcher {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	w := &watcher{h: h, path: path, log: logger, boot: h.Load().Config()}
	h.notePath(path)
	if s := h.Load(); s.sum != ([32]byte{}) {
		// The snapshot came from a file: a change since is a change.
		w.sum, w.hasSum = s.sum, true
	} else if data, st, err := readStat(path); err == nil {
		// Built in code: take the file as it is now as the baseline.
		w.sum, w.hasSum, w.stat = hash(data), true, st
	}
	return w
}

func (w *watcher) run(ctx context.Context, ticks <-chan time.Time) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
			w.poll()
		}
	}
}

// poll checks the file once and reloads it if its content changed. It
// reports whether a new snapshot was swapped in.
func (w *watcher) poll() bool {
	fi, err := os.Stat(w.path)
	if err != nil {
		w.fail(err)
		return false
	}
	st := fileStat{fi.ModTime(), fi.Size()}
	if st == w.stat {
		return false
	}
	data, st, err := readStat(w.path)
	if err != nil {
		w.fail(err)
		return false
	}
	w.stat, w.lastErr = st, ""
	sum := hash(data)
	if w.hasSum && sum == w.sum {
		return false // touched, or rewritten with the same content
	}
	w.sum, w.hasSum = sum, true
	if err := w.h.reloadData(data, w.path); err != nil {
		var ps Problems
		if errors.As(err, &ps) {
			for _, p := range ps {
				w.log.Error("config problem", "problem", p.String())
			}
		}
		w.log.Error("config reload refused; keeping the last good config", "path", w.path, "problems", len(ps))
		return false
	}
	s := w.h.Load()
	w.log.Info("config reloaded", "path", w.path, "deployments", len(s.order), "routes", len(s.models))
	if changed := RestartOnly(w.boot, s.Config()); len(changed) > 0 {
		w.log.Warn("config reloaded, but these settings take effect only on a restart; the running values stay",
			"path", w.path, "settings", strings.Join(changed, ", "))
	}
	return true
}

// RestartOnly names the settings read once at start-up (the listener, the
// ledger, the idempotency store, shared_state, retention, access-log
// sampling, the pin store's capacity, tracing) whose value in c differs
// from boot's, as "name (running → configured)".
func RestartOnly(boot, c *Config) []string {
	var out []string
	diff := func(name string, a, b any) {
		if a != b {
			out = append(out, fmt.Sprintf("%s (%v → %v)", name, a, b))
		}
	}
	bs, cs := &boot.Server, &c.Server
	diff("server.listen", bs.Listen, cs.Listen)
	diff("server.read_header_timeout", bs.ReadHeaderTimeout.D(), cs.ReadHeaderTimeout.D())
	diff("server.idle_timeout", bs.IdleTimeout.D(), cs.IdleTimeout.D())
	diff("server.shutdown_grace", bs.ShutdownGrace.D(), cs.ShutdownGrace.D())
	diff("server.max_answer_memory", bs.MaxAnswerMemory, cs.MaxAnswerMemory)
	diff("server.tls.cert_file", bs.TLS.CertFile, cs.TLS.CertFile)
	diff("server.tls.key_file", bs.TLS.KeyFile, cs.TLS.KeyFile)
	diff("ledger.driver", boot.Ledger.Driver, c.Ledger.Driver)
	diff("ledger.path", boot.Ledger.Path, c.Ledger.Path)
	diff("ledger.dsn_env", boot.Ledger.DSNEnv, c.Ledger.DSNEnv)
	diff("ledger.min_free_bytes", boot.Ledger.MinFreeBytes, c.Ledger.MinFreeBytes)
	diff("idempotency.max_entries", boot.Idempotency.MaxEntries, c.Idempotency.MaxEntries)
	diff("idempotency.max_bytes", boot.Idempotency.MaxBytes, c.Idempotency.MaxBytes)
	diff("idempotency.ttl", boot.Idempotency.TTL.D(), c.Idempotency.TTL.D())
	// serve connects to Redis and applies its policies once.
	bss, css := &boot.SharedState, &c.SharedState
	diff("shared_state.driver", bss.Driver, css.Driver)
	diff("shared_state.url_env", bss.URLEnv, css.URLEnv)
	diff("shared_state.key_prefix", bss.KeyPrefix, css.KeyPrefix)
	diff("shared_state.timeout", bss.Timeout.D(), css.Timeout.D())
	diff("shared_state.retry_every", bss.RetryEvery.D(), css.RetryEvery.D())
	diff("shared_state.probe_lease", bss.ProbeLease.D(), css.ProbeLease.D())
	diff("shared_state.budgets_when_down", bss.BudgetsWhenDown, css.BudgetsWhenDown)
	diff("shared_state.down_allowance", bss.DownAllowance, css.DownAllowance)
	diff("shared_state.idempotency_when_down", bss.IdempotencyWhenDown, css.IdempotencyWhenDown)
	// serve builds these once: the pruner, the access log's sampler, the
	// pin store and the trace exporter.
	diff("ledger.retention", boot.Ledger.Retention.D(), c.Ledger.Retention.D())
	ba, ca := &boot.Log.Access, &c.Log.Access
	diff("log.access.ok", rate(ba.OK), rate(ca.OK))
	diff("log.access.client_error", rate(ba.ClientError), rate(ca.ClientError))
	diff("log.access.error", rate(ba.Error), rate(ca.Error))
	diff("routing.sticky_capacity", boot.Routing.StickyCapacity, c.Routing.StickyCapacity)
	bt, ct := &boot.Telemetry.Traces, &c.Telemetry.Traces
	diff("telemetry.traces.exporter", bt.Exporter, ct.Exporter)
	diff("telemetry.traces.endpoint", bt.Endpoint, ct.Endpoint)
	diff("telemetry.traces.sample", rate(bt.Sample), rate(ct.Sample))
	diff("telemetry.traces.headers_env", bt.HeadersEnv, ct.HeadersEnv)
	diff("telemetry.traces.service_name", bt.ServiceName, ct.ServiceName)
	diff("telemetry.traces.timeout", bt.Timeout.D(), ct.Timeout.D())
	diff("telemetry.traces.queue_size", bt.QueueSize, ct.QueueSize)
	return out
}

// rate is an optional share as it reads in a message: "unset" or its value.
func rate(v *float64) string {
	if v == nil {
		return "unset"
	}
	return strconv.FormatFloat(*v, 'g', -1, 64)
}

func (w *watcher) fail(err error) {
	// An editor's atomic rename can make the file vanish for a moment:
	// log it once, and try again on the next tick.
	if msg := err.Error(); msg != w.lastErr {
		w.lastErr = msg
		w.log.Warn("cannot read config; keeping the last good config", "path", w.path, "error", msg)
	}
	w.stat = fileStat{}
}

func readFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, Problems{{File: path, Msg: readError(err)}}
	}
	return data, nil
}

// readStat reads the file and its stat from one open file, so that the
// two describe the same version.
func readStat(path string) ([]byte, fileStat, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fileStat{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fileStat{}, err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fileStat{}, err
	}
	return data, fileStat{fi.ModTime(), fi.Size()}, nil
}

func hash(data []byte) [32]byte { return sha256.Sum256(data) }
