package catalog

import (
	"crypto/tls"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spillway-gw/spillway/internal/tlscert"
)

// KnownKinds lists the provider kinds a deployment may name, sorted.
func KnownKinds() []string {
	return []string{KindAnthropic, KindBedrock, KindGemini, KindOpenAI}
}

var (
	idRE     = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)
	envVarRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// problems collects Problems for one file, finding each field's line in
// the decoded document and falling back to its item's line.
type problems struct {
	file  string
	lines map[string]int
	ps    Problems
}

func (p *problems) add(field string, itemLine int, format string, args ...any) {
	line := itemLine
	// A field left out has no line of its own: point at the nearest
	// enclosing key that was written, e.g. the "equivalence:" key for a
	// missing equivalence.by.
	for f := field; f != ""; f = parentPath(f) {
		if l, ok := p.lines[f]; ok {
			line = l
			break
		}
	}
	p.ps = append(p.ps, Problem{File: p.file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)})
}

// Validate returns every reason the config must be refused; nil means it
// may be served. It expects ApplyDefaults to have run (Load, Parse and
// Build do that); it reads but never changes c.
func (c *Config) Validate(file string) Problems {
	p := &problems{file: file, lines: c.lines}
	c.validateServer(p)
	c.validateTLS(p)
	c.validateCORS(p)
	deps := c.validateDeployments(p)
	pools := c.validatePools(p, deps)
	c.validateRoutes(p, pools)
	c.validateRouteOptions(p)
	c.validateSticky(p)
	c.validateHedges(p)
	c.validateQuality(p)
	c.validateSharedState(p)
	c.validateTelemetry(p)
	c.validateLog(p)
	p.ps.sortByLine()
	return p.ps
}

func (c *Config) validateServer(p *problems) {
	c.validateLedger(p)
	if c.Idempotency.MaxEntries < 0 || c.Idempotency.MaxBytes < 0 || c.Idempotency.TTL < 0 {
		p.add("idempotency", 0, "limits must not be negative")
	}
	s := &c.Server
	if s.MaxBodyBytes < 0 {
		p.add("server.max_body_bytes", 0, "must not be negative")
	}
	switch s.MetricsAuth {
	case MetricsAuthLoopback, MetricsAuthAdmin, MetricsAuthNone:
	default:
		p.add("server.metrics_auth", 0, "%q is not loopback, admin or none", s.MetricsAuth)
	}
	for _, f := range []struct {
		name string
		d    Duration
	}{{"read_header_timeout", s.ReadHeaderTimeout}, {"idle_timeout", s.IdleTimeout}, {"shutdown_grace", s.ShutdownGrace}} {
		if f.d < 0 {
			p.add("server."+f.name, 0, "must not be negative")
		}
	}
}

// validateTLS checks that server.tls names both files or neither, and that
// they load as a certificate and its key: a gateway that cannot serve its
// certificate must not start, nor take a reload that breaks it.
func (c *Config) validateTLS(p *problems) {
	t := c.Server.TLS
	switch {
	case !t.Enabled():
		return
	case t.CertFile == "":
		p.add("server.tls.cert_file", 0, "required with key_file: the certificate chain (PEM) to serve HTTPS with")
		return
	case t.KeyFile == "":
		p.add("server.tls.key_file", 0, "required with cert_file: the certificate's private key (PEM)")
		return
	}
	cert, cerr := tlscert.ReadFile(t.CertFile)
	if cerr != nil {
		p.add("server.tls.cert_file", 0, "cannot read %s: %s", t.CertFile, readError(cerr))
	}
	key, kerr := tlscert.ReadFile(t.KeyFile)
	if kerr != nil {
		p.add("server.tls.key_file", 0, "cannot read %s: %s", t.KeyFile, readError(kerr))
	}
	if cerr == nil && kerr == nil {
		if _, err := tls.X509KeyPair(cert, key); err != nil {
			p.add("server.tls", 0, "%s and %s are not a certificate and its key: %v", t.CertFile, t.KeyFile, err)
		}
	}
}

// validateCORS checks that each allowed origin is one a browser sends, and
// that "*" is alone and without credentials (browsers refuse that pair).
func (c *Config) validateCORS(p *problems) {
	cs := c.Server.CORS
	at := "server.cors.allowed_origins"
	for i, o := range cs.AllowedOrigins {
		item := at + "[" + strconv.Itoa(i) + "]"
		if o == "*" {
			if cs.AllowCredentials {
				p.add(item, 0, "\"*\" cannot be used with allow_credentials: true (browsers refuse it); list the origins")
			}
			if len(cs.AllowedOrigins) > 1 {
				p.add(item, 0, "\"*\" allows every origin: list it alone, or list origins without it")
			}
			continue
		}
		if msg := checkOrigin(o); msg != "" {
			p.add(item, 0, "%s", msg)
		}
	}
}

// checkOrigin says what is wrong with o as an allowed origin, or "".
func checkOrigin(o string) string {
	if o == "" {
		return "empty origin"
	}
	if strings.EqualFold(o, "null") {
		return "the \"null\" origin is what sandboxed frames and local files send: allowing it allows any of them"
	}
	u, err := url.Parse(o)
	switch {
	case err != nil || u.Scheme == "" || u.Host == "" || u.Opaque != "":
		return fmt.Sprintf("%q is not an origin: write scheme://host[:port], e.g. https://app.example.com", o)
	case strings.Contains(u.Host, "*"):
		return fmt.Sprintf("%q: wildcards in a host are not supported; list each origin, or \"*\" alone", o)
	case u.User != nil || u.Path != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return fmt.Sprintf("%q is not an origin: an origin has no path, query or credentials (write %s://%s)", o, u.Scheme, u.Host)
	}
	return ""
}

// validateDeployments checks each deployment and returns the line of
// each valid-looking id, for pools to resolve against.
func (c *Config) validateDeployments(p *problems) map[string]int {
	ids := map[string]int{}
	for i := range c.Deployments {
		d := &c.Deployments[i]
		at := "deployments[" + strconv.Itoa(i) + "]"
		f := func(name string) string { return at + "." + name }
		switch {
		case d.ID == "":
			p.add(f("id"), d.Line, "required")
		case !idRE.MatchString(d.ID):
			p.add(f("id"), d.Line, "%q must match [a-z0-9][a-z0-9._-]*", d.ID)
		}
		if d.ID != "" {
			if first, dup := ids[d.ID]; dup {
				p.add(f("id"), d.Line, "duplicate deployment id %q%s", d.ID, firstAt(first))
			} else {
				ids[d.ID] = d.Line
			}
		}
		switch {
		case d.Provider == "":
			p.add(f("provider"), d.Line, "required (one of %s)", strings.Join(KnownKinds(), ", "))
		case !slices.Contains(KnownKinds(), d.Provider):
			p.add(f("provider"), d.Line, "unknown provider kind %q (known: %s)", d.Provider, strings.Join(KnownKinds(), ", "))
		}
		if msg := checkBaseURL(d.BaseURL); msg != "" {
			p.add(f("base_url"), d.Line, "%s", msg)
		}
		if d.Model == "" {
			p.add(f("model"), d.Line, "required (the provider's own model id)")
		}
		if a := d.AWS; a != nil {
			if d.Provider != KindBedrock {
				p.add(f("aws"), d.Line, "AWS keys sign Bedrock requests only; provider is %q", d.Provider)
			}
			if d.CredentialEnv != "" {
				p.add(f("aws"), d.Line, "give either credential_env (a Bedrock API key) or aws (SigV4 keys), not both")
			}
			if d.Region == "" {
				p.add(f("region"), d.Line, "required to sign Bedrock requests with AWS keys")
			}
			for _, e := range []struct{ name, v string }{{"access_key_env", a.AccessKeyEnv}, {"secret_key_env", a.SecretKeyEnv}, {"session_token_env", a.SessionTokenEnv}} {
				if e.v != "" && !envVarRE.MatchString(e.v) {
					p.add(f("aws."+e.name), d.Line, "%s is not an environment variable name: put the NAME of the variable holding the key here, never the key", notShown(e.v))
				}
			}
		}
		if d.CredentialEnv != "" && !envVarRE.MatchString(d.CredentialEnv) {
			p.add(f("credential_env"), d.Line, "%s is not an environment variable name: put the NAME of the variable holding the secret here, never the secret", notShown(d.CredentialEnv))
		}
		if d.Funding != "" && d.Funding != FundingHost && d.Funding != FundingBYOK {
			p.add(f("funding"), d.Line, "%q must be %q or %q", d.Funding, FundingHost, FundingBYOK)
		}
		if pr := d.Price; pr != nil {
			for _, r := range []struct {
				name string
				v    float64
			}{{"input_per_mtok", pr.InputPerMTok}, {"output_per_mtok", pr.OutputPerMTok}, {"cached_input_per_mtok", pr.CachedInputPerMTok}, {"cache_write_per_mtok", pr.CacheWritePerMTok}} {
				if !(r.v >= 0) || math.IsInf(r.v, 0) {
					p.add(f("price."+r.name), d.Line, "must be a finite number ≥ 0, got %v", r.v)
				}
			}
		}
		if d.ContextWindow < 0 {
			p.add(f("context_window"), d.Line, "must not be negative")
		}
		if d.MaxOutputTokens < 0 {
			p.add(f("max_output_tokens"), d.Line, "must not be negative")
		}
		if d.ContextWindow > 0 && d.MaxOutputTokens > d.ContextWindow {
			p.add(f("max_output_tokens"), d.Line, "%d exceeds context_window %d", d.MaxOutputTokens, d.ContextWindow)
		}
		c.validateTimeouts(p, &d.Timeouts, at+".timeouts", d.Line)
		validateHealth(p, &d.Health, at+".health", d.Line)
	}
	return ids
}

func (c *Config) validateTimeouts(p *problems, t *Timeouts, at string, line int) {
	for _, x := range []struct {
		name string
		d    Duration
	}{{"connect", t.Connect}, {"first_byte", t.FirstByte}, {"idle", t.Idle}, {"total", t.Total}} {
		if x.d < 0 {
			p.add(at+"."+x.name, line, "must not be negative")
		}
	}
	total := t.Total
	if total == 0 {
		total = Duration(DefaultTotalTimeout)
	}
	for _, x := range []struct {
		name string
		d    Duration
	}{{"connect", t.Connect}, {"first_byte", t.FirstByte}, {"idle", t.Idle}} {
		if x.d > total {
			p.add(at+"."+x.name, line, "%s exceeds total %s", x.d, total)
		}
	}
}

func validateHealth(p *problems, h *HealthPolicy, at string, line int) {
	for _, x := range []struct {
		name string
		neg  bool
	}{
		{"failure_threshold", h.FailureThreshold < 0}, {"recovery_successes", h.RecoverySuccesses < 0},
		{"min_samples", h.MinSamples < 0}, {"open_for", h.OpenFor < 0}, {"throttle_for", h.ThrottleFor < 0},
		{"max_throttle", h.MaxThrottle < 0}, {"suppress_for", h.SuppressFor < 0}, {"window", h.Window < 0},
		{"max_first_token_p95", h.MaxFirstTokenP95 < 0}, {"cooldown", h.Cooldown < 0}, {"last_resort_every", h.LastResortEvery < 0},
	} {
		if x.neg {
			p.add(at+"."+x.name, line, "must not be negative")
		}
	}
	if h.MaxErrorRate > 1 || math.IsNaN(h.MaxErrorRate) {
		p.add(at+".max_error_rate", line, "must be at most 1 (a fraction of attempts), or negative to disable")
	}
}

// parentPath strips the last ".key" or "[i]" from a field path.
func parentPath(f string) string {
	i := strings.LastIndexAny(f, ".[")
	if i < 0 {
		return ""
	}
	return f[:i]
}

func firstAt(line int) string {
	if line == 0 {
		return ""
	}
	return fmt.Sprintf(" (first at line %d)", line)
}

func checkBaseURL(s string) string {
	if s == "" {
		return "required, e.g. https://api.anthropic.com"
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Sprintf("%q is not a URL", s)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Sprintf("%q must be an absolute http:// or https:// URL", s)
	case u.Host == "":
		return fmt.Sprintf("%q has no host", s)
	case u.User != nil:
		return fmt.Sprintf("%q carries credentials; use credential_env", u.Redacted())
	case u.RawQuery != "" || u.ForceQuery:
		return fmt.Sprintf("%q must not have a query", s)
	case u.Fragment != "":
		return fmt.Sprintf("%q must not have a fragment", s)
	}
	return ""
}

// validatePools checks each pool and returns the line of each pool id.
func (c *Config) validatePools(p *problems, deps map[string]int) map[string]int {
	ids := map[string]int{}
	for i := range c.Pools {
		pl := &c.Pools[i]
		at := "pools[" + strconv.Itoa(i) + "]"
		f := func(name string) string { return at + "." + name }
		if pl.ID == "" {
			p.add(f("id"), pl.Line, "required")
		} else if first, dup := ids[pl.ID]; dup {
			p.add(f("id"), pl.Line, "duplicate pool id %q%s", pl.ID, firstAt(first))
		} else {
			ids[pl.ID] = pl.Line
		}
		if pl.Model == "" {
			p.add(f("model"), pl.Line, "required (the exact model every deployment serves)")
		}
		if len(pl.Deployments) == 0 {
			p.add(f("deployments"), pl.Line, "required: list at least one deployment id")
		}
		switch pl.Kind {
		case "", PoolChat, PoolEmbeddings:
		default:
			p.add(f("kind"), pl.Line, "%q is not a pool kind: use %q (the default) or %q", pl.Kind, PoolChat, PoolEmbeddings)
		}
		seen := map[string]int{}
		for j, id := range pl.Deployments {
			item := f("deployments") + "[" + strconv.Itoa(j) + "]"
			line := p.lines[item]
			switch _, known := deps[id]; {
			case id == "":
				p.add(item, pl.Line, "empty deployment id")
			case !known:
				p.add(item, pl.Line, "unknown deployment %q", id)
			}
			if first, dup := seen[id]; dup && id != "" {
				if first == line {
					first = 0 // same line (a [a, b, a] list): the line says nothing
				}
				p.add(item, pl.Line, "deployment %q is listed twice in the pool%s: a repeat would be attempted twice", id, firstAt(first))
			} else if !dup {
				seen[id] = line
			}
		}
		// A certification is required for more than one deployment, and
		// checked whenever written: a malformed one certifies nothing.
		if e := pl.Equivalence; e == nil {
			if len(pl.Deployments) > 1 {
				p.add(f("equivalence"), pl.Line, "a pool of %d deployments needs an equivalence certification (by, date, evidence) that they serve the same exact model", len(pl.Deployments))
			}
		} else {
			if strings.TrimSpace(e.By) == "" {
				p.add(f("equivalence.by"), pl.Line, "required: who certified the pool")
			}
			if e.Date == "" {
				p.add(f("equivalence.date"), pl.Line, "required: when, as YYYY-MM-DD")
			} else if _, err := time.Parse(time.DateOnly, e.Date); err != nil {
				p.add(f("equivalence.date"), pl.Line, "%q is not a date written YYYY-MM-DD", e.Date)
			}
			if strings.TrimSpace(e.Evidence) == "" {
				p.add(f("equivalence.evidence"), pl.Line, "required: a hash or reference to the evidence, e.g. an eval run")
			}
		}
	}
	return ids
}

func (c *Config) validateRoutes(p *problems, pools map[string]int) {
	// For each model: the line of a route with the same rules (a duplicate
	// is never reached), and of a catch-all (no route after it is).
	type key struct {
		model string
		m     RouteMatch
	}
	seen := map[key]int{}
	catchAll := map[string]int{}
	for i := range c.Routes {
		r := &c.Routes[i]
		at := "routes[" + strconv.Itoa(i) + "]"
		m := normMatch(r.Match)
		first, dup := seen[key{r.Model, m}]
		switch {
		case r.Model == "":
			p.add(at+".model", r.Line, "required (the model name callers use)")
		case dup:
			p.add(at+".model", r.Line, "duplicate route %q%s", r.Model, firstAt(first))
		case catchAll[r.Model] > 0:
			p.add(at, r.Line, "never used: the route for %q at line %d matches every request first (put the narrower route before it)", r.Model, catchAll[r.Model])
		default:
			seen[key{r.Model, m}] = max(r.Line, 1)
			if m.Any() {
				catchAll[r.Model] = max(r.Line, 1)
			}
		}
		if r.Pool == "" {
			p.add(at+".pool", r.Line, "required: the route names no pool")
		} else if _, ok := pools[r.Pool]; !ok {
			p.add(at+".pool", r.Line, "unknown pool %q", r.Pool)
		}
	}
	if len(c.Routes) == 0 {
		p.add("routes", 0, "at least one route is required: without one every request is refused")
	}
	for _, h := range []struct{ name, v string }{{"workload_header", c.Routing.WorkloadHeader}, {"residency_header", c.Routing.ResidencyHeader}} {
		if h.v != "" && !headerRE.MatchString(h.v) {
			p.add("routing."+h.name, 0, "%q is not an HTTP header name", h.v)
		}
	}
}

// normMatch writes "*" as empty, so that two spellings of "any" compare
// equal.
func normMatch(m RouteMatch) RouteMatch {
	for _, f := range []*string{&m.Workload, &m.Org, &m.Team, &m.Residency} {
		if *f == "*" {
			*f = ""
		}
	}
	return m
}

// headerRE is an HTTP header name (RFC 9110 token).
var headerRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// Warnings returns what is allowed but probably a mistake: a host-funded
// deployment without a price (never routed: price_unknown), a deployment in
// no pool, a pool no route names, a route whose public name differs from
// its pool's exact model. It expects ApplyDefaults to have run.
func (c *Config) Warnings(file string) Problems {
	p := &problems{file: file, lines: c.lines}
	inPool := map[string]bool{}
	for _, pl := range c.Pools {
		for _, id := range pl.Deployments {
			inPool[id] = true
		}
	}
	routed := map[string]bool{}
	for _, r := range c.Routes {
		routed[r.Pool] = true
		routed[r.Fallback.Pool] = true // a fallback pool is used too
	}
	for i := range c.Deployments {
		d := &c.Deployments[i]
		at := "deployments[" + strconv.Itoa(i) + "]"
		if !d.Priced() {
			p.add(at+".price", d.Line, "host-funded deployment %q has no price: it is skipped as price_unknown until priced", d.ID)
		}
		if d.ID != "" && !inPool[d.ID] {
			p.add(at, d.Line, "deployment %q is in no pool: it is never routed", d.ID)
		}
	}
	poolModel := map[string]string{}
	for i := range c.Pools {
		pl := &c.Pools[i]
		poolModel[pl.ID] = pl.Model
		if pl.ID != "" && !routed[pl.ID] {
			p.add("pools["+strconv.Itoa(i)+"]", pl.Line, "no route names pool %q: it is never used", pl.ID)
		}
	}
	for i := range c.Routes {
		r := &c.Routes[i]
		if m, ok := poolModel[r.Pool]; ok && m != "" && r.Model != "" && m != r.Model {
			p.add("routes["+strconv.Itoa(i)+"].model", r.Line, "callers asking for %q are served exact model %q", r.Model, m)
		}
	}
	c.routeOptionWarnings(p)
	c.hedgeWarnings(p)
	c.sharedStateWarnings(p)
	c.ledgerWarnings(p)
	c.telemetryWarnings(p)
	p.ps.sortByLine()
	return p.ps
}

// MissingCredentials warns about each credential_env that lookupEnv (e.g.
// os.LookupEnv) reports unset or empty: requests to that deployment would
// fail authentication. Only `spillway check` asks, since the serving
// process may get its environment elsewhere.
func (c *Config) MissingCredentials(file string, lookupEnv func(string) (string, bool)) Problems {
	p := &problems{file: file, lines: c.lines}
	for i := range c.Deployments {
		d := &c.Deployments[i]
		if d.CredentialEnv == "" || !envVarRE.MatchString(d.CredentialEnv) {
			continue
		}
		at := "deployments[" + strconv.Itoa(i) + "].credential_env"
		switch v, ok := lookupEnv(d.CredentialEnv); {
		case !ok:
			p.add(at, d.Line, "environment variable %s is not set", d.CredentialEnv)
		case v == "":
			p.add(at, d.Line, "environment variable %s is empty", d.CredentialEnv)
		}
	}
	return p.ps
}

// notShown describes a value that may be a secret without showing it.
func notShown(v string) string {
	return "this value (" + strconv.Itoa(len(v)) + " characters, not shown)"
}
