package loadgen

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// HoldOptions configure Hold.
type HoldOptions struct {
	// Target is the streamed request to hold open.
	Target Target
	// Client sends the requests. Nil: NewClient(N, 0), with no timeout.
	Client *http.Client
	// N is how many streams to open at once. Required.
	N int
	// Ready bounds, in real time, how long the streams get to deliver
	// their first byte. Default 60s.
	Ready time.Duration
	// During is called once every stream delivered its first byte or
	// failed (or Ready passed), with how many are open; they stay open
	// until it returns. Required.
	During func(open int)
}

// HoldResult is what Hold saw.
type HoldResult struct {
	Streams int `json:"streams"`
	// Open streams had delivered their first byte and not ended when
	// During was called.
	Open int `json:"open"`
	// Failed counts streams that failed before their first byte, by kind
	// (Kind* constants), and "ended" for streams that finished before
	// During: neither was held.
	Failed map[string]int64 `json:"failed,omitempty"`
	// Ready is how long the streams took to be open, in seconds.
	Ready float64 `json:"ready_s"`
}

// Hold opens N streams at once, calls During while they are open, then
// cancels them: the way to measure what a proxy holds per stream in
// flight (its resident memory, say) with slow streams. It returns once
// every stream is closed.
func Hold(ctx context.Context, o HoldOptions) (*HoldResult, error) {
	if o.N <= 0 || o.During == nil || o.Target.URL == "" {
		return nil, fmt.Errorf("%w: Hold needs N, During and a target URL", ErrOptions)
	}
	if o.Ready <= 0 {
		o.Ready = time.Minute
	}
	client := o.Client
	if client == nil {
		client = NewClient(o.N, 0)
	}
	method := o.Target.Method
	if method == "" {
		method = http.MethodPost
	}
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()

	h := &holder{client: client, method: method, t: &o.Target, settled: make(chan string, o.N)}
	started := time.Now()
	var wg sync.WaitGroup
	for range o.N {
		wg.Go(func() { h.one(hctx) })
	}
	res := &HoldResult{Streams: o.N}
	failed := map[string]int64{}
	t := time.NewTimer(o.Ready)
	defer t.Stop()
wait:
	for range o.N {
		select {
		case why := <-h.settled:
			if why != "" {
				failed[why]++
			}
		case <-t.C:
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	res.Ready = time.Since(started).Seconds()
	if ctx.Err() == nil {
		h.holding.Store(true)
		res.Open = int(h.open.Load())
		o.During(res.Open)
	}
	cancel()
	wg.Wait()
	if n := h.ended.Load(); n > 0 {
		failed["ended"] = n
	}
	if len(failed) > 0 {
		res.Failed = failed
	}
	return res, ctx.Err()
}

// holder is one Hold's shared state.
type holder struct {
	client  *http.Client
	method  string
	t       *Target
	settled chan string // one value per stream: "" at its first byte, else why it failed
	open    atomic.Int64
	ended   atomic.Int64 // streams that finished before they were held
	holding atomic.Bool  // During has been called
}

// one opens one stream and reads it until it ends or ctx does.
func (h *holder) one(ctx context.Context) {
	var body io.Reader
	if h.t.Body != nil {
		body = bytes.NewReader(h.t.Body)
	}
	req, err := http.NewRequestWithContext(ctx, h.method, h.t.URL, body)
	if err != nil {
		h.settled <- KindRequest
		return
	}
	req.Header = h.t.Header.Clone()
	resp, err := h.client.Do(req)
	if err != nil {
		h.settled <- errKind(err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		h.settled <- kindStatus + strconv.Itoa(resp.StatusCode)
		return
	}
	buf := make([]byte, 4<<10)
	if _, err = io.ReadAtLeast(resp.Body, buf, 1); err != nil {
		h.settled <- kindCut
		return
	}
	h.open.Add(1)
	h.settled <- ""
	for err == nil {
		_, err = resp.Body.Read(buf)
	}
	h.open.Add(-1)
	if !h.holding.Load() {
		h.ended.Add(1)
	}
}
