package catalog

import (
	"math"
	"slices"
	"strconv"
	"strings"
)

// validateRouteOptions checks each route's fallback, exercise and shed
// options, and each deployment's quota.
func (c *Config) validateRouteOptions(p *problems) {
	pools := make(map[string]*Pool, len(c.Pools))
	for i := range c.Pools {
		pools[c.Pools[i].ID] = &c.Pools[i]
	}
	for i := range c.Routes {
		r := &c.Routes[i]
		at := "routes[" + strconv.Itoa(i) + "]"
		c.validateFallback(p, r, at+".fallback", pools)
		if x := r.Exercise; x < 0 || x > MaxExercise || math.IsNaN(x) {
			p.add(at+".exercise", r.Line, "%v is not a share between 0 and %v (e.g. 0.02 sends 2%% of the route's traffic to a secondary rung first)", x, MaxExercise)
		}
		if sh := r.Shed; sh.At != 0 || sh.Below != "" {
			switch {
			case sh.At == 0:
				p.add(at+".shed.at", r.Line, "required: the share of a rung's quota (0 < at ≤ 1, e.g. 0.8) past which lower priorities are shed")
			case !(sh.At > 0 && sh.At <= 1):
				p.add(at+".shed.at", r.Line, "%v is not a share of the quota (0 < at ≤ 1, e.g. 0.8)", sh.At)
			}
			if pr, ok := ParsePriority(sh.Below); !ok {
				p.add(at+".shed.below", r.Line, "%q is not a priority (%s)", sh.Below, strings.Join(PriorityNames[:], ", "))
			} else if pr == PriorityLow {
				p.add(at+".shed.below", r.Line, "below: low sheds nothing (no priority is lower); use normal, high or critical")
			}
		}
	}
	for i := range c.Deployments {
		d := &c.Deployments[i]
		if d.Quota.RPM < 0 || d.Quota.TPM < 0 {
			p.add("deployments["+strconv.Itoa(i)+"].quota", d.Line, "rpm and tpm must not be negative")
		}
	}
	if h := c.Routing.PriorityHeader; h != "" && !headerRE.MatchString(h) {
		p.add("routing.priority_header", 0, "%q is not an HTTP header name", h)
	}
}

// validateFallback checks a route's fallback: an explicit consent, a pool
// that exists, of another exact model (a pool of the same model should
// hold those rungs itself), of the same kind, sharing no deployment.
func (c *Config) validateFallback(p *problems, r *Route, at string, pools map[string]*Pool) {
	f := r.Fallback
	if !f.Set() {
		return
	}
	if f.Pool == "" {
		p.add(at+".pool", r.Line, "required with allow_model_change: the pool of the other exact model")
		return
	}
	if !f.AllowModelChange {
		p.add(at+".allow_model_change", r.Line, "a fallback pool serves another exact model: write allow_model_change: true to allow it (it is never implied)")
	}
	fp, own := pools[f.Pool], pools[r.Pool]
	switch {
	case fp == nil:
		p.add(at+".pool", r.Line, "unknown pool %q", f.Pool)
		return
	case own == nil:
		return // the route's own pool is reported already
	case f.Pool == r.Pool || fp.Model == own.Model:
		p.add(at+".pool", r.Line, "pool %q serves the route's own exact model %q: add its deployments to pool %q instead (a fallback is for another model)", f.Pool, fp.Model, r.Pool)
		return
	case fp.Kind != own.Kind:
		p.add(at+".pool", r.Line, "pool %q serves %s, the route's pool %s", f.Pool, fp.Kind, own.Kind)
	}
	for _, id := range fp.Deployments {
		if slices.Contains(own.Deployments, id) {
			p.add(at+".pool", r.Line, "deployment %q is in both pool %q and pool %q: one deployment serves one exact model", id, r.Pool, f.Pool)
		}
	}
}

// routeOptionWarnings adds what is allowed but does nothing: a shed rule
// on a route none of whose rungs declares a quota, and exercise on a route
// of one rung.
func (c *Config) routeOptionWarnings(p *problems) {
	pools := make(map[string]*Pool, len(c.Pools))
	for i := range c.Pools {
		pools[c.Pools[i].ID] = &c.Pools[i]
	}
	quota := make(map[string]bool, len(c.Deployments))
	for i := range c.Deployments {
		quota[c.Deployments[i].ID] = c.Deployments[i].Quota.Declared()
	}
	for i := range c.Routes {
		r := &c.Routes[i]
		at := "routes[" + strconv.Itoa(i) + "]"
		own := pools[r.Pool]
		if own == nil {
			continue
		}
		if r.Exercise > 0 && len(own.Deployments) < 2 {
			p.add(at+".exercise", r.Line, "pool %q has one deployment: there is no secondary rung to exercise", r.Pool)
		}
		if !r.Shed.On() {
			continue
		}
		ids := slices.Clone(own.Deployments)
		if fp := pools[r.Fallback.Pool]; fp != nil {
			ids = append(ids, fp.Deployments...)
		}
		if !slices.ContainsFunc(ids, func(id string) bool { return quota[id] }) {
			p.add(at+".shed", r.Line, "no deployment of the route declares a quota: nothing is ever shed")
		}
	}
}
