// Package catalog is spillway's configuration model: deployments, exact-model
// pools and routes, decoded strictly from YAML, validated, and built into an
// immutable Snapshot that request handling reads without locks.
package catalog

import (
	"slices"
	"time"
)

// Config is the file as written. Every field documents its default; zero
// means "use the default" unless said otherwise.
type Config struct {
	Server      Server       `yaml:"server"`
	Ledger      Ledger       `yaml:"ledger"`
	Idempotency Idempotency  `yaml:"idempotency"`
	Deployments []Deployment `yaml:"deployments"`
	Pools       []Pool       `yaml:"pools"`
	Routes      []Route      `yaml:"routes"`
	Routing     Routing      `yaml:"routing"`
	// SharedState shares health, limits and idempotency across replicas
	// (none by default); see sharedstate.go.
	SharedState SharedState `yaml:"shared_state,omitempty"`
	// Telemetry exports traces (off by default); see telemetry.go.
	Telemetry Telemetry `yaml:"telemetry,omitempty"`
	// Log samples the access log per outcome (every line by default);
	// see logging.go.
	Log Log `yaml:"log,omitempty"`

	// lines maps a field path ("deployments[2].base_url") to the line it was
	// written on, so that validation can point at it. Set by Load/Parse;
	// nil for a Config built in code. Never modified after decoding.
	lines map[string]int
}

// Server configures the HTTP surface.
type Server struct {
	// Listen is the address to serve on. Default "127.0.0.1:8080".
	Listen string `yaml:"listen"`
	// MaxBodyBytes bounds a request body. Default 8 MiB.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// ReadHeaderTimeout bounds reading request headers. Default 10s.
	ReadHeaderTimeout Duration `yaml:"read_header_timeout"`
	// IdleTimeout closes idle keep-alive connections. Default 120s.
	IdleTimeout Duration `yaml:"idle_timeout"`
	// ShutdownGrace is how long in-flight requests get on shutdown. Default 30s.
	ShutdownGrace Duration `yaml:"shutdown_grace"`
	// BodyTimeout bounds reading a request's body, from the request's
	// start: a caller that announces a body and trickles or withholds it
	// is answered 408 and its connection closed. Default 60s.
	BodyTimeout Duration `yaml:"body_timeout"`
	// Limits bound the lists a request may carry.
	Limits Limits `yaml:"limits"`
	// MaxAnswerMemory bounds the memory that non-streamed answers being
	// assembled and written hold together (counted at three times each
	// answer's bytes past its first 128 KiB, what one costs in heap): a
	// request whose answer would pass it gets 503 gateway_busy. Streams are not counted: they hold one event
	// at a time. Default 256 MiB. Read at start-up.
	MaxAnswerMemory int64 `yaml:"max_answer_memory"`
	// MetricsAuth says who may read /metrics: "loopback" (the default: a
	// scraper on this host needs no credential, others the admin key),
	// "admin" (everyone needs the admin key) or "none" (open).
	MetricsAuth string `yaml:"metrics_auth"`
	// WriteTimeout bounds each write to a caller (one event, or a whole
	// answer): a caller that stops reading is cut off after it, and the
	// provider is not blamed. Default 30s.
	WriteTimeout Duration `yaml:"write_timeout"`
	// TLS makes `spillway serve` answer HTTPS. Zero (the default) serves
	// plain HTTP. Which files is read at start-up; their content is
	// re-read when they change, without a restart.
	TLS TLS `yaml:"tls,omitempty"`
	// CORS lets pages on other origins call the gateway from a browser.
	// Zero (the default) sends no CORS headers. A reload applies at once.
	CORS CORS `yaml:"cors,omitempty"`
}

// TLS names the certificate the gateway serves HTTPS with. Give both files
// or neither. A relative path is relative to the config file's directory.
type TLS struct {
	// CertFile is the certificate chain, PEM, leaf first.
	CertFile string `yaml:"cert_file"`
	// KeyFile is the leaf's private key, PEM.
	KeyFile string `yaml:"key_file"`
}

// Enabled reports whether a certificate is configured.
func (t TLS) Enabled() bool { return t.CertFile != "" || t.KeyFile != "" }

// CORS answers browsers' cross-origin checks for the listed origins.
type CORS struct {
	// AllowedOrigins are the origins, "scheme://host[:port]" as a browser
	// sends them, whose pages may call the gateway; ["*"] allows any
	// origin (only without AllowCredentials). Empty (the default): CORS
	// is off, and a request from another origin's page is refused by the
	// browser. Compared without regard to case.
	AllowedOrigins []string `yaml:"allowed_origins"`
	// AllowCredentials lets pages send cookies and TLS client
	// certificates (Access-Control-Allow-Credentials). The API keys the
	// SDKs send in headers do not need it. Default false.
	AllowCredentials bool `yaml:"allow_credentials"`
	// MaxAge is how long a browser may reuse a preflight answer. Default
	// 10m (zero); browsers cap it (Chrome at 2h, Firefox at 24h).
	MaxAge Duration `yaml:"max_age"`
}

// DefaultCORSMaxAge is CORS.MaxAge's default.
const DefaultCORSMaxAge = 10 * time.Minute

// server.metrics_auth values.
const (
	MetricsAuthLoopback = "loopback"
	MetricsAuthAdmin    = "admin"
	MetricsAuthNone     = "none"
)

// Limits bound the lists of one request. Validation is linear in each
// (maps, not nested scans); the bounds keep a hostile request's work and
// memory small. Zero means the default. A reload applies at once.
type Limits struct {
	// MaxMessages bounds the conversation. Default 10000.
	MaxMessages int `yaml:"max_messages"`
	// MaxParts bounds the content parts of one message. Default 1000.
	MaxParts int `yaml:"max_parts"`
	// MaxTools bounds the declared tools. Default 128 (OpenAI's bound).
	MaxTools int `yaml:"max_tools"`
	// MaxToolCalls bounds the tool calls of one assistant message. Default 128.
	MaxToolCalls int `yaml:"max_tool_calls"`
	// MaxStopSequences bounds the stop sequences. Default 16.
	MaxStopSequences int `yaml:"max_stop_sequences"`
}

// Ledger configures where money and identity are recorded. It is read at
// start-up only; a reload does not move the ledger.
type Ledger struct {
	// Driver is "sqlite" (default: embedded, no server needed) or
	// "postgres" (one database every replica shares; see ledger.go).
	Driver string `yaml:"driver"`
	// Path is the SQLite file. Default "spillway.db" (relative to the
	// working directory). With postgres it names the replica's local
	// journal only (Path.journal.N), which holds settlements until the
	// database has them.
	Path string `yaml:"path"`
	// DSNEnv names the environment variable holding the PostgreSQL DSN
	// (postgres://user:password@host:5432/db?sslmode=verify-full, or
	// key=value pairs), so the password never sits in the file. Only the
	// postgres driver reads it; default SPILLWAY_LEDGER_DSN.
	DSNEnv string `yaml:"dsn_env,omitempty"`
	// MinFreeBytes: with less free space than this on the ledger's file
	// system, billable requests are refused (503 ledger_unavailable)
	// before a write can fail. Default 32 MiB; -1 turns the check off.
	MinFreeBytes int64 `yaml:"min_free_bytes"`
	// Retention is how long raw request, attempt and reservation rows
	// are kept ("90d", or a Go duration of at least 24h), in whole UTC
	// days; older ones are pruned in the background in small batches.
	// Daily usage aggregates and spend totals are kept for good, so usage
	// over whole days and budgets are unchanged by pruning. Zero (the
	// default, also "forever"): raw rows are kept forever.
	Retention Retention `yaml:"retention,omitempty"`
}

// Idempotency bounds the in-memory Idempotency-Key store.
type Idempotency struct {
	// MaxEntries is the most keys remembered. Default 10000.
	MaxEntries int `yaml:"max_entries"`
	// MaxBytes bounds the recorded answers kept for replay. Default 64 MiB.
	MaxBytes int64 `yaml:"max_bytes"`
	// TTL is how long a completed key is remembered. Default 24h.
	TTL Duration `yaml:"ttl"`
}

// Provider kinds spillway has adapters for.
const (
	KindOpenAI    = "openai"    // OpenAI and OpenAI-compatible (OpenRouter, vLLM, ...)
	KindAnthropic = "anthropic" // Anthropic Messages
	KindBedrock   = "bedrock"   // AWS Bedrock Converse
	KindGemini    = "gemini"    // Google Gemini generateContent
)

// Funding says who pays the provider for a deployment.
const (
	FundingHost = "host" // the gateway operator pays: must be priced
	FundingBYOK = "byok" // the caller's own provider key: unpriced, no credit gate
)

// Deployment is one way to reach one exact model.
type Deployment struct {
	// ID names the deployment; unique. Required.
	ID string `yaml:"id"`
	// Provider is the adapter kind: openai, anthropic, bedrock, gemini. Required.
	Provider string `yaml:"provider"`
	// BaseURL is the provider's base URL, e.g. https://api.anthropic.com:
	// absolute http(s), no query; a trailing slash is trimmed (adapters
	// append the versioned path). Required.
	BaseURL string `yaml:"base_url"`
	// Model is the provider's own model id. Required.
	Model string `yaml:"model"`
	// CredentialEnv names the environment variable holding the credential.
	// The secret itself never sits in the file. Empty means no credential
	// (e.g. a local vLLM).
	CredentialEnv string `yaml:"credential_env"`
	// Region is the provider region, when it has one (Bedrock: required
	// for SigV4 signing). Optional.
	Region string `yaml:"region"`
	// AWS names the environment variables of SigV4 keys, for a Bedrock
	// deployment that does not use a Bedrock API key (credential_env).
	// Nil means none.
	AWS *AWSCredentialEnv `yaml:"aws"`
	// Funding is "host" (default) or "byok". Empty means "host".
	Funding string `yaml:"funding"`
	// Price is per million tokens in USD. Nil means unknown: a host-funded
	// deployment without a price is never routed.
	Price *Price `yaml:"price"`
	// ContextWindow is the model's context size in tokens; 0 = unknown.
	// Never negative.
	ContextWindow int `yaml:"context_window"`
	// MaxOutputTokens is the model's output cap at this provider; 0 = unknown.
	// Never negative, and at most ContextWindow when both are set.
	MaxOutputTokens int `yaml:"max_output_tokens"`
	// Timeouts are the silence bounds of one attempt.
	Timeouts Timeouts `yaml:"timeouts"`
	// Health tunes the deployment's health tracking; zero fields take the
	// defaults documented on HealthPolicy.
	Health HealthPolicy `yaml:"health"`
	// Residency is where this deployment keeps data (e.g. "eu"). A
	// request that must stay somewhere is never sent to a deployment
	// elsewhere, or to one that does not say. Empty: unstated.
	Residency string `yaml:"residency,omitempty"`
	// Tenants limits which orgs may use the deployment.
	Tenants TenantPolicy `yaml:"tenants,omitempty"`
	// Capabilities says what the deployment can take beyond what its
	// adapter can express; every one defaults to true.
	Capabilities Capabilities `yaml:"capabilities,omitempty"`
	// Quota is the rate provisioned at the provider, which a route's shed
	// rule protects. Zero: none declared (never shed on this rung).
	Quota Quota `yaml:"quota,omitempty"`

	// Line is the line of the deployment in its file (set by Load).
	Line int `yaml:"-"`
}

// TenantPolicy is a deployment's allow and deny lists of orgs. Deny wins;
// an empty Allow allows every org not denied.
type TenantPolicy struct {
	Allow []string `yaml:"allow,omitempty"`
	Deny  []string `yaml:"deny,omitempty"`
}

// Admits reports whether org may use the deployment.
func (t TenantPolicy) Admits(org string) bool {
	if slices.Contains(t.Deny, org) {
		return false
	}
	return len(t.Allow) == 0 || slices.Contains(t.Allow, org)
}

// Capabilities are what a deployment accepts; nil means yes.
type Capabilities struct {
	Tools    *bool `yaml:"tools,omitempty"`
	Images   *bool `yaml:"images,omitempty"`
	JSONMode *bool `yaml:"json_mode,omitempty"`
}

// Lacks names the first capability req needs and c says no to; "" if none.
func (c Capabilities) Lacks(tools, images, json bool) string {
	switch {
	case tools && c.Tools != nil && !*c.Tools:
		return "tools"
	case images && c.Images != nil && !*c.Images:
		return "images"
	case json && c.JSONMode != nil && !*c.JSONMode:
		return "json_mode"
	}
	return ""
}

// AWSCredentialEnv names the environment variables holding AWS keys.
type AWSCredentialEnv struct {
	// AccessKeyEnv holds the access key id. Default AWS_ACCESS_KEY_ID.
	AccessKeyEnv string `yaml:"access_key_env"`
	// SecretKeyEnv holds the secret key. Default AWS_SECRET_ACCESS_KEY.
	SecretKeyEnv string `yaml:"secret_key_env"`
	// SessionTokenEnv holds a session token, for temporary credentials.
	// Default AWS_SESSION_TOKEN (optional: empty means none).
	SessionTokenEnv string `yaml:"session_token_env"`
}

// Price is USD per million tokens. Every rate is ≥ 0; a zero rate is a
// real price of $0 (e.g. a free tier), except where a default is noted.
type Price struct {
	// InputPerMTok prices uncached input tokens.
	InputPerMTok float64 `yaml:"input_per_mtok"`
	// OutputPerMTok prices output tokens, reasoning included.
	OutputPerMTok float64 `yaml:"output_per_mtok"`
	// CachedInputPerMTok prices prompt-cache reads; 0 = InputPerMTok.
	CachedInputPerMTok float64 `yaml:"cached_input_per_mtok"`
	// CacheWritePerMTok prices prompt-cache writes; 0 = InputPerMTok.
	CacheWritePerMTok float64 `yaml:"cache_write_per_mtok"`
}

// Timeouts bound one attempt's silences.
type Timeouts struct {
	// Connect bounds dialing the provider. Default 5s, or Total if that is
	// shorter. At most Total.
	Connect Duration `yaml:"connect"`
	// FirstByte bounds the wait from dispatch to the provider's first stream
	// event (streaming) so that a provider that accepts and stays silent fails
	// over fast. Default 15s, or Total if that is shorter. At most Total.
	// Non-streaming answers are bounded by Total.
	FirstByte Duration `yaml:"first_byte"`
	// Idle bounds the silence between two stream events. Default 30s, or
	// Total if that is shorter. At most Total.
	Idle Duration `yaml:"idle"`
	// Total bounds the whole attempt. Default 10m.
	//
	// Durations are written "5s", "1.5s", "200ms"; a zero value takes the
	// default and a negative one is refused.
	Total Duration `yaml:"total"`
}

// HealthPolicy tunes how a deployment is taken out of and put back into
// rotation. Zero means the default given on each field.
type HealthPolicy struct {
	// FailureThreshold consecutive operational failures (5xx, 529,
	// timeouts, broken streams) open the circuit. Default 2.
	FailureThreshold int `yaml:"failure_threshold"`
	// OpenFor is how long an open circuit skips the deployment before one
	// half-open probe request. Default 30s.
	OpenFor Duration `yaml:"open_for"`
	// RecoverySuccesses consecutive successful probes close the circuit.
	// Default 1.
	RecoverySuccesses int `yaml:"recovery_successes"`
	// ThrottleFor is the throttle window after a 429 without Retry-After.
	// Default 30s. A provider's Retry-After is honoured, capped by MaxThrottle.
	ThrottleFor Duration `yaml:"throttle_for"`
	// MaxThrottle caps a provider's Retry-After. Default 5m.
	MaxThrottle Duration `yaml:"max_throttle"`
	// SuppressFor is how long a provider credential, credit or binding
	// failure suppresses the deployment before a probe. Default 60s.
	SuppressFor Duration `yaml:"suppress_for"`
	// Window is the rolling window for error rate and first-token p95.
	// Default 60s.
	Window Duration `yaml:"window"`
	// MinSamples is the fewest attempts in the window before the error rate
	// or latency can trip a cooldown. Default 10.
	MinSamples int `yaml:"min_samples"`
	// MaxErrorRate (0..1) above which the deployment cools down. Default
	// 0.5; a negative value disables the check.
	MaxErrorRate float64 `yaml:"max_error_rate"`
	// MaxFirstTokenP95 above which the deployment cools down. Default 0:
	// disabled.
	MaxFirstTokenP95 Duration `yaml:"max_first_token_p95"`
	// Cooldown is how long an error-rate or latency breach skips the
	// deployment before a probe. Default 30s.
	Cooldown Duration `yaml:"cooldown"`
	// LastResortEvery allows one last-resort probe per deployment per
	// interval when every rung of a route is skipped. Default 1s.
	LastResortEvery Duration `yaml:"last_resort_every"`
}

// Pool is an ordered list of deployments serving one exact model.
type Pool struct {
	// ID names the pool; unique. Required.
	ID string `yaml:"id"`
	// Model is the exact model id every deployment serves. Required.
	Model string `yaml:"model"`
	// Deployments are tried in this order. Required, no repeats.
	Deployments []string `yaml:"deployments"`
	// Equivalence is required when the pool has more than one deployment.
	Equivalence *Equivalence `yaml:"equivalence"`
	// Kind is what the pool's model does: "chat" (the default: the
	// generation endpoints) or "embeddings" (POST /v1/embeddings). A
	// request to the wrong kind of model is refused.
	Kind string `yaml:"kind"`
	// Quality sets how the pool's secondaries are compared with its
	// primary (see PoolQuality); zero: the defaults.
	Quality PoolQuality `yaml:"quality,omitempty"`

	// Line is the line of the pool in its file (set by Load).
	Line int `yaml:"-"`
}

// Pool kinds.
const (
	PoolChat       = "chat"
	PoolEmbeddings = "embeddings"
)

// Embeddings reports whether the pool serves embeddings.
func (p *Pool) Embeddings() bool { return p.Kind == PoolEmbeddings }

// Equivalence is an operator's certification that a pool's deployments
// serve the same exact model.
type Equivalence struct {
	// By is who certified. Required.
	By string `yaml:"by"`
	// Date is when, YYYY-MM-DD. Required.
	Date string `yaml:"date"`
	// Evidence is a hash or reference to the evidence (e.g. an eval run).
	// Required. "sha256:<hex>", as spillway eval prints it, names a report
	// that spillway check --evidence-dir verifies.
	Evidence string `yaml:"evidence"`
	// MaxAge is how old the certification may grow before spillway check
	// warns that it is due again: days ("90d") or a Go duration. Zero (the
	// default) means DefaultCertificationMaxAge, 90 days.
	MaxAge Age `yaml:"max_age,omitempty"`
}

// Route maps a public model name to a pool.
type Route struct {
	// Model is the name callers use: a model name or a tier alias
	// ("frontier"). Required. Several routes may share it with different
	// Match rules: the first whose rules all hold serves the request.
	Model string `yaml:"model"`
	// Match narrows the route to some requests; empty fields match any.
	Match RouteMatch `yaml:"match,omitempty"`
	// Pool is the pool id. Required; must name a pool in the file.
	Pool string `yaml:"pool"`
	// Fallback is a pool of another exact model, tried after every rung
	// of Pool, only with allow_model_change: true. Zero: none (no request
	// is ever served by another model).
	Fallback RouteFallback `yaml:"fallback,omitempty"`
	// Exercise is the share (0 to 0.2) of the route's eligible requests
	// (two kept rungs or more) sent to a secondary rung first, in turn,
	// so that failover paths stay warm and measured. Default 0: none.
	Exercise float64 `yaml:"exercise,omitempty"`
	// Shed refuses requests below a priority while the rung they would
	// go to is past a share of its quota. Zero: nothing is shed.
	Shed Shed `yaml:"shed,omitempty"`
	// Sticky pins each conversation to the rung that served it; on by
	// default when the pool has more than one deployment (see Sticky).
	Sticky Sticky `yaml:"sticky,omitempty"`
	// Rank orders the rungs the gates kept: "configured" (the default)
	// keeps the pool's order; "cost_latency" orders them by
	// cache-adjusted cost, then observed first-token latency.
	Rank string `yaml:"rank,omitempty"`
	// Hedge starts the next rung alongside a first attempt that has no
	// first token within a threshold; the first to commit serves. Nil
	// (the default): no hedging.
	Hedge *Hedge `yaml:"hedge,omitempty"`
	// RefusalFailover moves a refusal on to the next rung, holding the
	// answer back while it is refusal alone. Nil (the default): a refusal
	// is the answer.
	RefusalFailover *RefusalFailover `yaml:"refusal_failover,omitempty"`

	// Line is the line of the route in its file (set by Load).
	Line int `yaml:"-"`
}

// RouteMatch is the rules a request must meet for a route to serve it.
// An empty field (or "*") matches anything. All given fields must hold.
type RouteMatch struct {
	// Workload is the request's workload tag (routing.workload_header).
	Workload string `yaml:"workload,omitempty" json:"workload,omitempty"`
	// Org and Team are the calling key's.
	Org  string `yaml:"org,omitempty" json:"org,omitempty"`
	Team string `yaml:"team,omitempty" json:"team,omitempty"`
	// Residency is where the request's data must stay: from the calling
	// key's policy, else the routing.residency_header.
	Residency string `yaml:"residency,omitempty" json:"residency,omitempty"`
}

// Any reports whether the match has no rules.
func (m RouteMatch) Any() bool {
	return wild(m.Workload) && wild(m.Org) && wild(m.Team) && wild(m.Residency)
}

func wild(s string) bool { return s == "" || s == "*" }

// Attributes are what routing knows of a request: its public model, and
// the values match rules and gates read.
type Attributes struct {
	Model     string
	Workload  string
	Org, Team string
	Residency string
}

// Holds reports whether a request with attributes a meets m.
func (m RouteMatch) Holds(a *Attributes) bool {
	return (wild(m.Workload) || m.Workload == a.Workload) && (wild(m.Org) || m.Org == a.Org) &&
		(wild(m.Team) || m.Team == a.Team) && (wild(m.Residency) || m.Residency == a.Residency)
}

// Routing names the request headers routing reads.
type Routing struct {
	// WorkloadHeader carries a request's workload tag. Default
	// X-Spillway-Workload.
	WorkloadHeader string `yaml:"workload_header"`
	// ResidencyHeader carries where a request's data must stay (a key's
	// own residency wins over it). Default X-Spillway-Residency.
	ResidencyHeader string `yaml:"residency_header"`
	// PriorityHeader carries a request's priority (low, normal, high,
	// critical), at most its key's own. Default X-Spillway-Priority.
	PriorityHeader string `yaml:"priority_header"`
	// ConversationHeader carries a caller's conversation id, for sticky
	// routes; without it a conversation is known by its system prompt and
	// first user turn. At most 256 bytes. Default X-Spillway-Conversation.
	ConversationHeader string `yaml:"conversation_header"`
	// StickyCapacity bounds the conversation pins kept, across all routes
	// (the least recently served is evicted first; about 60 bytes each).
	// Default 100000; at most 10,000,000. Read at start-up.
	StickyCapacity int `yaml:"sticky_capacity"`
}

// Duration is a time.Duration written as "1.5s", "200ms", "2m".
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }
