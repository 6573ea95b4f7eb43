package jsonscan

import (
	"strconv"
	"strings"
)

// Path is the path of a request field, e.g. messages[2].content[0].text,
// as the dialects name it in their 400s. It is a value built on the stack
// and turned into a string only on error, so naming fields precisely costs
// nothing on the happy path. It holds up to five named segments, as deep
// as the OpenAI dialects name a field; deeper ones are dropped, never a
// panic on a hostile body.
type Path struct {
	segs [5]struct {
		name string
		idx  int // -1: not indexed
	}
	n int
}

// Field is the path of a top-level field.
func Field(name string) Path {
	var p Path
	return p.F(name)
}

// F appends a named segment; past five, the path stays at its first five.
func (p Path) F(name string) Path {
	if p.n < len(p.segs) {
		p.segs[p.n].name, p.segs[p.n].idx = name, -1
		p.n++
	}
	return p
}

// At indexes the last segment (nothing before any segment).
func (p Path) At(i int) Path {
	if p.n > 0 {
		p.segs[p.n-1].idx = i
	}
	return p
}

func (p Path) String() string {
	var b strings.Builder
	for k := range p.n {
		if k > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p.segs[k].name)
		if i := p.segs[k].idx; i >= 0 {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(i))
			b.WriteByte(']')
		}
	}
	return b.String()
}
