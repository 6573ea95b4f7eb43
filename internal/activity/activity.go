// Package activity keeps the gateway's recent traffic in memory, for the
// dashboard: served and failed attempts per deployment and failovers, in
// time buckets, and the trail of the last failed attempts. Every record is
// content-free (ids, configured names, failure classes and statuses) and
// every size is bounded.
package activity

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spillway-gw/spillway/internal/engine"
	"github.com/spillway-gw/spillway/internal/failure"
)

// Defaults of Options.
const (
	DefaultBucket         = time.Minute
	DefaultBuckets        = 60 // an hour of one-minute buckets
	DefaultTrail          = 200
	DefaultMaxDeployments = 256
	DefaultMaxFailovers   = 64
)

// Options bound a Recorder. Zero fields take the defaults.
type Options struct {
	// Now is the clock that places records in buckets (default time.Now).
	Now func() time.Time
	// Bucket is one bucket's width (default DefaultBucket; at least a
	// second).
	Bucket time.Duration
	// Buckets is how many buckets are kept: the window is Bucket times
	// Buckets (default DefaultBuckets).
	Buckets int
	// Trail is how many failed attempts are kept, newest first out
	// (default DefaultTrail).
	Trail int
	// MaxDeployments bounds the deployments one bucket counts apart
	// (default DefaultMaxDeployments); attempts on more are counted in
	// the bucket's overflow.
	MaxDeployments int
	// MaxFailovers bounds the route/from/to pairs one bucket counts apart
	// (default DefaultMaxFailovers); more are counted in its overflow.
	MaxFailovers int
}

// Recorder keeps the recent activity. Safe for concurrent use; Record
// allocates only when a bucket meets a deployment or failover pair for the
// first time, and nothing once the trail and buckets are warm.
type Recorder struct {
	opts Options
	now  func() time.Time
	// width is the bucket width in seconds.
	width int64

	mu      sync.Mutex
	buckets []bucket // a ring indexed by bucket number modulo its length
	trail   []Failure
	next    int   // the trail slot the next failure goes to
	total   int64 // failures ever recorded
}

type bucket struct {
	n           int64 // the bucket's number: Unix seconds / width; 0 unused
	deployments []DeploymentCount
	failovers   []Failover
	overflow    int64
}

// New returns a Recorder with opts' bounds.
func New(opts Options) *Recorder {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Bucket < time.Second {
		opts.Bucket = DefaultBucket
	}
	if opts.Buckets <= 0 {
		opts.Buckets = DefaultBuckets
	}
	if opts.Trail <= 0 {
		opts.Trail = DefaultTrail
	}
	if opts.MaxDeployments <= 0 {
		opts.MaxDeployments = DefaultMaxDeployments
	}
	if opts.MaxFailovers <= 0 {
		opts.MaxFailovers = DefaultMaxFailovers
	}
	return &Recorder{opts: opts, now: opts.Now, width: int64(opts.Bucket / time.Second),
		buckets: make([]bucket, opts.Buckets), trail: make([]Failure, 0, opts.Trail)}
}

// DeploymentCount is one deployment's attempts in a bucket or a window:
// Served counts the attempts that served, Failed those that failed.
type DeploymentCount struct {
	Deployment string `json:"deployment"`
	Served     int64  `json:"served"`
	Failed     int64  `json:"failed"`
}

// Failover counts requests of a route that a deployment failed and
// another then served.
type Failover struct {
	Route string `json:"route"`
	From  string `json:"from"`
	To    string `json:"to"`
	Count int64  `json:"count"`
}

// Failure is one failed attempt in the trail: what failed and how, never
// what was asked or answered.
type Failure struct {
	// Time is when the attempt ended.
	Time      time.Time `json:"time"`
	RequestID string    `json:"request_id"`
	// Route is the configured route (its public model name).
	Route      string `json:"route"`
	Deployment string `json:"deployment"`
	// Verdict is the attempt's failure class; Timeout the silence bound
	// that fired, when one did.
	Verdict string `json:"verdict"`
	Timeout string `json:"timeout,omitempty"`
	// HTTPStatus is the provider's status; 0 when no response arrived.
	HTTPStatus int `json:"http_status"`
	// DurationMS is how long the attempt ran, in milliseconds.
	DurationMS int64 `json:"duration_ms"`
	// Retry marks the one same-rung retry after a transport blip.
	Retry bool `json:"retry,omitempty"`
	// ServedBy is the deployment that then served the request; empty
	// when none did.
	ServedBy string `json:"served_by,omitempty"`
}

// counted reports whether an attempt's failure is the deployment's: a
// lost hedge and a caller who left are neither served nor failed.
func counted(a *engine.Attempt) bool {
	if a.Err == nil {
		return true
	}
	return a.Err.Class != failure.HedgedLost && a.Err.Class != failure.ClientCancelled
}

// Record notes one finished request of route: each attempt, in its
// deployment's bucket count; each failover (as engine.Result.EachFailover
// sees them, so the same hops spillway_failovers_total counts); and each
// failed attempt in the trail.
func (r *Recorder) Record(requestID, route string, res *engine.Result) {
	if res == nil || len(res.Attempts) == 0 {
		return
	}
	now := r.now()
	servedBy := ""
	if k := res.ServingAttempt(); k >= 0 && res.Attempts[k].Err == nil {
		servedBy = res.Attempts[k].Deployment
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.bucketAt(now)
	for i := range res.Attempts {
		a := &res.Attempts[i]
		if !counted(a) {
			continue
		}
		if b != nil {
			b.count(a.Deployment, a.Err == nil, r.opts.MaxDeployments)
		}
		if a.Err == nil {
			continue
		}
		r.addFailure(Failure{Time: endOf(a, now), RequestID: requestID, Route: route, Deployment: a.Deployment,
			Verdict: string(a.Err.Class), Timeout: string(a.Err.Timeout), HTTPStatus: a.Err.Status,
			DurationMS: a.Duration.Milliseconds(), Retry: a.Retry, ServedBy: servedBy})
	}
	if b != nil {
		limit := r.opts.MaxFailovers
		res.EachFailover(func(from, to *engine.Attempt) { b.failover(route, from.Deployment, to.Deployment, limit) })
	}
}

// endOf is when an attempt ended (now when its start is unknown).
func endOf(a *engine.Attempt, now time.Time) time.Time {
	if a.Start.IsZero() {
		return now
	}
	return a.Start.Add(a.Duration)
}

// bucketAt returns the bucket now falls in, reset if the ring moved past
// it; nil for a time older than the window (a clock stepped back).
func (r *Recorder) bucketAt(now time.Time) *bucket {
	n := now.Unix() / r.width
	b := &r.buckets[int(n%int64(len(r.buckets)))]
	switch {
	case b.n == n:
		return b
	case b.n > n:
		return nil
	}
	b.n = n
	b.deployments = b.deployments[:0]
	b.failovers = b.failovers[:0]
	b.overflow = 0
	return b
}

func (b *bucket) count(dep string, served bool, limit int) {
	i := slices.IndexFunc(b.deployments, func(c DeploymentCount) bool { return c.Deployment == dep })
	if i < 0 {
		if len(b.deployments) >= limit {
			b.overflow++
			return
		}
		b.deployments = append(b.deployments, DeploymentCount{Deployment: dep})
		i = len(b.deployments) - 1
	}
	if served {
		b.deployments[i].Served++
	} else {
		b.deployments[i].Failed++
	}
}

func (b *bucket) failover(route, from, to string, limit int) {
	i := slices.IndexFunc(b.failovers, func(f Failover) bool { return f.Route == route && f.From == from && f.To == to })
	if i < 0 {
		if len(b.failovers) >= limit {
			b.overflow++
			return
		}
		b.failovers = append(b.failovers, Failover{Route: route, From: from, To: to})
		i = len(b.failovers) - 1
	}
	b.failovers[i].Count++
}

func (r *Recorder) addFailure(f Failure) {
	if len(r.trail) < cap(r.trail) {
		r.trail = append(r.trail, f)
	} else {
		r.trail[r.next] = f
	}
	r.next = (r.next + 1) % cap(r.trail)
	r.total++
}

// Traffic is the body of GET /v1/admin/traffic: the window's buckets,
// oldest first (empty ones too, so they read as a time axis), and its
// totals.
type Traffic struct {
	BucketSeconds int64     `json:"bucket_seconds"`
	Now           time.Time `json:"now"`
	Buckets       []Bucket  `json:"buckets"`
	// Deployments and Failovers total the window, sorted by name.
	Deployments []DeploymentCount `json:"deployments"`
	Failovers   []Failover        `json:"failovers"`
	// Overflow counts attempts and failovers a bucket could not count
	// apart (more deployments or pairs than its bounds).
	Overflow int64 `json:"overflow"`
}

// Bucket is one time bucket of Traffic.
type Bucket struct {
	Start       time.Time         `json:"start"`
	Deployments []DeploymentCount `json:"deployments"`
	Failovers   []Failover        `json:"failovers"`
}

// Traffic returns the window ending now.
func (r *Recorder) Traffic() Traffic {
	now := r.now()
	cur := now.Unix() / r.width
	t := Traffic{BucketSeconds: r.width, Now: now.UTC(), Buckets: make([]Bucket, 0, len(r.buckets)),
		Deployments: []DeploymentCount{}, Failovers: []Failover{}}
	r.mu.Lock()
	defer r.mu.Unlock()
	for n := cur - int64(len(r.buckets)) + 1; n <= cur; n++ {
		out := Bucket{Start: time.Unix(n*r.width, 0).UTC(), Deployments: []DeploymentCount{}, Failovers: []Failover{}}
		if b := r.kept(n); b != nil {
			out.Deployments = append(out.Deployments, b.deployments...)
			out.Failovers = append(out.Failovers, b.failovers...)
			t.Overflow += b.overflow
			for _, d := range b.deployments {
				t.Deployments = addCount(t.Deployments, d)
			}
			for _, f := range b.failovers {
				t.Failovers = addFailover(t.Failovers, f)
			}
		}
		slices.SortFunc(out.Deployments, byDeployment)
		t.Buckets = append(t.Buckets, out)
	}
	slices.SortFunc(t.Deployments, byDeployment)
	slices.SortFunc(t.Failovers, func(a, b Failover) int {
		return strings.Compare(a.Route+"\x00"+a.From+"\x00"+a.To, b.Route+"\x00"+b.From+"\x00"+b.To)
	})
	return t
}

// kept returns bucket n if the ring still holds it.
func (r *Recorder) kept(n int64) *bucket {
	if n <= 0 {
		return nil
	}
	if b := &r.buckets[int(n%int64(len(r.buckets)))]; b.n == n {
		return b
	}
	return nil
}

func byDeployment(a, b DeploymentCount) int { return strings.Compare(a.Deployment, b.Deployment) }

func addCount(to []DeploymentCount, d DeploymentCount) []DeploymentCount {
	for i := range to {
		if to[i].Deployment == d.Deployment {
			to[i].Served += d.Served
			to[i].Failed += d.Failed
			return to
		}
	}
	return append(to, d)
}

func addFailover(to []Failover, f Failover) []Failover {
	for i := range to {
		if to[i].Route == f.Route && to[i].From == f.From && to[i].To == f.To {
			to[i].Count += f.Count
			return to
		}
	}
	return append(to, f)
}

// Failures is the body of GET /v1/admin/failures: the trail, newest
// first.
type Failures struct {
	// Capacity is how many failures the trail keeps; Total how many were
	// ever recorded.
	Capacity int       `json:"capacity"`
	Total    int64     `json:"total"`
	Failures []Failure `json:"failures"`
}

// Failures returns up to limit failed attempts, newest first (limit <= 0
// or above the capacity: all that are kept).
func (r *Recorder) Failures(limit int) Failures {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.trail)
	if limit > 0 && limit < n {
		n = limit
	}
	out := Failures{Capacity: cap(r.trail), Total: r.total, Failures: make([]Failure, 0, n)}
	for i := 1; i <= n; i++ {
		out.Failures = append(out.Failures, r.trail[(r.next-i+cap(r.trail))%cap(r.trail)])
	}
	return out
}
