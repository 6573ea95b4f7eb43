package server

import (
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spillway-gw/spillway/internal/catalog"
	"github.com/spillway-gw/spillway/internal/engine"
	"github.com/spillway-gw/spillway/internal/provider"
)

// runtime is what a snapshot needs at request time: each deployment's
// adapter, HTTP client and resolved credential. It is rebuilt when the
// snapshot changes, and immutable after.
type runtime struct {
	snap  *catalog.Snapshot
	rungs map[string]*rungTemplate
	// routing is the exercise turns and quota windows (routing.go).
	routing *routing
}

type rungTemplate struct {
	dep     *catalog.Deployment
	adapter provider.Adapter
	target  provider.Target
	// missing names a problem that makes the rung ineligible ("" if none).
	missing string
}

// runtime returns the runtime of the current snapshot, building it once
// per snapshot.
func (s *Server) runtime() *runtime {
	snap := s.opts.Catalog.Load()
	if rt := s.rt.Load(); rt != nil && rt.snap == snap {
		return rt
	}
	s.rtMu.Lock()
	defer s.rtMu.Unlock()
	if rt := s.rt.Load(); rt != nil && rt.snap == snap {
		return rt
	}
	rt := s.buildRuntime(snap, s.rt.Load())
	s.syncHealth(snap)
	s.rt.Store(rt)
	return rt
}

func (s *Server) buildRuntime(snap *catalog.Snapshot, old *runtime) *runtime {
	getenv := s.opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	rt := &runtime{snap: snap, rungs: map[string]*rungTemplate{}, routing: buildRouting(snap, old, s.opts.Now)}
	for _, d := range snap.Deployments() {
		tpl := &rungTemplate{dep: d}
		a, ok := s.opts.Registry.Get(d.Provider)
		if !ok {
			tpl.missing = "no adapter for provider kind " + d.Provider
		}
		tpl.adapter = a
		key := ""
		if d.CredentialEnv != "" {
			key = getenv(d.CredentialEnv)
			if key == "" {
				tpl.missing = "credential environment variable " + d.CredentialEnv + " is not set"
			}
		}
		var aws *provider.AWSKeys
		if a := d.AWS; a != nil {
			aws = &provider.AWSKeys{AccessKeyID: getenv(a.AccessKeyEnv), SecretAccessKey: getenv(a.SecretKeyEnv), SessionToken: getenv(a.SessionTokenEnv)}
			if aws.AccessKeyID == "" || aws.SecretAccessKey == "" {
				tpl.missing = "AWS key environment variables " + a.AccessKeyEnv + "/" + a.SecretKeyEnv + " are not set"
			}
		}
		// Keep the old client (and its warm connections) when nothing that
		// shapes it changed.
		var client *http.Client
		if old != nil {
			if o, ok := old.rungs[d.ID]; ok && o.dep.BaseURL == d.BaseURL && o.dep.Timeouts.Connect == d.Timeouts.Connect {
				client = o.target.HTTP
			}
		}
		if client == nil {
			client = s.newClient(d)
		}
		tpl.target = provider.Target{
			Deployment:      d.ID,
			BaseURL:         d.BaseURL,
			Model:           d.Model,
			APIKey:          key,
			AWS:             aws,
			Region:          d.Region,
			MaxOutputTokens: d.MaxOutputTokens,
			HTTP:            client,
		}
		if tpl.missing != "" {
			s.opts.Log.Warn("deployment not routable", "deployment", d.ID, "reason", tpl.missing)
		}
		rt.rungs[d.ID] = tpl
	}
	return rt
}

// newClient builds a deployment's HTTP client: its own connection pool with
// the deployment's connect bound. Response deadlines are the engine's.
func (s *Server) newClient(d *catalog.Deployment) *http.Client {
	connect := d.Timeouts.Connect.D()
	if connect <= 0 {
		connect = 5 * time.Second
	}
	var rt http.RoundTripper = &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   connect,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   512,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
		// Every stream in flight holds its connection's buffers for minutes;
		// the stream reader has its own, so the transport's can be small.
		ReadBufferSize:  2 << 10,
		WriteBufferSize: 2 << 10,
		// A provider's headers are a few KiB; Go's default bound (10 MiB)
		// would let a hostile one pin that much per attempt, outside the
		// answer memory bound. Past this, the attempt is a provider failure.
		MaxResponseHeaderBytes: maxProviderHeaderBytes,
	}
	if s.opts.Transport != nil {
		rt = s.opts.Transport(d, rt)
	}
	return &http.Client{Transport: rt, CheckRedirect: noRedirects}
}

// maxProviderHeaderBytes bounds a provider's response headers.
const maxProviderHeaderBytes = 256 << 10

// noRedirects never follows a provider's redirect: following one would
// send the deployment's credential and the prompt to whatever host the
// provider named. The 3xx is the answer, and a provider failure.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// plan turns the kept deployments into engine rungs.
func (rt *runtime) plan(kept []*catalog.Deployment, p *engine.Plan, forced bool) {
	p.Rungs = p.Rungs[:0]
	for _, d := range kept {
		tpl := rt.rungs[d.ID]
		p.Rungs = append(p.Rungs, engine.Rung{Deployment: d, Adapter: tpl.adapter, Target: tpl.target, Forced: forced})
	}
}
