package idempotency

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/clock/clocktest"
)

// frameWriter is a ResponseWriter that keeps the bytes of each flush apart,
// as the chunked frames on the wire would be.
type frameWriter struct {
	h      http.Header
	status int
	cur    []byte
	frames [][]byte
}

func (f *frameWriter) Header() http.Header { return f.h }
func (f *frameWriter) WriteHeader(code int) {
	if f.status == 0 {
		f.status = code
	}
}
func (f *frameWriter) Write(p []byte) (int, error) {
	if f.status == 0 {
		f.status = 200
	}
	f.cur = append(f.cur, p...)
	return len(p), nil
}
func (f *frameWriter) Flush() {
	if len(f.cur) > 0 {
		f.frames = append(f.frames, f.cur)
		f.cur = nil
	}
}
func (f *frameWriter) all() [][]byte {
	f.Flush()
	return f.frames
}

// FuzzRecorder drives a recorder with writes and flushes from ops (low two
// bits: write, flush, header, write-then-flush; the rest: a length) and
// checks that the caller got every byte, that the recording holds the same
// bytes split at the same flushes, and that Replay reproduces the frames.
func FuzzRecorder(f *testing.F) {
	f.Add([]byte{0x20, 0x01, 0x43, 0x01, 0x02, 0x10}, 64)
	f.Add([]byte{0x02, 0x03, 0x03, 0x03}, 1)
	f.Add([]byte{0xfc, 0xfc, 0xfc}, 100)
	f.Add([]byte{}, 0)
	f.Fuzz(func(t *testing.T, ops []byte, limit int) {
		limit = max(0, limit%512)
		under := &frameWriter{h: http.Header{}}
		rw := NewRecorder(under, limit)
		if limit%2 == 1 { // the store's pooled recorder, its buffer dirtied first
			pool := &New(Options{}).bufs
			dirty := pool.Get().(*recBuf)
			dirty.data, dirty.ends = append(dirty.data, "stale"...), append(dirty.ends, 5)
			dirty.data, dirty.ends = dirty.data[:0], dirty.ends[:0]
			pool.Put(dirty)
			rw = newPooledRecorder(under, limit, pool)
		}
		var sent bytes.Buffer
		payload := byte('a')
		for _, op := range ops {
			n := int(op >> 2)
			write := func() {
				p := bytes.Repeat([]byte{payload}, n)
				payload = 'a' + (payload-'a'+1)%26
				if _, err := rw.Write(p); err != nil {
					t.Fatal(err)
				}
				sent.Write(p)
			}
			switch op & 3 {
			case 0:
				write()
			case 1:
				rw.Flush()
			case 2:
				rw.Header().Set("X-Spillway-N", strings.Repeat("n", n))
				rw.WriteHeader(200 + n)
			case 3:
				write()
				rw.Flush()
			}
		}
		r := rw.Recording()
		frames := under.all()
		if !bytes.Equal(bytes.Join(frames, nil), sent.Bytes()) {
			t.Fatal("the caller did not get every byte unchanged")
		}
		if r.OverLimit != (sent.Len() > limit) {
			t.Fatalf("OverLimit %v with %d bytes, limit %d", r.OverLimit, sent.Len(), limit)
		}
		if r.OverLimit {
			return
		}
		if r.Status == 0 && (sent.Len() > 0 || r.Streamed) {
			t.Fatal("an answer was sent but no status recorded")
		}
		if r.Status == 0 {
			return
		}
		got := r.Chunks
		if !r.Streamed {
			got = [][]byte{r.Body}
			if len(r.Body) == 0 {
				got = nil
			}
		}
		if !equalFrames(got, frames) {
			t.Fatalf("recorded %q, sent %q", got, frames)
		}
		again := &frameWriter{h: http.Header{}}
		if err := Replay(again, r); err != nil {
			t.Fatal(err)
		}
		if again.status != r.Status || !equalFrames(again.all(), frames) {
			t.Fatalf("replayed %d %q, want %d %q", again.status, again.frames, r.Status, frames)
		}
	})
}

func equalFrames(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// FuzzStore runs random claims and decisions against a small store on a
// fake clock, checking its invariants after every step and its promises:
// an invalid key is refused, a valid one never, one key has one owner, a
// finished answer replays (or is refused as not kept) and a different body
// conflicts.
func FuzzStore(f *testing.F) {
	f.Add([]byte{0x00, 0x10, 0x04, 0x21, 0x05, 0x00, 0x16, 0x00}, "key")
	f.Add([]byte{0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0xff, 0x80}, "")
	f.Add([]byte{0x08, 0x18, 0x28, 0x38, 0x48, 0x58, 0x68, 0x78}, "k\n")
	f.Add([]byte{0x80, 0x00, 0x83, 0x80, 0x00}, "caf\xc3\xa9")
	f.Fuzz(func(t *testing.T, ops []byte, key string) {
		clk := clocktest.New(time.Unix(1e9, 0))
		s := New(Options{MaxEntries: 4, MaxBytes: 4 * 1024, MaxEntryBytes: 1024, TTL: time.Minute, Clock: clk})
		done, cancel := context.WithCancel(context.Background())
		cancel() // Begin on an in-flight key must not block the fuzzer
		type slot struct{ tenant, key string }
		type owned struct {
			o    *Owner
			body string
		}
		owners := map[slot]owned{}
		for _, op := range ops {
			sl := slot{tenant: string('a' + rune(op>>6&1)), key: key + string('0'+rune(op>>4&3))}
			body := string('x' + rune(op>>7))
			switch op & 7 {
			case 0, 1, 2: // claim
				c, err := s.Begin(done, sl.tenant, sl.key, h(body))
				if err != nil {
					if ow, ok := owners[sl]; !ok || ow.body != body {
						t.Fatal("Begin waited where it should have answered")
					}
					break
				}
				valid := sl.key != "" && len(sl.key) <= MaxKeyLen &&
					strings.IndexFunc(sl.key, func(r rune) bool { return r < ' ' || r > '~' }) < 0
				if (c.Refused == RefusedInvalidKey) != !valid {
					t.Fatalf("key %q (valid %v): %s", sl.key, valid, kind(c))
				}
				if ow, ok := owners[sl]; ok && c.Refused != RefusedConflict {
					t.Fatalf("in-flight key, other body %q vs %q: %s", body, ow.body, kind(c))
				}
				if c.Owner != nil {
					owners[sl] = owned{c.Owner, body}
				}
			case 3, 4: // complete or fail with an answer of op's size
				ow, ok := owners[sl]
				if !ok {
					break
				}
				r := &Recording{Status: 200, Body: bytes.Repeat([]byte{'r'}, int(op)*4)}
				if op&7 == 3 {
					ow.o.Complete(r)
				} else {
					ow.o.Fail(r)
				}
				delete(owners, sl)
				c, err := s.Begin(done, sl.tenant, sl.key, h(ow.body))
				if err != nil || (c.Replay != r && c.Failed != r && c.Refused != RefusedNotKept) {
					t.Fatalf("just finished: %s %v", kind(c), err)
				}
				if c, _ := s.Begin(done, sl.tenant, sl.key, h(ow.body+"!")); c.Refused != RefusedConflict {
					t.Fatalf("other body: %s", kind(c))
				}
			case 5:
				if ow, ok := owners[sl]; ok {
					ow.o.Abandon()
					delete(owners, sl)
				}
			case 6:
				if ow, ok := owners[sl]; ok {
					ow.o.Release()
					delete(owners, sl)
				}
			case 7:
				clk.Advance(time.Duration(op>>3) * 5 * time.Second)
			}
			checkInvariants(t, s)
		}
	})
}
