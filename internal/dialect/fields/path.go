package fields

import (
	"strconv"
	"strings"
)

// PathStyle is how a dialect writes a field's path in its errors.
type PathStyle uint8

const (
	// Brackets is OpenAI's: messages[2].content[0].text. At indexes the
	// last named segment; a path keeps up to five named segments.
	Brackets PathStyle = iota
	// Dots is Anthropic's: messages.2.content.0.text. At appends an index
	// segment; a path keeps up to eight segments.
	Dots
)

const (
	maxBrackets = 5
	maxDots     = 8
)

// Path is where a request field is. It is a value built on the stack and
// turned into a string only on error, so naming fields precisely costs
// nothing on the happy path. Segments past the style's bound are dropped,
// never a panic on a hostile body. The zero Path is the empty Brackets
// path.
type Path struct {
	names [maxDots]string // "" for a Dots index segment
	idx   [maxDots]int32  // a segment's index, -1 for none
	n     uint8
	style PathStyle
}

// F appends a named segment.
func (p Path) F(name string) Path {
	bound := maxBrackets
	if p.style == Dots {
		bound = maxDots
	}
	if int(p.n) < bound {
		p.names[p.n], p.idx[p.n] = name, -1
		p.n++
	}
	return p
}

// At indexes the path: the last named segment (Brackets) or a new index
// segment (Dots).
func (p Path) At(i int) Path {
	switch {
	case p.style == Brackets:
		if p.n > 0 {
			p.idx[p.n-1] = int32(i)
		}
	case p.n < maxDots:
		p.names[p.n], p.idx[p.n] = "", int32(i)
		p.n++
	}
	return p
}

func (p Path) String() string {
	var b strings.Builder
	for k := range int(p.n) {
		if k > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p.names[k])
		i := p.idx[k]
		switch {
		case i < 0:
		case p.style == Dots:
			b.WriteString(strconv.Itoa(int(i)))
		default:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(int(i)))
			b.WriteByte(']')
		}
	}
	return b.String()
}
