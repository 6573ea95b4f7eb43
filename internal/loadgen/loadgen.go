// Package loadgen drives HTTP load at a fixed concurrency or a fixed rate
// and measures each answer's latency, time to first byte and completeness.
//
// A run has a warm-up, whose answers are not counted, then a measured
// window bounded by a duration or a number of answers. Throughput, latency
// and failures count the answers that complete inside the window, whenever
// they started: in a steady state that is exactly the work the window
// saw, so a process's CPU time sampled at the window's edges divided by
// the answers counted is its cost per request.
package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Target is one kind of request to send, identical every time.
type Target struct {
	// Name labels the results.
	Name string
	// Method defaults to POST when Body is set, GET otherwise.
	Method string
	// URL is the absolute URL to send to. Required.
	URL    string
	Header http.Header
	Body   []byte
	// Stream marks a streamed answer: its time to first byte is recorded.
	Stream bool
	// Terminator is what a complete answer ends with, trailing whitespace
	// ignored: "data: [DONE]" for an OpenAI stream, "}" for a JSON body.
	// An answer that ends without it, cleanly or with a read error, counts
	// as cut. Empty: any answer read to its end is complete.
	Terminator []byte
}

// Clock tells the time; tests substitute a fake one.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Options configure one run. Every zero field means its default.
type Options struct {
	Target Target
	// Client sends the requests. Nil: NewClient(Concurrency, 60s).
	Client *http.Client
	// Concurrency is the number of workers of a closed loop, or with Rate
	// the most requests in flight. Default 1.
	Concurrency int
	// Rate, when positive, sends this many requests per second whatever
	// the answers' latency (open loop); an arrival that finds Concurrency
	// requests in flight is dropped and counted, never queued. Latency is
	// measured from the arrival's scheduled time, so a late sender counts
	// against the answer, not in its favour. Zero: closed loop.
	Rate float64
	// Warmup is how long the load runs before the measured window; nothing
	// that completes in it is counted. Zero: no warm-up.
	Warmup time.Duration
	// Duration is the measured window's length. Zero: bounded by Requests
	// only. One of Duration and Requests is required.
	Duration time.Duration
	// Requests ends the window once this many answers completed in it.
	// Zero: bounded by Duration only.
	Requests int
	// Drain bounds, in real time, how long requests still in flight when
	// the window closes may run before they are cancelled. Default 10s.
	Drain time.Duration
	// OnWindowStart and OnWindowEnd, when set, are called as the measured
	// window opens and closes (to sample a process's CPU time, say). They
	// run on Run's goroutine; the load goes on meanwhile.
	OnWindowStart, OnWindowEnd func()
	// Clock tells the time. Nil: the real clock.
	Clock Clock

	// Test hooks, called after a worker saw an answer's first byte and
	// after it accounted an answer. Nil in production.
	onFirstByte, onDone func()
}

// ErrOptions is wrapped by every error about invalid Options.
var ErrOptions = errors.New("loadgen: invalid options")

// Error kinds counted in Result.Errors. A non-2xx answer counts as
// "status_<code>".
const (
	KindRefused   = "refused"   // connection refused
	KindReset     = "reset"     // connection reset or closed before an answer
	KindTimeout   = "timeout"   // the client's timeout fired
	KindCancelled = "cancelled" // the run's context ended
	KindTransport = "transport" // any other failure before the answer's headers
	KindRequest   = "request"   // the request could not be built
	kindStatus    = "status_"
)

// Result is one run's measurements. Latencies are in milliseconds.
type Result struct {
	Name        string  `json:"name"`
	Concurrency int     `json:"concurrency"`
	Rate        float64 `json:"rate,omitempty"`
	// Window is the measured window's length in seconds.
	Window float64 `json:"window_s"`
	// OK answers were complete, with a 2xx status.
	OK int64 `json:"ok"`
	// Cut answers ended before their terminator: with a 2xx status, the
	// body broke off or ended early (a stream cut mid-way, golang/go#40747).
	Cut int64 `json:"cut"`
	// Errors counts the other failures by kind (Kind* constants).
	Errors map[string]int64 `json:"errors,omitempty"`
	// Dropped counts open-loop arrivals in the window that found every
	// slot busy.
	Dropped int64 `json:"dropped,omitempty"`
	// Outside counts answers (of any outcome) that completed during the
	// warm-up or the drain: sent, but not measured.
	Outside int64 `json:"outside_window"`
	// RPS is OK answers per second of the window.
	RPS float64 `json:"rps"`
	// Bytes is the body bytes of the OK answers.
	Bytes int64 `json:"bytes"`
	// Latency is from sending (or, open loop, from the scheduled arrival)
	// to the end of the body, of the OK answers.
	Latency Summary `json:"latency_ms"`
	// TTFB is the time to the first body byte of OK streamed answers.
	TTFB *Summary `json:"ttfb_ms,omitempty"`
}

// Failed is every counted answer that was not OK.
func (r *Result) Failed() int64 {
	n := r.Cut
	for _, c := range r.Errors {
		n += c
	}
	return n
}

// Completed is every answer counted in the window, OK or not.
func (r *Result) Completed() int64 { return r.OK + r.Failed() }

// NewClient returns a client for load: plain HTTP/1.1 keep-alive with
// idle room for conns connections per host (fewer would make a run pay
// for new connections), no compression, no proxy from the environment.
// timeout bounds each request; zero means none.
func NewClient(conns int, timeout time.Duration) *http.Client {
	conns = max(conns, 1)
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        2 * conns,
			MaxIdleConnsPerHost: conns,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		},
	}
}

// Run drives the load until the window closes or ctx ends, drains what is
// in flight and returns the measurements. When ctx ends first it returns
// what was measured so far with ctx's error.
func Run(ctx context.Context, o Options) (*Result, error) {
	r, err := newRunner(o)
	if err != nil {
		return nil, err
	}
	return r.run(ctx)
}

// runner is one run's shared state; workers touch only atomics, the
// histograms and (rarely) errMu.
type runner struct {
	o      Options
	clk    Clock
	client *http.Client
	method string

	ws, we time.Time // window; we is zero without Duration
	// windowEnd is set once, as ns after ws: by the N-th answer with
	// Requests, else by run when the window closes.
	windowEnd atomic.Int64
	stop      atomic.Bool
	full      chan struct{} // closed when Requests answers were counted
	fullOnce  sync.Once
	slots     chan struct{} // open loop: one token per request in flight
	opened    bool          // the window opened; only run's goroutine uses it

	reqCtx context.Context

	counted, ok, cut, outside, dropped, bytes atomic.Int64
	latency, ttfb                             Histogram
	errMu                                     sync.Mutex
	errs                                      map[string]int64
}

func newRunner(o Options) (*runner, error) {
	switch {
	case o.Target.URL == "":
		return nil, fmt.Errorf("%w: no target URL", ErrOptions)
	case o.Duration <= 0 && o.Requests <= 0:
		return nil, fmt.Errorf("%w: neither a duration nor a request count bounds the run", ErrOptions)
	case o.Duration < 0, o.Requests < 0, o.Warmup < 0, o.Rate < 0, o.Concurrency < 0:
		return nil, fmt.Errorf("%w: negative duration, warm-up, count, rate or concurrency", ErrOptions)
	}
	o.Concurrency = max(o.Concurrency, 1)
	if o.Drain <= 0 {
		o.Drain = 10 * time.Second
	}
	r := &runner{o: o, clk: o.Clock, client: o.Client, method: o.Target.Method,
		full: make(chan struct{}), slots: make(chan struct{}, o.Concurrency), errs: map[string]int64{}}
	if r.clk == nil {
		r.clk = realClock{}
	}
	if r.client == nil {
		r.client = NewClient(o.Concurrency, time.Minute)
	}
	if r.method == "" {
		r.method = http.MethodGet
		if o.Target.Body != nil {
			r.method = http.MethodPost
		}
	}
	// Fail on a URL that can never work before any load starts.
	if _, err := http.NewRequest(r.method, o.Target.URL, nil); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOptions, err)
	}
	return r, nil
}

func (r *runner) run(ctx context.Context) (*Result, error) {
	reqCtx, cancelReqs := context.WithCancel(ctx)
	defer cancelReqs()
	r.reqCtx = reqCtx

	start := r.clk.Now()
	r.ws = start.Add(r.o.Warmup)
	if r.o.Duration > 0 {
		r.we = r.ws.Add(r.o.Duration)
	}
	var wg sync.WaitGroup
	if r.o.Rate > 0 {
		jobs := make(chan time.Time, r.o.Concurrency)
		for range r.o.Concurrency {
			wg.Go(func() { r.openWorker(jobs) })
		}
		r.schedule(ctx, start, jobs)
		close(jobs)
	} else {
		for range r.o.Concurrency {
			wg.Go(r.closedWorker)
		}
		r.coordinate(ctx)
	}
	r.stop.Store(true)
	if r.opened {
		r.windowEnd.CompareAndSwap(0, int64(r.windowClose().Sub(r.ws)))
		if f := r.o.OnWindowEnd; f != nil {
			f()
		}
	}
	r.drain(&wg, cancelReqs)
	return r.result(), ctx.Err()
}

// openWindow marks the window open and calls OnWindowStart.
func (r *runner) openWindow() {
	r.opened = true
	if f := r.o.OnWindowStart; f != nil {
		f()
	}
}

// windowClose is when the window ended: its planned end, or now if that
// is earlier (ctx ended, or the count was reached).
func (r *runner) windowClose() time.Time {
	now := r.clk.Now()
	if !r.we.IsZero() && now.After(r.we) {
		return r.we
	}
	return now
}

// coordinate opens and closes the closed loop's window.
func (r *runner) coordinate(ctx context.Context) {
	if r.o.Warmup > 0 {
		select {
		case <-r.clk.After(r.o.Warmup):
		case <-ctx.Done():
			return
		}
	}
	r.openWindow()
	var end <-chan time.Time
	if !r.we.IsZero() {
		end = r.clk.After(r.we.Sub(r.clk.Now()))
	}
	select {
	case <-end:
	case <-r.full:
	case <-ctx.Done():
	}
}

// schedule sends the open loop's arrivals, each at its planned time
// (start + i/Rate, so delays never accumulate), until the window closes.
func (r *runner) schedule(ctx context.Context, start time.Time, jobs chan<- time.Time) {
	for i := int64(0); ; i++ {
		at := start.Add(time.Duration(float64(i) * float64(time.Second) / r.o.Rate))
		if !r.we.IsZero() && !at.Before(r.we) {
			return
		}
		if wait := at.Sub(r.clk.Now()); wait > 0 {
			select {
			case <-r.clk.After(wait):
			case <-r.full:
				return
			case <-ctx.Done():
				return
			}
		}
		select {
		case <-r.full:
			return
		default:
		}
		if !r.opened && !at.Before(r.ws) {
			r.openWindow()
		}
		select {
		case r.slots <- struct{}{}:
			jobs <- at // never blocks: jobs holds as many as there are slots
		default:
			if r.opened {
				r.dropped.Add(1)
			}
		}
	}
}

func (r *runner) closedWorker() {
	w := r.newWorker()
	for !r.stop.Load() {
		start := r.clk.Now()
		if !r.we.IsZero() && !start.Before(r.we) {
			return
		}
		r.do(w, start)
	}
}

func (r *runner) openWorker(jobs <-chan time.Time) {
	w := r.newWorker()
	for at := range jobs {
		r.do(w, at)
		<-r.slots
	}
}

// drain waits for the workers, cancelling what is in flight after Drain.
func (r *runner) drain(wg *sync.WaitGroup, cancel context.CancelFunc) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(r.o.Drain)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		cancel()
		<-done
	}
}

func (r *runner) result() *Result {
	res := &Result{
		Name:        r.o.Target.Name,
		Concurrency: r.o.Concurrency,
		Rate:        r.o.Rate,
		Window:      time.Duration(r.windowEnd.Load()).Seconds(),
		OK:          r.ok.Load(),
		Cut:         r.cut.Load(),
		Dropped:     r.dropped.Load(),
		Outside:     r.outside.Load(),
		Bytes:       r.bytes.Load(),
		Latency:     r.latency.Summary(),
	}
	r.errMu.Lock()
	if len(r.errs) > 0 {
		res.Errors = r.errs
	}
	r.errMu.Unlock()
	if res.Window > 0 {
		res.RPS = float64(res.OK) / res.Window
	}
	if r.o.Target.Stream {
		s := r.ttfb.Summary()
		res.TTFB = &s
	}
	return res
}

// tailLen is how much of an answer's end is kept to find its terminator.
const tailLen = 256

// worker is one worker's reusable state.
type worker struct {
	header http.Header
	buf    []byte
	tail   [tailLen]byte
	tailN  int
}

func (r *runner) newWorker() *worker {
	// Each worker owns a copy: the transport only reads a request's
	// header, but nothing promises every client wrapper will.
	return &worker{header: r.o.Target.Header.Clone(), buf: make([]byte, 32<<10)}
}

// answer is one exchange's outcome.
type answer struct {
	start, first, end time.Time
	kind              string // "" OK, kindCut, or an error kind
	bytes             int64
}

const kindCut = "cut"

func (r *runner) do(w *worker, start time.Time) {
	a := answer{start: start}
	r.exchange(w, &a)
	a.end = r.clk.Now()
	r.account(&a)
	if r.o.onDone != nil {
		r.o.onDone()
	}
}

// exchange sends one request and reads its answer to the end, keeping
// only the answer's tail (nothing is decoded: the driver must stay cheap
// next to what it measures).
func (r *runner) exchange(w *worker, a *answer) {
	var body io.Reader
	if r.o.Target.Body != nil {
		body = bytes.NewReader(r.o.Target.Body)
	}
	req, err := http.NewRequestWithContext(r.reqCtx, r.method, r.o.Target.URL, body)
	if err != nil {
		a.kind = KindRequest
		return
	}
	req.Header = w.header
	resp, err := r.client.Do(req)
	if err != nil {
		a.kind = errKind(err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		a.kind = kindStatus + strconv.Itoa(resp.StatusCode)
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // keep the connection
		return
	}
	w.tailN = 0
	for {
		n, err := resp.Body.Read(w.buf)
		if n > 0 {
			if a.first.IsZero() {
				a.first = r.clk.Now()
				if r.o.onFirstByte != nil {
					r.o.onFirstByte()
				}
			}
			a.bytes += int64(n)
			w.keep(w.buf[:n])
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			a.kind = kindCut
			return
		}
	}
	if !w.complete(r.o.Target.Terminator) {
		a.kind = kindCut
	}
}

// keep appends p to the tail, keeping the last tailLen bytes.
func (w *worker) keep(p []byte) {
	if len(p) >= tailLen {
		w.tailN = copy(w.tail[:], p[len(p)-tailLen:])
		return
	}
	if over := w.tailN + len(p) - tailLen; over > 0 {
		copy(w.tail[:], w.tail[over:w.tailN])
		w.tailN -= over
	}
	w.tailN += copy(w.tail[w.tailN:], p)
}

// complete reports whether the answer ended with term, trailing
// whitespace ignored.
func (w *worker) complete(term []byte) bool {
	return len(term) == 0 || bytes.HasSuffix(bytes.TrimRight(w.tail[:w.tailN], " \t\r\n"), term)
}

// account counts an answer if it completed inside the window. A failure
// after the run's context ended is the driver's own cancellation, not the
// target's: it is not counted either.
func (r *runner) account(a *answer) {
	if (a.kind != "" && r.reqCtx.Err() != nil) || !r.inWindow(a.end) {
		r.outside.Add(1)
		return
	}
	switch a.kind {
	case "":
		r.ok.Add(1)
		r.bytes.Add(a.bytes)
		r.latency.Record(a.end.Sub(a.start))
		if r.o.Target.Stream {
			r.ttfb.Record(a.first.Sub(a.start))
		}
	case kindCut:
		r.cut.Add(1)
	default:
		r.errMu.Lock()
		r.errs[a.kind]++
		r.errMu.Unlock()
	}
}

// inWindow reports whether an answer completing at t is counted; with
// Requests, the N-th one closes the window.
func (r *runner) inWindow(t time.Time) bool {
	if t.Before(r.ws) || (!r.we.IsZero() && !t.Before(r.we)) {
		return false
	}
	if r.o.Requests <= 0 {
		return true
	}
	n := r.counted.Add(1)
	if n > int64(r.o.Requests) {
		return false
	}
	if n == int64(r.o.Requests) {
		r.windowEnd.Store(int64(t.Sub(r.ws)))
		r.stop.Store(true)
		r.fullOnce.Do(func() { close(r.full) })
	}
	return true
}

// errKind names a failure to get an answer's headers.
func errKind(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled):
		return KindCancelled
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return KindTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return KindRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return KindReset
	}
	return KindTransport
}
