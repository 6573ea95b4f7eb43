package catalog

// This file holds three opt-in route behaviours (a fallback pool of another
// exact model, continuous exercise of secondary rungs, priority shedding)
// and what they read of deployments (a provisioned quota) and keys (a
// priority).

// RouteFallback names a pool of a different exact model that serves a
// route's requests once every rung of its own pool has failed or been
// dropped. Zero (the default): no fallback, and no request of the route is
// ever served by another model.
type RouteFallback struct {
	// Pool is the fallback pool's id: a pool of a different exact model,
	// sharing no deployment with the route's own pool.
	Pool string `yaml:"pool,omitempty" json:"pool,omitempty"`
	// AllowModelChange must be true whenever Pool is set: serving another
	// model is never implied. Default false.
	AllowModelChange bool `yaml:"allow_model_change,omitempty" json:"allow_model_change,omitempty"`
}

// Set reports whether a fallback is written.
func (f RouteFallback) Set() bool { return f.Pool != "" || f.AllowModelChange }

// Shed refuses lower-priority requests while the rung a request would go
// to is near its provisioned quota, so that the protected classes keep it.
// Zero (the default): nothing is shed.
type Shed struct {
	// At is the share of a rung's quota (0 < at ≤ 1) past which requests
	// below Below are refused. Required when shed is written.
	At float64 `yaml:"at,omitempty" json:"at,omitempty"`
	// Below is the lowest protected priority: requests of a lower one are
	// shed. Default "high" (normal and low are shed).
	Below string `yaml:"below,omitempty" json:"below,omitempty"`
}

// On reports whether shedding is configured.
func (s Shed) On() bool { return s.At > 0 }

// Quota is a deployment's provisioned rate at its provider. Zero fields
// mean no limit of that kind; a zero Quota declares none.
type Quota struct {
	// RPM is requests per minute.
	RPM int `yaml:"rpm,omitempty" json:"rpm,omitempty"`
	// TPM is tokens per minute (prompt plus max_tokens, as providers'
	// limiters count them at dispatch).
	TPM int `yaml:"tpm,omitempty" json:"tpm,omitempty"`
}

// Declared reports whether the quota limits anything.
func (q Quota) Declared() bool { return q.RPM > 0 || q.TPM > 0 }

// Bounds on the route options.
const (
	// MaxExercise is the largest share of a route's traffic that
	// exercise may send to secondary rungs.
	MaxExercise = 0.2
	// DefaultShedBelow is Shed.Below's default.
	DefaultShedBelow = "high"
	// DefaultPriorityHeader is Routing.PriorityHeader's default.
	DefaultPriorityHeader = "X-Spillway-Priority"
)

// Priority orders requests for shedding: a higher one is shed later.
// The zero value is no priority (a value not parsed).
type Priority int8

// The priorities, lowest first.
const (
	PriorityLow Priority = iota + 1
	PriorityNormal
	PriorityHigh
	PriorityCritical
)

// PriorityNames lists the priorities' names, lowest first.
var PriorityNames = [...]string{"low", "normal", "high", "critical"}

// ParsePriority reads a priority's name; "" is normal (a key's and a
// request's default). ok is false for any other unknown name.
func ParsePriority(s string) (p Priority, ok bool) {
	if s == "" {
		return PriorityNormal, true
	}
	for i, n := range PriorityNames {
		if s == n {
			return Priority(i + 1), true
		}
	}
	return 0, false
}

// String is the priority's name.
func (p Priority) String() string {
	if p < PriorityLow || p > PriorityCritical {
		return "none"
	}
	return PriorityNames[p-1]
}

// ModelOf is the exact model deployment d serves on route rr: the fallback
// pool's model for a fallback rung, else the route's pool's.
func (rr *ResolvedRoute) ModelOf(d *Deployment) string {
	if rr.Fallback != nil {
		for _, f := range rr.FallbackDeployments {
			if f == d {
				return rr.Fallback.Model
			}
		}
	}
	return rr.Pool.Model
}

// ModelOfID is ModelOf by deployment id.
func (rr *ResolvedRoute) ModelOfID(id string) string {
	if rr.Fallback != nil {
		for _, f := range rr.FallbackDeployments {
			if f.ID == id {
				return rr.Fallback.Model
			}
		}
	}
	return rr.Pool.Model
}

// resolveRouteOptions fills the options of rr from route r: the fallback
// pool (looked up in pools) and its deployments, the exercise share and
// the shedding rule.
func (s *Snapshot) resolveRouteOptions(rr *ResolvedRoute, r *Route, pools map[string]*Pool) {
	rr.Exercise, rr.Shed = r.Exercise, r.Shed
	if rr.Shed.On() {
		rr.ShedBelow, _ = ParsePriority(rr.Shed.Below)
	}
	if r.Fallback.Pool == "" {
		return
	}
	fp := pools[r.Fallback.Pool]
	rr.Fallback = fp
	rr.FallbackDeployments = make([]*Deployment, len(fp.Deployments))
	for i, id := range fp.Deployments {
		rr.FallbackDeployments[i] = s.deployments[id]
	}
}

// applyRouteDefaults fills the route options' defaults.
func (c *Config) applyRouteDefaults() {
	setDefault(&c.Routing.PriorityHeader, DefaultPriorityHeader)
	for i := range c.Routes {
		if sh := &c.Routes[i].Shed; sh.On() {
			setDefault(&sh.Below, DefaultShedBelow)
		}
	}
}
