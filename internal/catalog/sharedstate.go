package catalog

import "time"

// SharedState is where replicas share what each would otherwise keep to
// itself: health transitions, the half-open probe, idempotent answers,
// conversation pins, rate windows and budget holds. It is read at start-up
// only; a reload does not change it. Zero (driver none, the default): every
// replica keeps its own, in memory, exactly as a single replica does.
type SharedState struct {
	// Driver is "none" (the default, also when empty) or "redis".
	Driver string `yaml:"driver,omitempty"`
	// URLEnv names the environment variable holding the Redis URL
	// (redis://[user:password@]host:port/db, or rediss:// for TLS), so the
	// password never sits in the file. Default SPILLWAY_REDIS_URL.
	URLEnv string `yaml:"url_env,omitempty"`
	// KeyPrefix namespaces every key and channel, so several gateways
	// can share one Redis. Default "spillway".
	KeyPrefix string `yaml:"key_prefix,omitempty"`
	// Timeout bounds every call to Redis; a request never waits longer
	// on it. Default 50ms; at most 5s.
	Timeout Duration `yaml:"timeout,omitempty"`
	// RetryEvery is, once a call failed, how often Redis is tried again;
	// until one succeeds every replica uses its own state (the documented
	// fallbacks) without waiting on Redis. Default 1s; 10ms..1m.
	RetryEvery Duration `yaml:"retry_every,omitempty"`
	// ProbeLease bounds the one half-open probe all replicas share: a
	// replica that dies while probing frees it after this. Default 30s;
	// 1s..10m.
	ProbeLease Duration `yaml:"probe_lease,omitempty"`
	// BudgetsWhenDown is what budgets do while Redis is unreachable:
	// "refuse" (the default: fail closed, 503 budget_unavailable for a
	// request under a budget) or "allowance" (each replica may spend its
	// own share, DownAllowance, of each budget's remaining limit).
	BudgetsWhenDown string `yaml:"budgets_when_down,omitempty"`
	// DownAllowance is the share (0..1) of each budget's limit one replica
	// may spend on its own while Redis is down, with budgets_when_down
	// allowance. Default 0.1.
	DownAllowance float64 `yaml:"down_allowance,omitempty"`
	// IdempotencyWhenDown is what a request with an Idempotency-Key does
	// when its key cannot be claimed across replicas (Redis unreachable,
	// or slower than Timeout): "refuse" (the default: fail closed, 503
	// idempotency_unavailable with Retry-After; nothing runs, so a retry
	// of a request that already ran on another replica is never run and
	// billed again) or "local" (the key is owned by this replica alone and
	// the request runs; a retry sent to another replica meanwhile may run
	// again). Requests without a key are unaffected either way.
	IdempotencyWhenDown string `yaml:"idempotency_when_down,omitempty"`
}

// SharedState.Driver, BudgetsWhenDown and IdempotencyWhenDown values.
const (
	SharedNone            = "none"
	SharedRedis           = "redis"
	BudgetsDownRefuse     = "refuse"
	BudgetsDownAllowance  = "allowance"
	IdempotencyDownRefuse = "refuse"
	IdempotencyDownLocal  = "local"
)

// Defaults and bounds of shared state.
const (
	DefaultSharedURLEnv        = "SPILLWAY_REDIS_URL"
	DefaultSharedKeyPrefix     = "spillway"
	DefaultSharedTimeout       = 50 * time.Millisecond
	MaxSharedTimeout           = 5 * time.Second
	DefaultSharedRetryEvery    = time.Second
	DefaultSharedProbeLease    = 30 * time.Second
	DefaultSharedDownAllowance = 0.1
)

// On reports whether replicas share state.
func (s *SharedState) On() bool { return s.Driver != "" && s.Driver != SharedNone }

// applySharedStateDefaults fills the defaults of a shared driver; with
// none the section keeps its zero value, so the served config shows
// nothing for it.
func (c *Config) applySharedStateDefaults() {
	s := &c.SharedState
	if !s.On() {
		return
	}
	setDefault(&s.URLEnv, DefaultSharedURLEnv)
	setDefault(&s.KeyPrefix, DefaultSharedKeyPrefix)
	setDefault(&s.Timeout, Duration(DefaultSharedTimeout))
	setDefault(&s.RetryEvery, Duration(DefaultSharedRetryEvery))
	setDefault(&s.ProbeLease, Duration(DefaultSharedProbeLease))
	setDefault(&s.BudgetsWhenDown, BudgetsDownRefuse)
	setDefault(&s.IdempotencyWhenDown, IdempotencyDownRefuse)
	if s.BudgetsWhenDown == BudgetsDownAllowance {
		setDefault(&s.DownAllowance, DefaultSharedDownAllowance)
	}
}

// validateSharedState checks the driver, the URL's variable name and the
// bounds.
func (c *Config) validateSharedState(p *problems) {
	s := &c.SharedState
	const at = "shared_state"
	switch s.Driver {
	case "", SharedNone, SharedRedis:
	default:
		p.add(at+".driver", 0, "%q is not none or redis", s.Driver)
	}
	if s.URLEnv != "" && !envVarRE.MatchString(s.URLEnv) {
		p.add(at+".url_env", 0, "%s is not an environment variable name: put the NAME of the variable holding the Redis URL here, never the URL", notShown(s.URLEnv))
	}
	if s.KeyPrefix != "" && !idRE.MatchString(s.KeyPrefix) {
		p.add(at+".key_prefix", 0, "%q must be lower-case letters, digits, '.', '_' or '-'", s.KeyPrefix)
	}
	if d := s.Timeout.D(); d < 0 || d > MaxSharedTimeout {
		p.add(at+".timeout", 0, "%s is outside 1ms..5s", d)
	} else if d > 0 && d < time.Millisecond {
		p.add(at+".timeout", 0, "%s is outside 1ms..5s", d)
	}
	if d := s.RetryEvery.D(); d != 0 && (d < 10*time.Millisecond || d > time.Minute) {
		p.add(at+".retry_every", 0, "%s is outside 10ms..1m", d)
	}
	if d := s.ProbeLease.D(); d != 0 && (d < time.Second || d > 10*time.Minute) {
		p.add(at+".probe_lease", 0, "%s is outside 1s..10m", d)
	}
	switch s.BudgetsWhenDown {
	case "", BudgetsDownRefuse, BudgetsDownAllowance:
	default:
		p.add(at+".budgets_when_down", 0, "%q is not refuse or allowance", s.BudgetsWhenDown)
	}
	switch s.IdempotencyWhenDown {
	case "", IdempotencyDownRefuse, IdempotencyDownLocal:
	default:
		p.add(at+".idempotency_when_down", 0, "%q is not refuse or local", s.IdempotencyWhenDown)
	}
	if a := s.DownAllowance; !(a >= 0 && a <= 1) {
		p.add(at+".down_allowance", 0, "%v is outside 0..1 (the share of each budget one replica may spend while Redis is down)", a)
	}
}

// sharedStateWarnings warns about shared-state settings that do nothing.
func (c *Config) sharedStateWarnings(p *problems) {
	s := &c.SharedState
	if !s.On() && (s.URLEnv != "" || s.BudgetsWhenDown != "" || s.IdempotencyWhenDown != "" || s.Timeout != 0) {
		p.add("shared_state", 0, "set, but the driver is none: every replica keeps its own state (driver: redis shares it)")
	}
	if s.On() && s.BudgetsWhenDown != BudgetsDownAllowance && s.DownAllowance != 0 {
		p.add("shared_state.down_allowance", 0, "set, but budgets_when_down is refuse: no replica spends while Redis is down")
	}
}

// SharedStateURL is the Redis URL from the variable shared_state.url_env,
// or a problem on that field's line when it is unset or empty. "" and no
// problem with driver none.
func (c *Config) SharedStateURL(file string, lookupEnv func(string) (string, bool)) (string, Problems) {
	s := &c.SharedState
	if !s.On() {
		return "", nil
	}
	return c.fromEnv(file, "shared_state.url_env", s.URLEnv, "the shared state's Redis URL", lookupEnv)
}
