package openaichat

import (
	"math"
	"strconv"
	"strings"

	"github.com/spillway-gw/spillway/internal/failure"
)

// loc is the path of a request field, e.g. messages[2].content[0].text. It
// is a value built on the stack and turned into a string only on error, so
// naming fields precisely costs nothing on the happy path.
type loc struct {
	segs [5]struct {
		name string
		idx  int // -1: not indexed
	}
	n int
}

func field(name string) loc {
	var l loc
	return l.f(name)
}

// f appends a named segment.
func (l loc) f(name string) loc {
	l.segs[l.n].name, l.segs[l.n].idx = name, -1
	l.n++
	return l
}

// at indexes the last segment.
func (l loc) at(i int) loc {
	l.segs[l.n-1].idx = i
	return l
}

func (l loc) String() string {
	var b strings.Builder
	for k := range l.n {
		if k > 0 {
			b.WriteByte('.')
		}
		b.WriteString(l.segs[k].name)
		if i := l.segs[k].idx; i >= 0 {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(i))
			b.WriteByte(']')
		}
	}
	return b.String()
}

// bad is a 400 naming the field at l.
func bad(l loc, format string, args ...any) *failure.Public {
	return failure.BadRequest(l.String(), format, args...)
}

func missing(l loc) *failure.Public {
	return bad(l, "Missing required parameter: '%s'.", l)
}

func unrecognized(l loc) *failure.Public {
	return bad(l, "Unrecognized parameter: '%s'.", l)
}

func unsupported(l loc, why string) *failure.Public {
	return bad(l, "'%s' is not supported by this gateway: %s.", l, why)
}

func (s *scanner) typeErr(l loc, want string) *failure.Public {
	return bad(l, "Invalid type for '%s': expected %s, but got %s instead.", l, want, s.kind())
}

// skipNull consumes a null if one is next. Optional fields treat null as
// absent, as OpenAI does for its nullable parameters.
func (s *scanner) skipNull() (bool, *failure.Public) { return s.null() }

func (s *scanner) getString(l loc) (string, *failure.Public) {
	if s.peek() != '"' {
		return "", s.typeErr(l, "a string")
	}
	return s.str()
}

// getStringRaw is getString without the copy, for values only compared.
func (s *scanner) getStringRaw(l loc) ([]byte, *failure.Public) {
	if s.peek() != '"' {
		return nil, s.typeErr(l, "a string")
	}
	return s.rawString()
}

func (s *scanner) getBool(l loc) (bool, *failure.Public) {
	if c := s.peek(); c != 't' && c != 'f' {
		return false, s.typeErr(l, "a boolean")
	}
	return s.bool()
}

func isNumberStart(c byte) bool { return c == '-' || (c >= '0' && c <= '9') }

func (s *scanner) getFloat(l loc) (float64, *failure.Public) {
	if !isNumberStart(s.peek()) {
		return 0, s.typeErr(l, "a number")
	}
	b, p := s.number()
	if p != nil {
		return 0, p
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil { // out of range; the grammar was checked
		return 0, bad(l, "Invalid '%s': number out of range.", l)
	}
	return f, nil
}

func (s *scanner) getInt(l loc) (int, *failure.Public) {
	if !isNumberStart(s.peek()) {
		return 0, s.typeErr(l, "an integer")
	}
	start := s.i
	b, p := s.number()
	if p != nil {
		return 0, p
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			if b[0] == '-' {
				return math.MinInt32, nil
			}
			return math.MaxInt32, nil
		}
		s.i = start
		return 0, bad(l, "Invalid type for '%s': expected an integer, but got a decimal number instead.", l)
	}
	return int(max(min(n, math.MaxInt32), math.MinInt32)), nil
}

// getRange reads an optional number within [lo, hi].
func (s *scanner) getRange(l loc, lo, hi float64) (*float64, *failure.Public) {
	if isNull, p := s.skipNull(); isNull || p != nil {
		return nil, p
	}
	f, p := s.getFloat(l)
	if p != nil {
		return nil, p
	}
	if f < lo || f > hi {
		return nil, bad(l, "Invalid '%s': expected a number between %g and %g, but got %g instead.", l, lo, hi, f)
	}
	return &f, nil
}

// object checks that an object is next and consumes its '{'.
func (s *scanner) object(l loc) *failure.Public {
	if s.peek() != '{' {
		return s.typeErr(l, "an object")
	}
	s.open()
	return nil
}

// array checks that an array is next and consumes its '['.
func (s *scanner) array(l loc) *failure.Public {
	if s.peek() != '[' {
		return s.typeErr(l, "an array")
	}
	s.open()
	return nil
}
