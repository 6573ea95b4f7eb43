// Package eval runs a golden set against every deployment of a pool,
// straight through each deployment's adapter (no health, no failover), and
// reports per deployment per case whether the answer met its expectations,
// with an evidence hash that a pool's equivalence certification can cite.
package eval

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/provider"
)

// Defaults of Options.
const (
	// DefaultTimeout bounds one case on one deployment.
	DefaultTimeout = 60 * time.Second
	// DefaultMaxAnswerBytes bounds one answer: a golden case's answer is
	// short; a provider that writes more is broken for this purpose.
	DefaultMaxAnswerBytes = 1 << 20
)

// Options configure a run. Zero fields take the defaults noted.
type Options struct {
	// Registry finds each deployment's adapter. Required.
	Registry *provider.Registry
	// Getenv resolves credential environment variables. Nil: os.Getenv.
	Getenv func(string) string
	// Timeout bounds one case on one deployment, on top of the
	// deployment's own timeouts (connect, first_byte, idle, total).
	// Zero: DefaultTimeout.
	Timeout time.Duration
	// MaxAnswerBytes bounds one answer; past it the case is an error.
	// Zero: DefaultMaxAnswerBytes.
	MaxAnswerBytes int
	// Now is the clock of the report's timestamps and latencies. Nil:
	// time.Now.
	Now func() time.Time
}

// NoPoolError: the config has no pool of that id.
type NoPoolError struct {
	Pool  string
	Known []string
}

func (e *NoPoolError) Error() string {
	return fmt.Sprintf("no pool %q in the config (its pools: %s)", e.Pool, strings.Join(e.Known, ", "))
}

// Pool finds a pool of snap and its deployments, in pool order.
func Pool(snap *catalog.Snapshot, id string) (*catalog.Pool, []*catalog.Deployment, error) {
	cfg := snap.Config()
	var known []string
	for i := range cfg.Pools {
		p := &cfg.Pools[i]
		known = append(known, p.ID)
		if p.ID != id {
			continue
		}
		if p.Embeddings() {
			return nil, nil, fmt.Errorf("pool %q serves embeddings: eval compares generations", id)
		}
		deps := make([]*catalog.Deployment, 0, len(p.Deployments))
		for _, did := range p.Deployments {
			d, ok := snap.Deployment(did)
			if !ok { // a built snapshot has every pool's deployments
				return nil, nil, fmt.Errorf("pool %q names an unknown deployment %q", id, did)
			}
			deps = append(deps, d)
		}
		return p, deps, nil
	}
	slices.Sort(known)
	return nil, nil, &NoPoolError{Pool: id, Known: known}
}

// Run runs every case of g against every deployment of pool (deployments
// in parallel, each one's cases in file order) and reports the outcome.
// A deployment that cannot be reached, answers an error or times out is
// reported as such, case by case; Run itself fails only when ctx ends.
func Run(ctx context.Context, pool *catalog.Pool, deps []*catalog.Deployment, g *Golden, o Options) (*Report, error) {
	o.defaults()
	r := &Report{
		Format:  Format,
		Pool:    pool.ID,
		Model:   pool.Model,
		Golden:  GoldenInfo{Path: g.Path, SHA256: g.SHA256, Cases: len(g.Cases)},
		Started: o.Now().UTC(),
	}
	r.Deployments = make([]DeploymentResult, len(deps))
	var wg sync.WaitGroup
	for i, d := range deps {
		dr := newDepRunner(d, &o)
		r.Deployments[i] = DeploymentResult{ID: d.ID, Provider: d.Provider, Model: d.Model}
		wg.Go(func() {
			defer dr.close()
			res := &r.Deployments[i]
			for _, c := range g.Cases {
				if ctx.Err() != nil {
					return
				}
				res.Cases = append(res.Cases, dr.run(ctx, c))
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.DurationMS = ms(o.Now().Sub(r.Started))
	r.summarize()
	r.Evidence = r.ComputeEvidence()
	return r, nil
}

func (o *Options) defaults() {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxAnswerBytes <= 0 {
		o.MaxAnswerBytes = DefaultMaxAnswerBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// depRunner sends cases to one deployment.
type depRunner struct {
	d       *catalog.Deployment
	o       *Options
	adapter provider.Adapter
	target  provider.Target
	// missing says why nothing can be sent ("" when something can),
	// under the error kind missingKind.
	missing, missingKind string
}

func newDepRunner(d *catalog.Deployment, o *Options) *depRunner {
	dr := &depRunner{d: d, o: o}
	a, ok := o.Registry.Get(d.Provider)
	if !ok {
		dr.missing, dr.missingKind = "no adapter for provider kind "+d.Provider, "no_adapter"
	}
	dr.adapter = a
	key := ""
	if d.CredentialEnv != "" {
		if key = o.Getenv(d.CredentialEnv); key == "" {
			dr.missing, dr.missingKind = "credential environment variable "+d.CredentialEnv+" is not set", "no_credential"
		}
	}
	var aws *provider.AWSKeys
	if e := d.AWS; e != nil {
		aws = &provider.AWSKeys{AccessKeyID: o.Getenv(e.AccessKeyEnv), SecretAccessKey: o.Getenv(e.SecretKeyEnv), SessionToken: o.Getenv(e.SessionTokenEnv)}
		if aws.AccessKeyID == "" || aws.SecretAccessKey == "" {
			dr.missing, dr.missingKind = "AWS key environment variables "+e.AccessKeyEnv+"/"+e.SecretKeyEnv+" are not set", "no_credential"
		}
	}
	dr.target = provider.Target{
		Deployment:      d.ID,
		BaseURL:         d.BaseURL,
		Model:           d.Model,
		APIKey:          key,
		AWS:             aws,
		Region:          d.Region,
		MaxOutputTokens: d.MaxOutputTokens,
		HTTP:            newClient(d),
	}
	return dr
}

func (dr *depRunner) close() { dr.target.HTTP.CloseIdleConnections() }

// maxHeaderBytes bounds a provider's response headers, as the gateway does.
const maxHeaderBytes = 256 << 10

// newClient is the deployment's HTTP client: its connect bound, bounded
// headers, and no redirects (following one would send the credential and
// the prompt where the provider said).
func newClient(d *catalog.Deployment) *http.Client {
	connect := d.Timeouts.Connect.D()
	if connect <= 0 {
		connect = catalog.DefaultConnectTimeout
	}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                  http.ProxyFromEnvironment,
			DialContext:            (&net.Dialer{Timeout: connect}).DialContext,
			TLSHandshakeTimeout:    connect,
			ForceAttemptHTTP2:      true,
			MaxResponseHeaderBytes: maxHeaderBytes,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// run runs one case and judges its answer.
func (dr *depRunner) run(ctx context.Context, c *Case) CaseResult {
	res := CaseResult{Case: c.ID}
	if dr.missing != "" {
		res.Status, res.Misses = StatusError, []Miss{{Check: dr.missingKind, Why: dr.missing}}
		return res
	}
	if why := dr.unsupported(c.req); why != "" {
		res.Status, res.Misses = StatusUnsupported, []Miss{{Check: "unsupported", Why: why}}
		return res
	}
	start := dr.o.Now()
	a, err := dr.attempt(ctx, c.req)
	res.LatencyMS = ms(dr.o.Now().Sub(start))
	if err != nil {
		res.Status, res.Misses = StatusError, []Miss{errorMiss(err)}
		return res
	}
	res.Finish, res.OutputTokens = a.Finish(), a.Usage.OutputTokens
	if res.Misses = c.Check(a); len(res.Misses) > 0 {
		res.Status = StatusFail
	} else {
		res.Status = StatusPass
	}
	return res
}

// unsupported says why the deployment cannot take req as the gateway
// would send it ("" when it can): such a rung is skipped by routing.
func (dr *depRunner) unsupported(req *canonical.Request) string {
	if ch, ok := dr.adapter.(provider.Checker); ok {
		if err := ch.Check(req); err != nil {
			return "the " + dr.d.Provider + " adapter cannot send this request: " + err.Error()
		}
	}
	json := req.ResponseFormat != nil && req.ResponseFormat.Type != canonical.FormatText
	if lack := dr.d.Capabilities.Lacks(len(req.Tools) > 0, req.HasImages(), json); lack != "" {
		return "the deployment declares capabilities." + lack + ": false"
	}
	return ""
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
