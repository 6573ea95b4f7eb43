// Package redisstate shares what each gateway replica would otherwise keep
// to itself (health transitions and the half-open probe, idempotent
// answers, conversation pins, rate windows and budget holds) through one
// Redis.
//
// Redis is never on a request's critical path for longer than one bounded
// call (Options.Timeout): the first call that fails marks Redis down, and
// from then on every call answers ErrDown at once and each replica uses
// its documented local fallback (or, for an idempotency key or a money
// limit by default, refuses the request), until a background ping finds Redis again
// (every Options.RetryEvery). Writes that nothing waits for (published
// transitions, pins, the end of a probe) go through one ordered queue and
// are dropped, counted, when it is full. The core packages never import
// this one: each defines the small interface it needs, and the assembler
// (cmd/spillway serve, or a test) plugs this in.
package redisstate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrDown is returned without calling Redis while it is marked down.
var ErrDown = errors.New("redisstate: redis is unreachable; using local state")

// Options configure a Client. Zero fields take their defaults.
type Options struct {
	// URL is the Redis URL (redis://[user:pass@]host:port/db, rediss://
	// for TLS). Required.
	URL string
	// Prefix namespaces every key and channel (default "spillway").
	Prefix string
	// Timeout bounds every call (default 50ms).
	Timeout time.Duration
	// RetryEvery is how often a down Redis is pinged (default 1s).
	RetryEvery time.Duration
	// ProbeLease bounds the shared half-open probe (default 30s).
	ProbeLease time.Duration
	// Replica names this replica in what it publishes, so it ignores its
	// own messages (default: random).
	Replica string
	// QueueSize bounds the writes waiting to be sent (default 4096).
	QueueSize int
	// Log receives one line when Redis goes down and one when it returns
	// (default: discarded).
	Log *slog.Logger
}

// Client is one replica's connection to the shared state. Close it to stop
// its goroutines.
type Client struct {
	rdb *redis.Client
	o   Options

	up        atomic.Bool
	listening atomic.Bool // the subscription is confirmed
	// reachable wakes the subscriber when the monitor finds Redis up
	// again, so that it subscribes at once rather than a RetryEvery later.
	reachable chan struct{}
	errs      atomic.Uint64
	fallbacks atomic.Uint64
	dropped   atomic.Uint64

	queue  chan queued
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	handlers map[string]func(payload string)
	onUp     []func(context.Context)
	ps       *redis.PubSub // the live subscription, closed by Close
	pending  []queued      // durable writes waiting for Redis to return

	idem atomic.Pointer[idemShared] // set by ShareIdempotency (nil: not shared)
}

type queued struct {
	op string
	fn func(context.Context, redis.Cmdable) error
	// durable writes are kept through an outage (see durable); timeout,
	// when longer than Options.Timeout, bounds this one write.
	durable bool
	timeout time.Duration
}

// maxPending bounds the durable writes kept while Redis is down.
const maxPending = 100000

// quietLog drops go-redis's own log lines (every failed dial of an outage);
// the client logs one line when Redis goes down and one when it returns.
type quietLog struct{}

func (quietLog) Printf(context.Context, string, ...any) {}

var setLogger sync.Once

// Open connects to o.URL. An unreachable Redis is not an error: the client
// starts down (local fallbacks) and connects when Redis answers; only a
// malformed URL is.
func Open(o Options) (*Client, error) {
	setLogger.Do(func() { redis.SetLogger(quietLog{}) })
	ro, err := redis.ParseURL(o.URL)
	if err != nil {
		return nil, fmt.Errorf("redisstate: the Redis URL is not valid: %w", errors.Unwrap(err))
	}
	if o.Prefix == "" {
		o.Prefix = "spillway"
	}
	if o.Timeout <= 0 {
		o.Timeout = 50 * time.Millisecond
	}
	if o.RetryEvery <= 0 {
		o.RetryEvery = time.Second
	}
	if o.ProbeLease <= 0 {
		o.ProbeLease = 30 * time.Second
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 4096
	}
	if o.Replica == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		o.Replica = hex.EncodeToString(b[:])
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	// Every bound explicit: no hidden retries, a connection from the pool
	// within Timeout, and every call bounded by its context's deadline
	// (Timeout, or longer for a large recording written in the
	// background): go-redis takes the earlier of that deadline and these
	// per-operation bounds.
	slow := max(o.Timeout, 5*time.Second)
	ro.DialTimeout, ro.ReadTimeout, ro.WriteTimeout, ro.PoolTimeout = slow, slow, slow, o.Timeout
	ro.ContextTimeoutEnabled = true
	ro.MaxRetries = -1
	// Connections kept warm, so a burst does not wait for many dials.
	ro.PoolSize, ro.MinIdleConns = max(ro.PoolSize, 64), max(ro.MinIdleConns, 8)
	c := &Client{rdb: redis.NewClient(ro), o: o, queue: make(chan queued, o.QueueSize),
		handlers: map[string]func(string){}, reachable: make(chan struct{}, 1)}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	ctx, cancel := context.WithTimeout(c.ctx, max(o.Timeout, time.Second))
	if err := c.rdb.Ping(ctx).Err(); err != nil {
		o.Log.Warn("shared state: redis unreachable at start-up; each replica uses its own state until it answers", "err", err)
	} else {
		c.up.Store(true)
	}
	cancel()
	c.wg.Add(3)
	go c.writer()
	go c.monitor()
	go c.subscriber()
	return c, nil
}

// Close stops the client's goroutines and closes its connections.
func (c *Client) Close() error {
	c.cancel()
	c.mu.Lock()
	if c.ps != nil {
		_ = c.ps.Close() // a blocked receive returns now
	}
	c.mu.Unlock()
	c.wg.Wait()
	return c.rdb.Close()
}

// Up reports whether Redis is in use now (false: local fallbacks).
func (c *Client) Up() bool { return c.up.Load() }

// Listening reports whether this replica hears the others now (its
// subscription is confirmed); tests wait for it before they publish.
func (c *Client) Listening() bool { return c.listening.Load() }

// Stats is what the metrics show.
type Stats struct {
	Up bool
	// Errors counts failed calls; Fallbacks calls answered locally
	// because Redis was down; Dropped writes the full queue refused.
	Errors, Fallbacks, Dropped uint64
}

// Stats reports the client's counters.
func (c *Client) Stats() Stats {
	return Stats{Up: c.up.Load(), Errors: c.errs.Load(), Fallbacks: c.fallbacks.Load(), Dropped: c.dropped.Load()}
}

// key is a namespaced key.
func (c *Client) key(parts ...string) string {
	n := len(c.o.Prefix)
	for _, p := range parts {
		n += 1 + len(p)
	}
	b := make([]byte, 0, n)
	b = append(b, c.o.Prefix...)
	for _, p := range parts {
		b = append(b, ':')
		b = append(b, p...)
	}
	return string(b)
}

// call runs fn against Redis within Timeout, or answers ErrDown at once
// while Redis is down. A failure of Redis itself (not a reply such as a
// missing key, not the caller's own cancel) marks it down.
func (c *Client) call(ctx context.Context, op string, fn func(context.Context) error) error {
	if !c.up.Load() {
		c.fallbacks.Add(1)
		return ErrDown
	}
	cctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	err := fn(cctx)
	cancel()
	switch {
	case err == nil || errors.Is(err, redis.Nil) || ctx.Err() != nil || isReply(err):
	case errors.Is(err, redis.ErrPoolTimeout):
		// Every connection busy: this call falls back, Redis is not down.
		c.errs.Add(1)
	default:
		c.down(op, err)
	}
	return err
}

// isReply reports whether err is Redis's answer (a script's error, a wrong
// type) rather than a failure to reach it.
func isReply(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	var ne net.Error
	return !errors.As(err, &ne)
}

func (c *Client) down(op string, err error) {
	c.errs.Add(1)
	if c.up.CompareAndSwap(true, false) {
		if sh := c.idem.Load(); sh != nil {
			// Waiters for keys in flight elsewhere look again now: their
			// claim fails at once (refused, or local by policy) rather
			// than after their poll.
			sh.wakeAll()
		}
		c.o.Log.Warn("shared state: redis unreachable; each replica uses its own state (health local, budgets per shared_state.budgets_when_down, keyed requests per shared_state.idempotency_when_down) until it answers",
			"op", op, "err", err)
	}
}

// async queues a write nothing waits for; it is dropped (and counted) when
// the queue is full or Redis is down.
func (c *Client) async(op string, fn func(context.Context, redis.Cmdable) error) {
	if !c.up.Load() {
		c.fallbacks.Add(1)
		return
	}
	select {
	case c.queue <- queued{op: op, fn: fn}:
	default:
		c.dropped.Add(1)
	}
}

// durable queues a write that must survive an outage (a settlement, an
// idempotency decision, the end of a probe): while Redis is down, or when
// the write fails, it is kept (at most maxPending, then dropped and
// counted) and sent, in order, once Redis answers again.
func (c *Client) durable(op string, timeout time.Duration, fn func(context.Context, redis.Cmdable) error) {
	q := queued{op: op, fn: fn, durable: true, timeout: timeout}
	if !c.up.Load() {
		c.keep(q)
		return
	}
	select {
	case c.queue <- q:
	default:
		c.keep(q)
	}
}

func (c *Client) keep(q queued) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) >= maxPending {
		c.dropped.Add(1)
		return
	}
	c.pending = append(c.pending, q)
}

func (c *Client) hasPending() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending) > 0
}

// flushPending sends the kept writes, in order, once Redis is back (and,
// while it is up, every RetryEvery).
func (c *Client) flushPending() {
	c.mu.Lock()
	qs := c.pending
	c.pending = nil
	c.mu.Unlock()
	for i, q := range qs {
		if !c.up.Load() {
			c.mu.Lock()
			c.pending = append(qs[i:len(qs):len(qs)], c.pending...)
			c.mu.Unlock()
			return
		}
		select {
		case c.queue <- q:
		case <-c.ctx.Done():
			return
		}
	}
}

// writer sends queued writes in order.
func (c *Client) writer() {
	defer c.wg.Done()
	for {
		select {
		case <-c.ctx.Done():
			return
		case q := <-c.queue:
			if !c.up.Load() && q.durable {
				c.keep(q)
				continue
			}
			err := c.call(c.ctx, q.op, func(ctx context.Context) error {
				if q.timeout > c.o.Timeout {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(c.ctx, q.timeout)
					defer cancel()
				}
				return q.fn(ctx, c.rdb)
			})
			if err != nil && q.durable && !isReply(err) && !errors.Is(err, redis.Nil) {
				c.keep(q)
			}
		}
	}
}

// monitor pings a down Redis every RetryEvery and, when it answers, marks
// it up and runs the resync hooks (no restart needed).
func (c *Client) monitor() {
	defer c.wg.Done()
	t := time.NewTicker(c.o.RetryEvery)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
		if c.up.Load() {
			// Writes kept while Redis is up (the queue was full, or the
			// pool had no connection) would otherwise wait for an outage
			// to end: a decision among them leaves its key in flight for
			// the other replicas until InFlightLease.
			if c.hasPending() {
				c.flushPending()
			}
			continue
		}
		ctx, cancel := context.WithTimeout(c.ctx, max(c.o.Timeout, 100*time.Millisecond))
		err := c.rdb.Ping(ctx).Err()
		cancel()
		if err != nil {
			continue
		}
		c.up.Store(true)
		select {
		case c.reachable <- struct{}{}:
		default:
		}
		c.o.Log.Info("shared state: redis reachable again; replicas share state")
		c.resync()
		c.flushPending()
	}
}

// onUpHook registers f to run whenever the client (re)connects: at the
// first subscription, after an outage and after the subscription broke.
func (c *Client) onUpHook(f func(context.Context)) {
	c.mu.Lock()
	c.onUp = append(c.onUp, f)
	c.mu.Unlock()
}

func (c *Client) resync() {
	c.mu.Lock()
	hooks := append([]func(context.Context){}, c.onUp...)
	c.mu.Unlock()
	for _, f := range hooks {
		f(c.ctx)
	}
}

// handle routes messages on channel (a suffix of the prefix) to f.
func (c *Client) handle(channel string, f func(payload string)) {
	c.mu.Lock()
	c.handlers[c.key(channel)] = f
	c.mu.Unlock()
}

// subscriber keeps one subscription to every channel under the prefix
// (one pattern, so channels handled later need no new subscription),
// resyncing whenever it (re)subscribes, since messages sent meanwhile
// were missed.
func (c *Client) subscriber() {
	defer c.wg.Done()
	for c.ctx.Err() == nil {
		if !c.up.Load() {
			select {
			case <-c.ctx.Done():
				return
			case <-c.reachable:
			case <-time.After(c.o.RetryEvery):
			}
			continue
		}
		c.receive()
		select {
		case <-c.ctx.Done():
			return
		case <-time.After(c.o.RetryEvery / 4):
		}
	}
}

// receive serves one subscription until it breaks.
func (c *Client) receive() {
	ps := c.rdb.PSubscribe(c.ctx, c.o.Prefix+":*")
	c.mu.Lock()
	c.ps = ps
	c.mu.Unlock()
	defer func() {
		c.listening.Store(false)
		c.mu.Lock()
		c.ps = nil
		c.mu.Unlock()
		_ = ps.Close()
	}()
	pingPending := false
	const idle = time.Second
	for {
		msg, err := ps.ReceiveTimeout(c.ctx, idle)
		if err != nil {
			if c.ctx.Err() != nil {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && !pingPending {
				// Quiet, or dead? A ping answers within the next wait.
				pingPending = true
				if err := ps.Ping(c.ctx); err == nil {
					continue
				}
			}
			c.down("subscribe", err)
			return
		}
		pingPending = false
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "psubscribe" {
				c.listening.Store(true)
				go c.resync()
			}
		case *redis.Message:
			c.mu.Lock()
			f := c.handlers[m.Channel]
			c.mu.Unlock()
			if f != nil {
				f(m.Payload)
			}
		}
	}
}
