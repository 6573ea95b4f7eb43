package catalog

import (
	"slices"
)

// Snapshot is one validated config, resolved for lookup. It is immutable
// after Build, so request handling reads it from many goroutines without
// locks. Everything it returns points into it and must not be modified.
type Snapshot struct {
	cfg    *Config
	routes map[string]*ResolvedRoute // the first route of each model
	// byModel lists each model's routes in file order: matching is one
	// map lookup and a scan of that model's few routes, whatever the
	// table's size.
	byModel     map[string][]*ResolvedRoute
	models      []string
	deployments map[string]*Deployment
	order       []*Deployment

	// sum is the SHA-256 of the file the snapshot was read from, when it
	// was read from one; Watch uses it to tell whether the file changed.
	sum [32]byte
}

// Build applies defaults to a copy of c, validates it and resolves every
// route to its pool's deployments. c itself is not changed, and later
// changes to c do not reach the snapshot. On failure the error is the
// Problems found.
func Build(c *Config, file string) (*Snapshot, error) {
	c = c.Clone()
	c.ApplyDefaults()
	if ps := c.Validate(file); len(ps) > 0 {
		return nil, ps
	}
	s := &Snapshot{
		cfg:         c,
		routes:      make(map[string]*ResolvedRoute, len(c.Routes)),
		byModel:     make(map[string][]*ResolvedRoute, len(c.Routes)),
		deployments: make(map[string]*Deployment, len(c.Deployments)),
		order:       make([]*Deployment, len(c.Deployments)),
	}
	for i := range c.Deployments {
		d := &c.Deployments[i]
		s.deployments[d.ID] = d
		s.order[i] = d
	}
	pools := make(map[string]*Pool, len(c.Pools))
	for i := range c.Pools {
		pools[c.Pools[i].ID] = &c.Pools[i]
	}
	for i := range c.Routes {
		r := &c.Routes[i]
		p := pools[r.Pool]
		rr := &ResolvedRoute{Public: r.Model, Pool: p, Deployments: make([]*Deployment, len(p.Deployments)),
			Match: normMatch(r.Match), Index: i, Line: r.Line}
		for i, id := range p.Deployments {
			rr.Deployments[i] = s.deployments[id]
		}
		s.resolveRouteOptions(rr, r, pools)
		resolveSticky(rr, r)
		resolveHedge(rr, r)
		if _, ok := s.routes[r.Model]; !ok {
			s.routes[r.Model] = rr
			s.models = append(s.models, r.Model)
		}
		s.byModel[r.Model] = append(s.byModel[r.Model], rr)
	}
	slices.Sort(s.models)
	return s, nil
}

// LoadSnapshot loads, validates and builds the file at path in one step,
// remembering the file's content hash so that Holder.Watch reloads only
// when the file really changes.
func LoadSnapshot(path string) (*Snapshot, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return buildFromData(data, path)
}

func buildFromData(data []byte, path string) (*Snapshot, error) {
	c, err := Parse(data, path)
	if err != nil {
		return nil, err
	}
	s, err := Build(c, path)
	if err != nil {
		return nil, err
	}
	s.sum = hash(data)
	return s, nil
}

// Route resolves a caller-visible model name to its first route, for
// listings; a request is routed by Match.
func (s *Snapshot) Route(publicModel string) (*ResolvedRoute, bool) {
	r, ok := s.routes[publicModel]
	return r, ok
}

// Match returns the first route for a.Model whose rules a meets. known is
// false when no route names the model at all (a 404 model_not_found);
// a nil route with known true means routes exist but none matched.
func (s *Snapshot) Match(a *Attributes) (rr *ResolvedRoute, known bool) {
	rs := s.byModel[a.Model]
	for _, r := range rs {
		if r.Match.Holds(a) {
			return r, true
		}
	}
	return nil, len(rs) > 0
}

// Version is the snapshot's file version (the first 12 hex digits of its
// SHA-256); "" for a config built in code.
func (s *Snapshot) Version() string { return Version(s.sum) }

// Models lists the public model names, sorted. The slice is the caller's.
func (s *Snapshot) Models() []string { return slices.Clone(s.models) }

// Deployment looks a deployment up by id.
func (s *Snapshot) Deployment(id string) (*Deployment, bool) {
	d, ok := s.deployments[id]
	return d, ok
}

// Deployments lists every deployment in config order, routed or not. The
// slice is the caller's; the deployments are not.
func (s *Snapshot) Deployments() []*Deployment { return slices.Clone(s.order) }

// Config returns the validated, defaulted config the snapshot was built
// from. It must not be modified.
func (s *Snapshot) Config() *Config { return s.cfg }

// Clone returns a deep copy of c, so that defaults can be applied or
// fields changed without touching the original.
func (c *Config) Clone() *Config {
	n := *c
	n.Deployments = slices.Clone(c.Deployments)
	for i := range n.Deployments {
		if p := n.Deployments[i].Price; p != nil {
			cp := *p
			n.Deployments[i].Price = &cp
		}
	}
	n.Pools = slices.Clone(c.Pools)
	for i := range n.Pools {
		n.Pools[i].Deployments = slices.Clone(c.Pools[i].Deployments)
		if e := n.Pools[i].Equivalence; e != nil {
			ce := *e
			n.Pools[i].Equivalence = &ce
		}
	}
	for i := range n.Deployments {
		t := &n.Deployments[i].Tenants
		t.Allow, t.Deny = slices.Clone(t.Allow), slices.Clone(t.Deny)
	}
	n.Routes = slices.Clone(c.Routes)
	// lines is shared: it is never modified after decoding.
	return &n
}
