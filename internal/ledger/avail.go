package ledger

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrUnavailable is the Writer's answer while the ledger cannot make rows
// durable: its files were deleted or replaced, its disk is full or nearly
// so, or its journal cannot be written. The gateway then admits no
// billable request, and a Settle it is waiting on fails at once instead of
// hanging, its settlement kept uncharged (see Writer.Settle).
var ErrUnavailable = errors.New("ledger unavailable")

// Why the ledger is unavailable, in the order they are reported.
const (
	downGone    = iota // a watched file was deleted or replaced: until a restart
	downDisk           // free space below MinFreeBytes
	downJournal        // the last journal append failed
	downStore          // the store keeps failing and the pending set is full
	downReasons
)

// Availability defaults (WriterOptions).
const (
	defaultCheckEvery   = time.Second
	defaultMinFreeBytes = 32 << 20
	probeBytes          = 64 << 10
)

// reasonNames are the kinds of trouble as readiness and metrics name them.
var reasonNames = [downReasons]string{"ledger_files_gone", "disk_low", "journal_unwritable", "store_failing"}

// UnavailableError says why the ledger is unavailable: Reason is a short
// name for readiness and metrics (ledger_files_gone, disk_low,
// journal_unwritable, store_failing), Detail the operator's explanation
// (paths included: never shown to callers).
type UnavailableError struct {
	Reason, Detail string
}

func (e *UnavailableError) Error() string {
	return "ledger unavailable (" + e.Reason + "): " + e.Detail
}

// Is makes errors.Is(err, ErrUnavailable) hold.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// availability is the Writer's view of its storage: a reason per kind of
// trouble, and the first one set published for lock-free reads (the
// admission check runs on every request).
type availability struct {
	mu      sync.Mutex
	reasons [downReasons]string
	cur     atomic.Pointer[UnavailableError]
}

func (a *availability) set(kind int, why string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reasons[kind] = why
	a.publish()
}

func (a *availability) clear(kind int) {
	if a.cur.Load() == nil {
		return // nothing set: the hot path takes no lock
	}
	a.set(kind, "")
}

func (a *availability) has(kind int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.reasons[kind] != ""
}

func (a *availability) publish() {
	for kind, r := range a.reasons {
		if r != "" {
			a.cur.Store(&UnavailableError{Reason: reasonNames[kind], Detail: r})
			return
		}
	}
	a.cur.Store(nil)
}

func (a *availability) err() error {
	if p := a.cur.Load(); p != nil {
		return p
	}
	return nil
}

// Unavailable returns nil while the ledger can make rows durable, else an
// *UnavailableError (errors.Is ErrUnavailable) saying why. It is cheap
// enough to call on every request.
func (w *Writer) Unavailable() error { return w.avail.err() }

// watched is a file whose identity is checked: deleting or replacing it
// (a new file at the path) leaves the process writing where no restart
// will read.
type watched struct {
	path string
	fi   os.FileInfo
}

func watchFiles(paths []string) ([]watched, error) {
	var out []watched
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("ledger: watching %s: %w", p, err)
		}
		out = append(out, watched{path: p, fi: fi})
	}
	return out, nil
}

// monitor checks the storage every CheckEvery until Close: the watched
// files' identity, the free space of their file system, and, after a
// journal append failed, whether a probe write succeeds now.
func (w *Writer) monitor(files []watched) {
	t := time.NewTicker(w.opts.CheckEvery)
	defer t.Stop()
	for {
		select {
		case <-w.quit:
			return
		case <-t.C:
			w.check(files)
		}
	}
}

func (w *Writer) check(files []watched) {
	for _, f := range files {
		fi, err := os.Stat(f.path)
		if err == nil && os.SameFile(fi, f.fi) {
			continue
		}
		if !w.avail.has(downGone) {
			why := f.path + " was deleted or replaced while the gateway ran; restart it to reopen the ledger"
			w.log.Error("ledger: "+why, "err", err)
			w.avail.set(downGone, why)
		}
		return
	}
	if len(files) > 0 && w.opts.MinFreeBytes > 0 {
		dir := filepath.Dir(files[0].path)
		if free, ok := w.opts.free(dir); ok && free < uint64(w.opts.MinFreeBytes) {
			if !w.avail.has(downDisk) {
				w.log.Error("ledger: disk nearly full", "dir", dir, "free_bytes", free, "min_free_bytes", w.opts.MinFreeBytes)
			}
			w.avail.set(downDisk, fmt.Sprintf("only %d KiB free under %s (min_free_bytes %d KiB)", free>>10, dir, w.opts.MinFreeBytes>>10))
		} else if ok {
			w.avail.clear(downDisk)
		}
	}
	if w.j != nil && w.avail.has(downJournal) {
		if err := probe(w.j.path + ".probe"); err == nil {
			w.log.Info("ledger: the journal's directory is writable again")
			w.avail.clear(downJournal)
		}
	}
}

// probe writes and removes a small file, as a journal segment would be
// written: it fails on a full disk or a directory that is gone.
func probe(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(make([]byte, probeBytes))
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if rerr := os.Remove(path); err == nil {
		err = rerr
	}
	return err
}

// undelivered rewrites a settlement whose answer will not reach its caller
// because the ledger could not make it durable: nothing is charged. The
// counts stay, for the operator.
func undelivered(s *Settlement) {
	r := &s.Request
	if r.Streamed && r.Status == StatusOK {
		r.Status = StatusInterrupted
	} else if r.Status == StatusOK {
		r.Status = StatusFailed
	}
	r.FailureClass = ClassLedgerUnavailable
	r.CostMicroUSD = 0
	if r.CostStatus == CostPriced {
		r.CostStatus = CostNone
	}
	for i := range s.Attempts {
		s.Attempts[i].CostMicroUSD = 0
	}
}

// ClassLedgerUnavailable is the failure class of a request whose answer
// was withheld because the ledger could not record it.
const ClassLedgerUnavailable = "ledger_unavailable"

// describe shortens an I/O error for a reason string.
func describe(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 && len(s)-i < 80 {
		return s[i+2:]
	}
	return s
}
