package catalog

// Routes lists every route, grouped by public model (sorted), each model's
// in file order. The slice is the caller's; the routes are not.
func (s *Snapshot) Routes() []*ResolvedRoute {
	n := 0
	for _, rs := range s.byModel {
		n += len(rs)
	}
	out := make([]*ResolvedRoute, 0, n)
	for _, m := range s.models {
		out = append(out, s.byModel[m]...)
	}
	return out
}
