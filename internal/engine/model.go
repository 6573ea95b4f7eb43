package engine

// ModelOf is the exact model rung i serves.
func (p *Plan) ModelOf(i int) string {
	if m := p.Rungs[i].Model; m != "" {
		return m
	}
	return p.Model
}
