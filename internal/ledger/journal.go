package ledger

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ErrJournalLocked is returned by OpenJournal when another process holds
// the journal: two gateways must not share one ledger's journal.
var ErrJournalLocked = errors.New("ledger: journal in use by another process")

// segMagic opens every segment file: the format's name and version.
const segMagic = "spwjrnl1"

// Journal is the Writer's append-only, crash-safe record of what it has
// acknowledged but not yet ingested into the Store: a series of segment
// files named path.0000000001, path.0000000002, ... next to the ledger,
// plus path.lock, held while a process owns the journal.
//
// Each group commit appends its records to the current segment with one
// write(2), and Settle returns once that write has returned: from then on a
// process kill (kill -9, a panic, the OOM killer) cannot lose the
// settlement, since the kernel holds the bytes. That is the same contract
// as SQLite's WAL with synchronous=NORMAL; only a power loss or kernel
// crash can lose the last writes, unless WriterOptions.Fsync is set.
//
// The Writer ingests the records into the Store in large batches in the
// background, then deletes the segments they came from. At start-up,
// Recover replays whatever an earlier process left (idempotently: the store
// never settles a request twice) and releases the reservations it left
// open.
type Journal struct {
	path string
	lock *os.File
	// id names this journal (and so its replica) in the reservations it
	// writes: see ID.
	id string

	// Owned by the Writer (under its journal mutex) once it runs.
	f    *os.File // the segment being appended to; nil until the next append
	seq  uint64   // the newest segment number in use or used
	size int64    // bytes of f known good

	leftovers []uint64 // segments found at open, not yet replayed
	closed    bool
}

// OpenJournal opens the journal at path (its segment files are path.N),
// taking its lock (ErrJournalLocked if another process holds it). Segments
// an earlier process left are replayed by Recover, or, if the Writer is
// started without it, ingested by the Writer first.
func OpenJournal(path string) (*Journal, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("ledger: journal: %w", err)
	}
	lf, err := os.OpenFile(abs+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("ledger: journal: %w", err)
	}
	if err := lockFile(lf); err != nil {
		lf.Close()
		return nil, fmt.Errorf("ledger: journal %s: %w", abs, err)
	}
	j := &Journal{path: abs, lock: lf}
	if j.id, err = journalID(lf); err != nil {
		lf.Close()
		return nil, fmt.Errorf("ledger: journal %s: identity: %w", abs, err)
	}
	if j.leftovers, err = j.segments(); err != nil {
		lf.Close()
		return nil, err
	}
	if n := len(j.leftovers); n > 0 {
		j.seq = j.leftovers[n-1]
	}
	return j, nil
}

// ID is the journal's identity: 32 hex digits made at its first open and
// kept in its lock file, so the same across the restarts of the replica
// that owns it and different for every other journal. The reservations
// its Writer and Recover write carry it (Batch.Owner), and Recover
// releases only those.
func (j *Journal) ID() string { return j.id }

// journalID reads the identity kept in the (locked) lock file, or makes
// one and keeps it there when it holds none.
func journalID(lf *os.File) (string, error) {
	var b [64]byte
	n, err := lf.ReadAt(b[:], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	if id := strings.TrimSpace(string(b[:n])); len(id) == 32 && strings.Trim(id, "0123456789abcdef") == "" {
		return id, nil
	}
	var r [16]byte
	_, _ = rand.Read(r[:])
	id := hex.EncodeToString(r[:])
	if err := lf.Truncate(0); err != nil {
		return "", err
	}
	if _, err := lf.WriteAt([]byte(id+"\n"), 0); err != nil {
		return "", err
	}
	return id, lf.Sync()
}

// segments lists the segment numbers on disk, ascending.
func (j *Journal) segments() ([]uint64, error) {
	entries, err := os.ReadDir(filepath.Dir(j.path))
	if err != nil {
		return nil, fmt.Errorf("ledger: journal: %w", err)
	}
	prefix := filepath.Base(j.path) + "."
	var out []uint64
	for _, e := range entries {
		suffix, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || suffix == "" || strings.Trim(suffix, "0123456789") != "" {
			continue // the lock file, or not ours
		}
		if seq, err := strconv.ParseUint(suffix, 10, 64); err == nil && seq > 0 && e.Type().IsRegular() {
			out = append(out, seq)
		}
	}
	slices.Sort(out)
	return out, nil
}

func (j *Journal) segment(seq uint64) string { return fmt.Sprintf("%s.%010d", j.path, seq) }

// append writes b to the current segment, starting a new one if there is
// none. It returns the number of a segment it created (0 if none), even
// when the write then failed, so that the caller accounts for the file.
// After a failure the segment is cut back to its last whole batch (best
// effort) and closed: the next append starts a new one, so no record ever
// follows a torn one.
func (j *Journal) append(b []byte, fsync bool) (created uint64, err error) {
	if j.closed {
		return 0, ErrClosed
	}
	if j.f == nil {
		if created, err = j.create(fsync); err != nil {
			return created, err
		}
	}
	_, err = j.f.Write(b)
	if err == nil && fsync {
		err = j.f.Sync()
	}
	if err != nil {
		_ = j.f.Truncate(j.size)
		_ = j.f.Close()
		j.f = nil
		return created, fmt.Errorf("ledger: journal append: %w", err)
	}
	j.size += int64(len(b))
	return created, nil
}

// create starts segment seq+1 with its header.
func (j *Journal) create(fsync bool) (uint64, error) {
	j.seq++
	seq := j.seq
	f, err := os.OpenFile(j.segment(seq), os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return 0, fmt.Errorf("ledger: journal: new segment: %w", err)
	}
	if _, err := f.Write([]byte(segMagic)); err != nil {
		f.Close()
		return seq, fmt.Errorf("ledger: journal: new segment: %w", err)
	}
	if fsync {
		if err := syncDir(filepath.Dir(j.path)); err != nil {
			f.Close()
			return seq, fmt.Errorf("ledger: journal: new segment: %w", err)
		}
	}
	j.f, j.size = f, int64(len(segMagic))
	return seq, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// cut closes the current segment: the next append starts a new one, so the
// records appended so far and those appended from now on never share a
// segment.
func (j *Journal) cut() {
	if j.f != nil {
		_ = j.f.Close() // written with write(2): nothing is buffered here
		j.f = nil
	}
}

// remove deletes segments whose every record is in the store.
func (j *Journal) remove(segs []uint64, log *slog.Logger) {
	for _, seq := range segs {
		if err := os.Remove(j.segment(seq)); err != nil && !errors.Is(err, os.ErrNotExist) {
			// Harmless: replaying an ingested segment writes nothing twice.
			log.Warn("ledger: removing an ingested journal segment", "err", err)
		}
	}
}

// Close closes the current segment and releases the journal's lock. The
// Writer that owns the journal closes it; close it yourself only if no
// Writer ever took it.
func (j *Journal) Close() error {
	if j.closed {
		return nil
	}
	j.closed = true
	j.cut()
	return j.lock.Close()
}

// Recovery is what Recover found and did.
type Recovery struct {
	// Segments is how many journal segments an earlier process left.
	Segments int
	// Reservations and Settlements count the records replayed into the
	// store (those it already held included: replaying is idempotent).
	Reservations, Settlements int
	// TornBytes is what ended a segment without being a whole, valid
	// record: a write a crash cut short, whose Settle had not returned.
	TornBytes int64
	// Rejected counts records the store refused for their content.
	Rejected int
	// Released are the reservations found open, now released (see
	// Store.RecoverOpen).
	Released []Released
}

// Recover is the gateway's start-up recovery; call it before the Writer
// starts. It replays every segment an earlier process left into s, in one
// pass and in order (a reservation settled within the journal is not
// written at all), deletes them, and then releases every reservation this
// journal's replica left open (s.RecoverOpen with ID), those the journal
// held and those already in the store alike; other replicas' reservations
// in flight are left alone. A store error stops it with the segments kept, so a later attempt replays
// them again.
func (j *Journal) Recover(ctx context.Context, s Store) (*Recovery, error) {
	rec := &Recovery{Segments: len(j.leftovers)}
	set := newPendingSet()
	read, err := j.load(set, rec)
	if err != nil {
		return nil, err
	}
	b := Batch{Owner: j.id}
	err = commitSet(ctx, s, set, &b, defaultIngestBatch, func(*WriteError) { rec.Rejected++ })
	if err != nil {
		return nil, fmt.Errorf("ledger: journal replay: %w", err)
	}
	j.remove(read, slog.New(slog.DiscardHandler))
	j.leftovers = nil
	if rec.Released, err = s.RecoverOpen(ctx, j.id); err != nil {
		return nil, err
	}
	return rec, nil
}

// load decodes every leftover segment into set, in order, and returns the
// segments read. A segment that cannot be read fails the whole load.
func (j *Journal) load(set *pendingSet, rec *Recovery) ([]uint64, error) {
	for _, seq := range j.leftovers {
		data, err := os.ReadFile(j.segment(seq))
		if err != nil {
			return nil, fmt.Errorf("ledger: journal: %w", err)
		}
		body, ok := bytes.CutPrefix(data, []byte(segMagic))
		if !ok {
			if !strings.HasPrefix(segMagic, string(data)) {
				return nil, fmt.Errorf("ledger: journal: %s is not a journal segment", j.segment(seq))
			}
			body = nil // created, header cut short: empty
		}
		n := decodeRecords(body, func(r *record) {
			if r.set != nil {
				set.addSettlement(r.set)
				rec.Settlements++
			} else {
				set.addReservation(&r.res)
				rec.Reservations++
			}
		})
		rec.TornBytes += int64(len(body) - n)
	}
	set.segs = append(set.segs, j.leftovers...)
	return slices.Clone(j.leftovers), nil
}

// CatchUp writes into s the settlements that the journal at path holds and
// its owner (a running gateway) has not ingested yet, so that a reader of
// s, such as `spillway usage`, sees every request the gateway has
// acknowledged. It takes no lock and deletes nothing: the owner ingests the
// same records later, and the store never settles a request twice. A
// segment the owner deletes meanwhile was ingested, and is skipped; a
// record being appended is torn, and left for the owner. Reservations are
// left to the owner too. It returns the settlements read.
func CatchUp(ctx context.Context, path string, s Store) (int, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return 0, fmt.Errorf("ledger: journal: %w", err)
	}
	j := &Journal{path: abs}
	segs, err := j.segments()
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	set := newPendingSet()
	n := 0
	for _, seq := range segs {
		data, err := os.ReadFile(j.segment(seq))
		if errors.Is(err, os.ErrNotExist) {
			continue // ingested and deleted since the listing
		}
		if err != nil {
			return 0, fmt.Errorf("ledger: journal: %w", err)
		}
		body, _ := bytes.CutPrefix(data, []byte(segMagic))
		decodeRecords(body, func(r *record) {
			if r.set != nil {
				set.addSettlement(r.set)
				n++
			}
		})
	}
	b := Batch{Owner: j.id}
	if err := commitSet(ctx, s, set, &b, defaultIngestBatch, func(*WriteError) {}); err != nil {
		return 0, fmt.Errorf("ledger: journal catch-up: %w", err)
	}
	return n, nil
}
