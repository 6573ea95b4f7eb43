package fields

import (
	"github.com/spillway-gw/spillway/internal/canonical"
	"github.com/spillway-gw/spillway/internal/dialect"
	"github.com/spillway-gw/spillway/internal/failure"
)

// Tools reads an optional array of tools (null: none): tool reads each
// element at its path, and dup words the error for a name given twice
// (names are checked in constant time).
func (r *Reader) Tools(p Path, tool func(at Path) (canonical.Tool, *failure.Public), dup func(at Path, name string) *failure.Public) ([]canonical.Tool, *failure.Public) {
	if isNull, e := r.Null(); isNull || e != nil {
		return nil, e
	}
	var (
		out   []canonical.Tool
		names dialect.Index
	)
	e := r.Elements(p, func(i int) *failure.Public {
		t, e := tool(p.At(i))
		if e != nil {
			return e
		}
		if _, d := names.Add(t.Name); d {
			return dup(p.At(i), t.Name)
		}
		if out == nil {
			out = make([]canonical.Tool, 0, 2) // most requests send a few
		}
		out = append(out, t)
		return nil
	})
	if e != nil {
		return nil, e
	}
	return out, nil
}
