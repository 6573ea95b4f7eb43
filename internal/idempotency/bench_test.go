package idempotency

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

func benchKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "idem-" + strconv.Itoa(i)
	}
	return keys
}

// BenchmarkBeginComplete: one keyed request's store cost, uncontended, in
// steady state (every completion evicts the least recently used key).
func BenchmarkBeginComplete(b *testing.B) {
	s, _ := newTest(b, Options{MaxEntries: 1024})
	keys := benchKeys(4096)
	hash := h("body")
	r := rec(`{"id":"chatcmpl-1"}`)
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		c, _ := s.Begin(ctx, "vk", keys[i&4095], hash)
		c.Owner.Complete(r)
		i++
	}
}

// BenchmarkBeginReplay: a retry answered from the store.
func BenchmarkBeginReplay(b *testing.B) {
	s, _ := newTest(b, Options{})
	hash := h("body")
	c, _ := s.Begin(context.Background(), "vk", "k", hash)
	c.Owner.Complete(rec("x"))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if c, _ := s.Begin(ctx, "vk", "k", hash); c.Replay == nil {
			b.Fatal("no replay")
		}
	}
}

// BenchmarkBeginCompleteParallel: the single mutex under contention.
func BenchmarkBeginCompleteParallel(b *testing.B) {
	s, _ := newTest(b, Options{MaxEntries: 1024})
	keys := benchKeys(1 << 16)
	hash := h("body")
	r := rec(`{"id":"chatcmpl-1"}`)
	var next atomic.Uint32
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			c, _ := s.Begin(ctx, "vk", keys[next.Add(1)&(1<<16-1)], hash)
			if c.Owner != nil {
				c.Owner.Complete(r)
			}
		}
	})
}

type discardFlusher struct{ h http.Header }

func (d *discardFlusher) Header() http.Header         { return d.h }
func (d *discardFlusher) WriteHeader(int)             {}
func (d *discardFlusher) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardFlusher) Flush()                      {}

var benchEvent = []byte(`data: {"id":"chatcmpl-0123456789abcdef01234567","object":"chat.completion.chunk","created":1764417600,"model":"gpt-4.1","choices":[{"index":0,"delta":{"content":" token"},"finish_reason":null}]}` + "\n\n")

// BenchmarkRecorderStream: recording a 20-event stream, write and flush per
// event, plus building the Recording, with the store's pooled buffer.
func BenchmarkRecorderStream(b *testing.B) {
	s := New(Options{})
	w := &discardFlusher{h: http.Header{"Content-Type": {"text/event-stream"}, "X-Spillway-Model": {"gpt-4.1"}, "X-Request-Id": {"abc"}}}
	b.ReportAllocs()
	b.SetBytes(int64(20 * len(benchEvent)))
	for b.Loop() {
		rw := (&Owner{s: s}).Recorder(w)
		rw.WriteHeader(200)
		for range 20 {
			_, _ = rw.Write(benchEvent)
			rw.Flush()
		}
		if rw.Recording().Status != 200 {
			b.Fatal("no status")
		}
	}
}

// BenchmarkReplayStream: writing a recorded 20-event stream back.
func BenchmarkReplayStream(b *testing.B) {
	rw := NewRecorder(&discardFlusher{h: http.Header{"Content-Type": {"text/event-stream"}}}, 1<<20)
	for range 20 {
		_, _ = rw.Write(benchEvent)
		rw.Flush()
	}
	r := rw.Recording()
	w := &discardFlusher{h: http.Header{}}
	b.ReportAllocs()
	b.SetBytes(int64(20 * len(benchEvent)))
	for b.Loop() {
		if err := Replay(w, r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRequestHash: hashing a 2 KiB request body.
func BenchmarkRequestHash(b *testing.B) {
	body := []byte(strings.Repeat("x", 2048))
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		_ = RequestHash("/v1/chat/completions", body)
	}
}
