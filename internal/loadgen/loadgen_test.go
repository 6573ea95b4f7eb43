package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func TestRunRefusesBadOptions(t *testing.T) {
	tests := []struct {
		name string
		o    Options
	}{
		{"no url", Options{Duration: time.Second}},
		{"no bound", Options{Target: Target{URL: "http://127.0.0.1:1/"}}},
		{"negative duration", Options{Target: Target{URL: "http://127.0.0.1:1/"}, Duration: -time.Second, Requests: 1}},
		{"negative warmup", Options{Target: Target{URL: "http://127.0.0.1:1/"}, Duration: time.Second, Warmup: -1}},
		{"negative rate", Options{Target: Target{URL: "http://127.0.0.1:1/"}, Duration: time.Second, Rate: -1}},
		{"negative concurrency", Options{Target: Target{URL: "http://127.0.0.1:1/"}, Duration: time.Second, Concurrency: -1}},
		{"bad url", Options{Target: Target{URL: "http://[::1"}, Duration: time.Second}},
		{"bad method", Options{Target: Target{URL: "http://127.0.0.1:1/", Method: "BAD METHOD"}, Duration: time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Run(context.Background(), tt.o)
			if !errors.Is(err, ErrOptions) || res != nil {
				t.Fatalf("Run = %v, %v; want ErrOptions", res, err)
			}
		})
	}
}

// drive plays the server's side of a gated run: each request is held
// `before` on the fake clock until its first byte and `after` until its
// end, and the next step waits until the worker has seen the previous
// one, so every timestamp the driver takes is exact.
func drive(clk *fakeClock, g *gate, firstSeen, doneSeen chan struct{}, before, after time.Duration, finished <-chan struct{}) {
	for {
		select {
		case <-g.arrived:
		case <-finished:
			return
		}
		clk.Advance(before)
		g.first <- struct{}{}
		select {
		case <-firstSeen:
			clk.Advance(after)
			g.rest <- struct{}{}
			<-doneSeen
		case <-doneSeen: // failed before its first byte
		}
	}
}

// model computes what a closed loop of one worker must report when each
// answer takes dur(i) from the clock's start.
type tally struct {
	ok, cut, outside int64
	errs             map[string]int64
}

func model(warmup, window time.Duration, plan func(int) step, before, after time.Duration) tally {
	var m tally
	m.errs = map[string]int64{}
	ws, we := warmup, warmup+window
	t := time.Duration(0)
	for i := 0; t < we; i++ {
		s := plan(i)
		end := t + before + after
		if s == step503 {
			end = t + before
		}
		switch {
		case end < ws || end >= we:
			m.outside++
		case s == stepOK:
			m.ok++
		case s == step503:
			m.errs["status_503"]++
		default:
			m.cut++
		}
		t = end
	}
	return m
}

func TestRunClosedLoopCountsOnlyTheWindow(t *testing.T) {
	plan := func(i int) step { return []step{stepOK, stepOK, stepNoTerm, step503, stepAbort, stepOK}[i%6] }
	const before, after = time.Millisecond, 2 * time.Millisecond
	const warmup, window = 7 * time.Millisecond, 40 * time.Millisecond
	clk, g := newFakeClock(), newGate()
	srv := httptest.NewServer(scripted(t, g, plan))
	defer srv.Close()
	firstSeen, doneSeen := make(chan struct{}), make(chan struct{})
	var calls []string
	o := Options{
		Target: sseTarget(srv.URL), Concurrency: 1, Warmup: warmup, Duration: window, Clock: clk,
		OnWindowStart: func() { calls = append(calls, fmt.Sprint("start@", clk.Now().Sub(time.Unix(1_800_000_000, 0)))) },
		OnWindowEnd:   func() { calls = append(calls, "end") },
		onFirstByte:   func() { firstSeen <- struct{}{} },
		onDone:        func() { doneSeen <- struct{}{} },
	}
	finished := make(chan struct{})
	go func() { drive(clk, g, firstSeen, doneSeen, before, after, finished) }()
	res, err := Run(context.Background(), o)
	close(finished)
	if err != nil {
		t.Fatal(err)
	}
	want := model(warmup, window, plan, before, after)
	if res.OK != want.ok || res.Cut != want.cut || res.Outside != want.outside || res.Errors["status_503"] != want.errs["status_503"] || len(res.Errors) != 1 {
		t.Fatalf("ok %d cut %d outside %d errors %v; want ok %d cut %d outside %d errors %v",
			res.OK, res.Cut, res.Outside, res.Errors, want.ok, want.cut, want.outside, want.errs)
	}
	if res.Window != window.Seconds() || math.Abs(res.RPS-float64(want.ok)/window.Seconds()) > 1e-9 {
		t.Errorf("window %v s, rps %v; want %v s, %v", res.Window, res.RPS, window.Seconds(), float64(want.ok)/window.Seconds())
	}
	if res.Latency.Count != uint64(want.ok) || res.Latency.P50 != 3 || res.Latency.P99 != 3 || res.Latency.Max != 3 {
		t.Errorf("latency %+v, want every sample 3 ms", res.Latency)
	}
	if res.TTFB == nil || res.TTFB.P50 != 1 || res.TTFB.Max != 1 {
		t.Errorf("ttfb %+v, want every sample 1 ms", res.TTFB)
	}
	// The window opens when the clock first reaches the warm-up's end;
	// requests are 3 ms long, so that is at 7, 8 or 9 ms.
	if len(calls) != 2 || !strings.HasPrefix(calls[0], "start@") || calls[1] != "end" {
		t.Errorf("window hooks called %q, want a start then an end", calls)
	}
}

func TestRunCountBoundedWindow(t *testing.T) {
	clk, g := newFakeClock(), newGate()
	srv := httptest.NewServer(scripted(t, g, nil))
	defer srv.Close()
	firstSeen, doneSeen := make(chan struct{}), make(chan struct{})
	o := Options{
		Target: sseTarget(srv.URL), Concurrency: 1, Requests: 5, Clock: clk,
		onFirstByte: func() { firstSeen <- struct{}{} },
		onDone:      func() { doneSeen <- struct{}{} },
	}
	finished := make(chan struct{})
	go func() { drive(clk, g, firstSeen, doneSeen, time.Millisecond, time.Millisecond, finished) }()
	res, err := Run(context.Background(), o)
	close(finished)
	if err != nil {
		t.Fatal(err)
	}
	if res.OK != 5 || res.Window != 0.010 || res.RPS != 500 {
		t.Fatalf("ok %d window %v rps %v; want 5 answers in 10 ms, 500/s", res.OK, res.Window, res.RPS)
	}
}

// An open loop sends on schedule whatever the answers do: arrivals that
// find every slot busy are dropped and counted, never queued.
func TestRunOpenLoopDropsWhenFull(t *testing.T) {
	clk := newFakeClock()
	arrived, release := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		_, _ = io.WriteString(w, "{}")
	}))
	defer srv.Close()
	o := Options{
		Target:      Target{URL: srv.URL, Body: []byte(`{}`), Terminator: []byte("}")},
		Concurrency: 2, Rate: 1000, Duration: 10 * time.Millisecond, Clock: clk,
		OnWindowEnd: func() { close(release) },
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-arrived // t=0: the first slot
		clk.Advance(time.Millisecond)
		<-arrived // t=1ms: the second
		clk.Advance(9 * time.Millisecond)
	}()
	res, err := Run(context.Background(), o)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	// Arrivals at 2..9 ms found both slots busy; the two held answers
	// completed after the window.
	if res.Dropped != 8 || res.OK != 0 || res.Outside != 2 {
		t.Fatalf("dropped %d ok %d outside %d; want 8, 0, 2", res.Dropped, res.OK, res.Outside)
	}
}

// Open-loop latency runs from the scheduled arrival.
func TestRunOpenLoopLatency(t *testing.T) {
	clk, g := newFakeClock(), newGate()
	srv := httptest.NewServer(scripted(t, g, nil))
	defer srv.Close()
	firstSeen, doneSeen := make(chan struct{}), make(chan struct{})
	o := Options{
		Target: sseTarget(srv.URL), Concurrency: 4, Rate: 1000, Duration: 5 * time.Millisecond, Clock: clk,
		onFirstByte: func() { firstSeen <- struct{}{} },
		onDone:      func() { doneSeen <- struct{}{} },
	}
	finished := make(chan struct{})
	go func() {
		for {
			select {
			case <-g.arrived:
			case <-finished:
				return
			}
			clk.Advance(200 * time.Microsecond)
			g.first <- struct{}{}
			<-firstSeen
			clk.Advance(300 * time.Microsecond)
			g.rest <- struct{}{}
			<-doneSeen
			clk.Advance(500 * time.Microsecond) // the next arrival is due
		}
	}()
	res, err := Run(context.Background(), o)
	close(finished)
	if err != nil {
		t.Fatal(err)
	}
	if res.OK != 5 || res.Dropped != 0 || res.Latency.P50 != 0.5 || res.Latency.Max != 0.5 || res.TTFB.P50 != 0.2 {
		t.Fatalf("ok %d dropped %d latency %+v ttfb %+v; want 5 answers of 0.5 ms, first byte at 0.2 ms", res.OK, res.Dropped, res.Latency, res.TTFB)
	}
}

func TestRunStopsWhenContextEnds(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // never answers
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	clk := newFakeClock()
	o := Options{Target: Target{URL: srv.URL}, Concurrency: 3, Duration: time.Hour, Clock: clk, OnWindowStart: cancel}
	res, err := Run(ctx, o)
	if !errors.Is(err, context.Canceled) || res == nil {
		t.Fatalf("Run = %v, %v; want a result and context.Canceled", res, err)
	}
	if res.OK != 0 || res.Failed() != 0 {
		t.Errorf("ok %d failed %d; the cancelled requests should not count", res.OK, res.Failed())
	}
}

// The real clock and a real server, end to end: nothing is lost or cut,
// and connections are reused.
func TestRunRealServer(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(scripted(t, nil, nil))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	res, err := Run(context.Background(), Options{Target: sseTarget(srv.URL), Concurrency: 4, Requests: 200})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK != 200 || res.Failed() != 0 {
		t.Fatalf("ok %d failed %d errors %v", res.OK, res.Failed(), res.Errors)
	}
	if res.TTFB.P50 > res.Latency.P50 || res.TTFB.Max > res.Latency.Max || res.RPS <= 0 {
		t.Errorf("ttfb %+v latency %+v rps %v", res.TTFB, res.Latency, res.RPS)
	}
	if n := conns.Load(); n > 8 {
		t.Errorf("%d connections for 4 workers: keep-alive is not working", n)
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, []*Result{res}, Column{Header: "extra", Value: func(int) string { return "x1" }}); err != nil {
		t.Fatal(err)
	}
	if out := buf.String(); !strings.Contains(out, "ttfb99") || !strings.Contains(out, "extra") || !strings.Contains(out, "x1") || !strings.Contains(out, " 200 ") {
		t.Errorf("table:\n%s", out)
	}
}

func TestErrKind(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{context.Canceled, KindCancelled},
		{fmt.Errorf("wrapped: %w", context.DeadlineExceeded), KindTimeout},
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, KindRefused},
		{&net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, KindReset},
		{io.EOF, KindReset},
		{errors.New("tls: bad certificate"), KindTransport},
	}
	for _, tt := range tests {
		if got := errKind(tt.err); got != tt.want {
			t.Errorf("errKind(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestRunCountsRefusedConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	res, err := Run(context.Background(), Options{Target: Target{URL: "http://" + addr + "/"}, Requests: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors[KindRefused] != 3 || res.OK != 0 {
		t.Fatalf("errors %v ok %d; want 3 refused", res.Errors, res.OK)
	}
}

func TestTailFindsTerminator(t *testing.T) {
	done := "data: [DONE]"
	tests := []struct {
		name   string
		chunks []string
		want   bool
	}{
		{"nothing", nil, false},
		{"cut", []string{"data: {}\n\n", "data: [DO"}, false},
		{"terminator then more", []string{"data: [DONE]\n\ndata: {}\n\n"}, false},
		{"whole", []string{"data: {}\n\ndata: [DONE]\n\n"}, true},
		{"split across reads", []string{"data: {}\n\nda", "ta: [DO", "NE]", "\n", "\n"}, true},
		{"after a long chunk", []string{strings.Repeat("x", 3*tailLen), "\n\ndata: [DONE]\r\n\r\n"}, true},
		{"long chunk ending in it", []string{strings.Repeat("x", 3*tailLen) + "data: [DONE]\n\n"}, true},
		{"many small chunks", append(strings.Split(strings.Repeat("y", 2*tailLen), ""), "data: [DONE]"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w worker
			for _, c := range tt.chunks {
				w.keep([]byte(c))
			}
			if got := w.complete([]byte(done)); got != tt.want {
				t.Fatalf("complete = %v, want %v (tail %q)", got, tt.want, w.tail[:w.tailN])
			}
		})
	}
	var w worker
	if !w.complete(nil) {
		t.Error("with no terminator, every answer read to its end is complete")
	}
}
