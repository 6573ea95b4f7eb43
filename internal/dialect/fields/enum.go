package fields

import (
	"strings"

	"github.com/spillway-gw/spillway/internal/failure"
)

// Enum reads a string that must be one of values and returns the one it
// is (a constant, so keeping it pins nothing of the body). Any other
// string is reported by the table's Enum wording, which lists values.
func (r *Reader) Enum(p Path, values ...string) (string, *failure.Public) {
	v, e := r.StrRaw(p)
	if e != nil {
		return "", e
	}
	for _, want := range values {
		if string(v) == want {
			return want, nil
		}
	}
	return "", bad(p, r.w.Enum, v, r.w.list(values))
}

// OptEnum is Enum for an optional field: null is "".
func (r *Reader) OptEnum(p Path, values ...string) (string, *failure.Public) {
	if isNull, e := r.Null(); isNull || e != nil {
		return "", e
	}
	return r.Enum(p, values...)
}

// list renders values as the table writes a list: 'a', 'b' and 'c' (Or
// is " and ") or 'a', 'b' or 'c' (" or ").
func (w *Wording) list(values []string) string {
	var b strings.Builder
	for i, v := range values {
		switch {
		case i == 0:
		case i == len(values)-1:
			b.WriteString(w.Or)
		default:
			b.WriteString(", ")
		}
		b.WriteByte('\'')
		b.WriteString(v)
		b.WriteByte('\'')
	}
	return b.String()
}
