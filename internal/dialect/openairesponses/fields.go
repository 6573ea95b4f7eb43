package openairesponses

import (
	"strings"

	"github.com/spillway-gw/spillway/internal/dialect/jsonscan"
	"github.com/spillway-gw/spillway/internal/failure"
)

// scanner is the shared pull parser with this dialect's field readers,
// which word their errors the way OpenAI does.
type scanner struct{ jsonscan.Scanner }

// loc is the path of a request field (see jsonscan.Path).
type loc = jsonscan.Path

func field(name string) loc { return jsonscan.Field(name) }

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
	return bad(l, "'%s' is not supported by spillway: %s.", l, why)
}

func notEmpty(l loc) *failure.Public {
	return bad(l, "Invalid value for '%s': it must not be empty.", l)
}

func (s *scanner) typeErr(l loc, want string) *failure.Public {
	return bad(l, "Invalid type for '%s': expected %s, but got %s instead.", l, want, s.Kind())
}

// null consumes a null if one is next. Optional fields treat null as
// absent, as OpenAI does for its nullable parameters.
func (s *scanner) null() (bool, *failure.Public) { return s.Null() }

func (s *scanner) str(l loc) (string, *failure.Public) {
	if s.Peek() != '"' {
		return "", s.typeErr(l, "a string")
	}
	return s.Str()
}

// strRaw is str without the copy, for values only compared.
func (s *scanner) strRaw(l loc) ([]byte, *failure.Public) {
	if s.Peek() != '"' {
		return nil, s.typeErr(l, "a string")
	}
	return s.RawString()
}

// optStr reads a string or null; given reports a non-null value.
func (s *scanner) optStr(l loc) (v string, given bool, _ *failure.Public) {
	if isNull, p := s.null(); isNull || p != nil {
		return "", false, p
	}
	v, p := s.str(l)
	return v, p == nil, p
}

func (s *scanner) boolean(l loc) (bool, *failure.Public) {
	if c := s.Peek(); c != 't' && c != 'f' {
		return false, s.typeErr(l, "a boolean")
	}
	return s.Bool()
}

// optBool reads a boolean or null (nil).
func (s *scanner) optBool(l loc) (*bool, *failure.Public) {
	if isNull, p := s.null(); isNull || p != nil {
		return nil, p
	}
	b, p := s.boolean(l)
	if p != nil {
		return nil, p
	}
	return &b, nil
}

func (s *scanner) integer(l loc) (int, *failure.Public) {
	if !jsonscan.IsNumberStart(s.Peek()) {
		return 0, s.typeErr(l, "an integer")
	}
	n, isInt, p := s.Int()
	if p != nil {
		return 0, p
	}
	if !isInt {
		return 0, bad(l, "Invalid type for '%s': expected an integer, but got a decimal number instead.", l)
	}
	return n, nil
}

// optRange reads a number within [lo, hi], or null (nil).
func (s *scanner) optRange(l loc, lo, hi float64) (*float64, *failure.Public) {
	if isNull, p := s.null(); isNull || p != nil {
		return nil, p
	}
	if !jsonscan.IsNumberStart(s.Peek()) {
		return nil, s.typeErr(l, "a number")
	}
	f, inRange, p := s.Float()
	switch {
	case p != nil:
		return nil, p
	case !inRange:
		return nil, bad(l, "Invalid '%s': number out of range.", l)
	case f < lo || f > hi:
		return nil, bad(l, "Invalid '%s': expected a number between %g and %g, but got %g instead.", l, lo, hi, f)
	}
	return &f, nil
}

// object checks that an object is next and consumes its '{'.
func (s *scanner) object(l loc) *failure.Public {
	if s.Peek() != '{' {
		return s.typeErr(l, "an object")
	}
	s.Open()
	return nil
}

// array checks that an array is next and consumes its '['.
func (s *scanner) array(l loc) *failure.Public {
	if s.Peek() != '[' {
		return s.typeErr(l, "an array")
	}
	s.Open()
	return nil
}

// optObject type-checks an ignored object (or null) and skips it.
func (s *scanner) optObject(l loc) *failure.Public {
	if isNull, p := s.null(); isNull || p != nil {
		return p
	}
	if s.Peek() != '{' {
		return s.typeErr(l, "an object")
	}
	return s.Skip()
}

// optArray type-checks an ignored array (or null) and skips it.
func (s *scanner) optArray(l loc) *failure.Public {
	if isNull, p := s.null(); isNull || p != nil {
		return p
	}
	if s.Peek() != '[' {
		return s.typeErr(l, "an array")
	}
	return s.Skip()
}

// enum reads a string that must be one of values (null is absent).
func (s *scanner) optEnum(l loc, values ...string) *failure.Public {
	_, p := s.optEnumValue(l, values...)
	return p
}

// optEnumValue is optEnum returning the value read ("" for null).
func (s *scanner) optEnumValue(l loc, values ...string) (string, *failure.Public) {
	if isNull, p := s.null(); isNull || p != nil {
		return "", p
	}
	v, p := s.strRaw(l)
	if p != nil {
		return "", p
	}
	for _, want := range values {
		if string(v) == want {
			return want, nil
		}
	}
	return "", bad(l, "Invalid value for '%s': '%s'. Supported values are: %s.", l, v, quoteList(values))
}

// quoteList renders 'a', 'b' and 'c'.
func quoteList(values []string) string {
	var b strings.Builder
	for i, v := range values {
		switch {
		case i == 0:
		case i == len(values)-1:
			b.WriteString(" and ")
		default:
			b.WriteString(", ")
		}
		b.WriteByte('\'')
		b.WriteString(v)
		b.WriteByte('\'')
	}
	return b.String()
}

// sub scans a raw value captured earlier (a member whose meaning depends on
// a type given later in the same object). raw is valid JSON sharing the
// body's memory, so strings read from it alias the body as usual.
func sub(raw []byte) scanner { return scanner{jsonscan.New(raw)} }
