// Package drill runs a seeded, bounded chaos drill against a running
// gateway and checks, from the caller's side and from the ledger, the
// invariants failover must keep: no silent truncation, no model change, no
// double settlement, cost equal to delivered tokens at the serving price,
// free failed hops, no reservation left open.
//
// The drill is independent of how the gateway is assembled: it is given
// the gateway's URL and a virtual key, the mock deployments of one pool (in
// pool order, each with its mock, whose faults it scripts phase by phase),
// the ledger file, and a way to flush the ledger. It speaks raw HTTP in the
// three caller dialects and reads every stream to its last byte, checking
// its framing.
package drill

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/mock"
)

// Request counts and paces of the two modes.
const (
	LongRequests  = 100_000
	ShortRequests = 3_000
	LongRate      = 1000
	ShortRate     = 250
)

// Config tunes one drill. The zero value is the long drill with seed 0.
type Config struct {
	// Seed decides every request's shape; the mocks' own p= sources are
	// seeded by whoever built them.
	Seed uint64
	// Requests is how many requests to send (not counting idempotent
	// replays). 0: LongRequests, or ShortRequests when Short.
	Requests int
	// Concurrency is how many requests are in flight at once. Default 32.
	Concurrency int
	// Rate caps how many requests start per second, so that each phase
	// lasts long enough for health windows (seconds) to play out: a gateway
	// that fails fast while every rung is open would otherwise burn a whole
	// phase in milliseconds. 0: ShortRate when Short, else LongRate;
	// negative: no cap.
	Rate float64
	// Short selects the CI-sized drill when Requests is 0.
	Short bool
	// RequestTimeout bounds one request as the caller waits for it; a
	// request still open after it counts as a hang. Default 30s.
	RequestTimeout time.Duration
	// Progress, when set, receives a line as each phase starts.
	Progress io.Writer
}

func (c *Config) defaults() {
	if c.Requests <= 0 {
		c.Requests = LongRequests
		if c.Short {
			c.Requests = ShortRequests
		}
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 32
	}
	if c.Rate == 0 {
		c.Rate = LongRate
		if c.Short {
			c.Rate = ShortRate
		}
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 30 * time.Second
	}
}

// Rung is one deployment of the pool under drill.
type Rung struct {
	// Deployment is the deployment as configured: its ID and Price are
	// what the ledger is checked against.
	Deployment *catalog.Deployment
	// Mock is the mock provider behind it; the drill sets its faults.
	Mock *mock.Mock
}

// Target is the gateway under drill.
type Target struct {
	// BaseURL is the gateway's URL, e.g. http://127.0.0.1:8080.
	BaseURL string
	// BaseURLs, when set, are several replicas of one gateway (sharing
	// their ledger and state) and replace BaseURL: request i goes to
	// BaseURLs[i mod n] and its Idempotency-Key retry to the next one, so
	// every replay comes from another replica than the original.
	BaseURLs []string
	// Key is a virtual key with no budget that could refuse the drill.
	Key string
	// Model is the exact model the pool serves, and the name callers ask
	// for (the route's public name must equal it).
	Model string
	// Rungs are the pool's deployments in pool order (at least 3).
	Rungs []Rung
	// Ledger is the ledger the gateway writes (any ledger.Store, e.g. a
	// PostgreSQL one), read after the traffic. Nil: LedgerPath.
	Ledger ledger.Auditor
	// LedgerPath is the SQLite ledger the gateway writes, read only after
	// the traffic when Ledger is nil.
	LedgerPath string
	// Flush makes every settlement durable (e.g. closes the ledger
	// writer) before the ledger is read. Nil: nothing to flush.
	Flush func(context.Context) error
	// Client sends the requests. Nil: a client with a keep-alive pool
	// sized to the concurrency.
	Client *http.Client
}

// ErrInvariant is wrapped by Run's error when an invariant broke.
var ErrInvariant = errors.New("drill: invariant broken")

// Run sends the drill's traffic, checks every invariant and returns the
// report. The error wraps ErrInvariant when any invariant broke; other
// errors mean the drill itself could not run (the report is then nil).
func Run(ctx context.Context, t Target, cfg Config) (*Report, error) {
	cfg.defaults()
	if len(t.Rungs) < 3 {
		return nil, fmt.Errorf("drill: the pool needs at least 3 rungs, got %d", len(t.Rungs))
	}
	seen := map[string]bool{}
	for i, r := range t.Rungs {
		switch {
		case r.Deployment == nil || r.Mock == nil:
			return nil, fmt.Errorf("drill: rung %d needs a deployment and a mock", i)
		case r.Deployment.Price == nil:
			// Unpriced is never $0: the cost invariant needs a price.
			return nil, fmt.Errorf("drill: deployment %s has no price", r.Deployment.ID)
		case seen[r.Deployment.ID]:
			return nil, fmt.Errorf("drill: deployment %s is in the pool twice", r.Deployment.ID)
		}
		seen[r.Deployment.ID] = true
	}
	client := t.Client
	if client == nil {
		tr := &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConns:        cfg.Concurrency * 2,
			MaxIdleConnsPerHost: cfg.Concurrency * 2,
			IdleConnTimeout:     30 * time.Second,
			// Exact bytes: no transparent gzip.
			DisableCompression: true,
		}
		defer tr.CloseIdleConnections()
		client = &http.Client{Transport: tr}
	}
	d := &driver{t: t, cfg: cfg, client: client, bases: baseURLs(t),
		nonce: strconv.FormatInt(time.Now().UnixNano(), 36), secrets: secrets(t.Rungs), faults: make([]string, len(t.Rungs))}
	// Start from a known state: every mock healthy.
	for _, r := range t.Rungs {
		if err := r.Mock.SetFault(""); err != nil {
			return nil, fmt.Errorf("drill: healing %s: %w", r.Deployment.ID, err)
		}
	}
	start := time.Now()
	results, phases, err := d.traffic(ctx)
	elapsed := time.Since(start)
	for _, r := range t.Rungs {
		_ = r.Mock.SetFault("")
	}
	if err != nil {
		return nil, err
	}
	if t.Flush != nil {
		if err := t.Flush(ctx); err != nil {
			return nil, fmt.Errorf("drill: flushing the ledger: %w", err)
		}
	}
	var lc *LedgerReport
	if t.Ledger != nil {
		lc, err = CheckStore(ctx, t.Ledger, t.Model, t.Rungs, expectations(results))
	} else {
		lc, err = CheckLedger(ctx, t.LedgerPath, t.Model, t.Rungs, expectations(results))
	}
	if err != nil {
		return nil, err
	}
	rep := buildReport(cfg, t, phases, results, lc, elapsed)
	if !rep.Pass {
		return rep, fmt.Errorf("%w: %s", ErrInvariant, strings.Join(rep.Broken(), ", "))
	}
	return rep, nil
}

// driver sends the traffic.
type driver struct {
	t      Target
	cfg    Config
	client *http.Client
	// bases are the gateway's URLs (one per replica), without a final /.
	bases []string
	// nonce keeps this run's idempotency keys apart from any other run's
	// against the same gateway.
	nonce string
	// secrets are provider details no answer may carry.
	secrets [][]byte
	// faults are the scripts the mocks run now.
	faults []string
}

// baseURLs are the URLs the drill spreads its requests over.
func baseURLs(t Target) []string {
	urls := t.BaseURLs
	if len(urls) == 0 {
		urls = []string{t.BaseURL}
	}
	out := make([]string, len(urls))
	for i, u := range urls {
		out[i] = strings.TrimRight(u, "/")
	}
	return out
}

// secrets are what identifies each provider behind the gateway: its own
// model id and its address. Callers see the exact model and the
// deployment's id, never these.
func secrets(rs []Rung) [][]byte {
	var out [][]byte
	for _, r := range rs {
		d := r.Deployment
		out = append(out, []byte(`"`+d.Model+`"`))
		if u, err := url.Parse(d.BaseURL); err == nil && u.Host != "" {
			out = append(out, []byte(u.Host))
		}
	}
	return out
}

// job is one request to send.
type job struct {
	i     int
	shape Shape
}

// traffic sends every request at the configured concurrency, setting each
// phase's faults when the dispatcher reaches its first request. Requests
// already in flight finish under the faults they met.
func (d *driver) traffic(ctx context.Context) ([]result, []PhaseReport, error) {
	n := d.cfg.Requests
	phases := Phases(n, len(d.t.Rungs))
	results := make([]result, n)
	jobs := make(chan job)
	var wg sync.WaitGroup
	for range d.cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for j := range jobs {
				results[j.i] = d.send(ctx, j.i, j.shape, &buf)
			}
		}()
	}
	sched := newSchedule(d.cfg.Seed)
	reports := make([]PhaseReport, len(phases))
	for i := range phases {
		reports[i].Phase = phases[i]
	}
	var err error
	p := -1
	start := time.Now()
	pace := time.NewTimer(0)
	defer pace.Stop()
dispatch:
	for i := range n {
		if d.cfg.Rate > 0 {
			// Request i starts no earlier than i/Rate into the run.
			due := start.Add(time.Duration(float64(i) / d.cfg.Rate * float64(time.Second)))
			if wait := time.Until(due); wait > time.Millisecond {
				pace.Reset(wait)
				select {
				case <-pace.C:
				case <-ctx.Done():
					err = ctx.Err()
					break dispatch
				}
			}
		}
		for p+1 < len(phases) && i >= phases[p+1].From {
			if p >= 0 {
				reports[p].Upstream = d.upstream()
			}
			p++
			if err = d.setFaults(phases[p]); err != nil {
				break dispatch
			}
			if d.cfg.Progress != nil {
				fmt.Fprintf(d.cfg.Progress, "drill: requests %d-%d: %s\n", phases[p].From, phases[p].To-1, phases[p].Name)
			}
		}
		select {
		case jobs <- job{i: i, shape: sched.next()}:
		case <-ctx.Done():
			err = ctx.Err()
			break dispatch
		}
	}
	close(jobs)
	wg.Wait()
	if p >= 0 {
		reports[p].Upstream = d.upstream()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("drill: %w", err)
	}
	return results, reports, nil
}

// setFaults gives each mock its script for phase p. A mock whose script
// does not change is left alone: SetFault restarts its p= sequence, and a
// circuit probed once per phase would otherwise meet the same first roll
// every time.
func (d *driver) setFaults(p Phase) error {
	for i, r := range d.t.Rungs {
		if d.faults[i] == p.Faults[i] {
			continue
		}
		if err := r.Mock.SetFault(p.Faults[i]); err != nil {
			return fmt.Errorf("setting %s's fault %q: %w", r.Deployment.ID, p.Faults[i], err)
		}
		d.faults[i] = p.Faults[i]
	}
	return nil
}

// upstream reads how many requests each mock received since the last call
// and clears their records (a long drill would otherwise keep every body).
func (d *driver) upstream() []int {
	out := make([]int, len(d.t.Rungs))
	for i, r := range d.t.Rungs {
		out[i] = r.Mock.Count()
		r.Mock.Reset()
	}
	return out
}

// answerKind is how a request ended for its caller.
type answerKind uint8

const (
	noAnswer    answerKind = iota // transport error, hang, unreadable body
	okAnswer                      // a complete answer
	interrupted                   // a stream ended with the typed error
	truncated                     // a stream ended with neither
	failed                        // an error status from the gateway
)

// result is what one request saw.
type result struct {
	shape  Shape
	kind   answerKind
	status int
	// From the headers.
	requestID, model, deployment, trail, errCode string
	attempts                                     int // -1: no header
	cost                                         int64
	hasCost                                      bool
	// From the body.
	bodyModel string
	usage     Usage
	delivered int
	// problem is a wire problem (not well formed, wrong shape, answer not
	// from the deployment named); reason why a request is noAnswer or
	// truncated.
	problem, reason string
	latency         time.Duration
	// replay is what went wrong with the idempotent replay ("" = fine);
	// replayed says the answer was marked Idempotent-Replayed.
	replay   string
	replayed bool
	// rerun is the idempotent retry of a request refused with nothing sent
	// upstream, whose key the gateway released (see released): the retry
	// ran as a request of its own, checked and expected in the ledger like
	// the others. Nil otherwise.
	rerun *result
	hung  bool
}

// send sends one request (twice for an idempotent one) and reads its
// answer to the end.
func (d *driver) send(ctx context.Context, i int, s Shape, buf *[]byte) result {
	*buf = appendBody((*buf)[:0], d.t.Model, s)
	var idemKey string
	if s.Idem {
		idemKey = "drill-" + d.nonce + "-" + strconv.Itoa(i)
	}
	r := d.once(ctx, d.bases[i%len(d.bases)], s, *buf, idemKey)
	if r.replayed {
		r.flag("a first request was answered as an idempotent replay")
	}
	if s.Idem && r.kind != noAnswer {
		again := d.once(ctx, d.bases[(i+1)%len(d.bases)], s, *buf, idemKey)
		if released(&r) {
			r.replay, r.rerun = rerunProblem(&r, &again), &again
		} else {
			r.replay = sameAnswer(&r, &again)
		}
	}
	return r
}

// flag records a wire problem; the first one is kept.
func (r *result) flag(p string) {
	if r.problem == "" {
		r.problem = p
	}
}

// sameAnswer says how a replay differed from the original ("" = it did not).
func sameAnswer(a, b *result) string {
	switch {
	case b.kind == noAnswer:
		return "replay got no answer: " + b.reason
	case b.requestID != a.requestID:
		return fmt.Sprintf("replay has request id %s (HTTP %d %s), the original %s (HTTP %d %s, attempts %d)",
			b.requestID, b.status, b.errCode, a.requestID, a.status, a.errCode, a.attempts)
	case b.status != a.status || b.kind != a.kind:
		return fmt.Sprintf("replay answered %d/%d, the original %d/%d", b.status, b.kind, a.status, a.kind)
	case b.usage != a.usage || b.delivered != a.delivered:
		return "replay's usage differs from the original's"
	case !b.replayed:
		return "the retry was answered afresh, not marked Idempotent-Replayed"
	case b.problem != "":
		return "replay: " + b.problem
	}
	return ""
}

func (d *driver) once(ctx context.Context, base string, s Shape, body []byte, idemKey string) (r result) {
	r.shape, r.attempts = s, -1
	ctx, cancel := context.WithTimeout(ctx, d.cfg.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+s.Dialect.Path(), bytes.NewReader(body))
	if err != nil {
		r.reason = err.Error()
		return r
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	if s.Dialect == Messages {
		h.Set("X-Api-Key", d.t.Key)
		h.Set("Anthropic-Version", "2023-06-01")
	} else {
		h.Set("Authorization", "Bearer "+d.t.Key)
	}
	if idemKey != "" {
		h.Set("Idempotency-Key", idemKey)
	}
	start := time.Now()
	defer func() {
		r.latency = time.Since(start)
		r.hung = ctx.Err() == context.DeadlineExceeded
	}()
	resp, err := d.client.Do(req)
	if err != nil {
		r.reason = err.Error()
		return r
	}
	defer resp.Body.Close()
	r.status = resp.StatusCode
	rh := resp.Header
	r.requestID = rh.Get("X-Request-Id")
	r.model = rh.Get("X-Spillway-Model")
	r.deployment = rh.Get("X-Spillway-Deployment")
	r.trail = rh.Get("X-Spillway-Trail")
	r.replayed = rh.Get("Idempotent-Replayed") == "true"
	if a := rh.Get("X-Spillway-Attempts"); a != "" {
		if n, err := strconv.Atoi(a); err == nil {
			r.attempts = n
		}
	}
	if s.Stream && resp.StatusCode == http.StatusOK {
		if ct := rh.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
			r.flag("stream answered with content type " + ct)
		}
		st := readStream(s.Dialect, resp.Body, d.secrets)
		r.bodyModel, r.usage, r.delivered = st.Model, st.Usage, st.Delivered
		if st.Problem != "" {
			r.flag(st.Problem)
		}
		switch st.Kind {
		case Complete:
			r.kind = okAnswer
		case Interrupted:
			r.kind = interrupted
		default:
			r.kind, r.reason = truncated, st.Reason
		}
		// The cost follows the stream as a trailer (not on a replay, whose
		// recording has no trailers).
		r.cost, r.hasCost = parseMicroUSD(resp.Trailer.Get("X-Spillway-Cost-Usd"))
		return r
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		r.reason = "reading the body: " + err.Error()
		return r
	}
	r.cost, r.hasCost = parseMicroUSD(rh.Get("X-Spillway-Cost-Usd"))
	if l := leaked(b, d.secrets); l != "" {
		r.flag(fmt.Sprintf("the body (HTTP %d) names %s", resp.StatusCode, l))
	}
	if resp.StatusCode != http.StatusOK {
		r.kind = failed
		code, err := ParseError(s.Dialect, b)
		switch {
		case err != nil:
			r.flag(fmt.Sprintf("error body (HTTP %d) not in the %s error shape: %v", resp.StatusCode, s.Dialect, err))
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable:
			// Come back when: a whole number of seconds, at least 1.
			if ra, err := strconv.Atoi(rh.Get("Retry-After")); err != nil || ra < 1 {
				r.flag(fmt.Sprintf("HTTP %d %s without a valid Retry-After (%q)", resp.StatusCode, code, rh.Get("Retry-After")))
			}
		}
		r.errCode = code
		return r
	}
	a, err := ParseAnswer(s.Dialect, b)
	if err != nil {
		r.kind, r.reason = noAnswer, "unreadable answer: "+err.Error()
		r.flag(r.reason)
		return r
	}
	r.kind, r.bodyModel, r.usage = okAnswer, a.Model, a.Usage
	// Mock answers begin "mock <deployment id>": the answer must come from
	// the deployment the header names.
	if a.Text != "" && r.deployment != "" {
		want := "mock " + r.deployment
		if !strings.HasPrefix(want, a.Text) && !strings.HasPrefix(a.Text, want) {
			r.flag(fmt.Sprintf("answer %q is not from %s", clip([]byte(a.Text)), r.deployment))
		}
	}
	return r
}

// parseMicroUSD parses a cost header, a decimal dollar amount with at most
// six decimals ("0.000123"), into micro-dollars.
func parseMicroUSD(s string) (int64, bool) {
	whole, frac, dot := strings.Cut(s, ".")
	if whole == "" || (dot && frac == "") || len(frac) > 6 || len(whole) > 12 {
		return 0, false
	}
	var v int64
	for _, c := range whole {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	for i := range 6 {
		d := int64(0)
		if i < len(frac) {
			c := frac[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			d = int64(c - '0')
		}
		v = v*10 + d
	}
	return v, true
}
