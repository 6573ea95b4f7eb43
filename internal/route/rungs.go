package route

import "github.com/spillway-gw/spillway/internal/catalog"

// RungHealth is how many of one route's rungs a request could be sent to
// now: the deployments of its own pool (a fallback pool's are another
// model's, and not counted) that the runtime can call, that can be priced
// (a host-funded one without a price never serves) and that health would
// try.
type RungHealth struct {
	// Route is the route's public model name; Pool its pool.
	Route, Pool string
	// Rungs counts the pool's deployments; Healthy those that would be
	// tried now.
	Rungs, Healthy int
}

// HealthyRungs counts each route's healthy rungs, through the same
// read-only views of health and the runtime that planning reads. Routes
// of one public model on one pool (told apart by match rules) are counted
// once: their rungs are the same.
func HealthyRungs(s *catalog.Snapshot, h Health, rd Readiness) []RungHealth {
	var out []RungHealth
	seen := map[[2]string]bool{}
	for _, rr := range s.Routes() {
		k := [2]string{rr.Public, rr.Pool.ID}
		if seen[k] {
			continue
		}
		seen[k] = true
		rh := RungHealth{Route: rr.Public, Pool: rr.Pool.ID, Rungs: len(rr.Deployments)}
		for _, d := range rr.Deployments {
			if reason, _ := rd.Missing(d); reason != "" || !d.Priced() {
				continue
			}
			if ok, _ := h.Check(d.ID); ok {
				rh.Healthy++
			}
		}
		out = append(out, rh)
	}
	return out
}
