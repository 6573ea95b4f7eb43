package openaichat

import (
	"github.com/spillway-gw/spillway/internal/dialect/jsonscan"
	"github.com/spillway-gw/spillway/internal/failure"
)

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
	return bad(l, "'%s' is not supported by this gateway: %s.", l, why)
}

func (s *scanner) typeErr(l loc, want string) *failure.Public {
	return bad(l, "Invalid type for '%s': expected %s, but got %s instead.", l, want, s.Kind())
}

// skipNull consumes a null if one is next. Optional fields treat null as
// absent, as OpenAI does for its nullable parameters.
func (s *scanner) skipNull() (bool, *failure.Public) { return s.Null() }

func (s *scanner) getString(l loc) (string, *failure.Public) {
	if s.Peek() != '"' {
		return "", s.typeErr(l, "a string")
	}
	return s.Str()
}

// getStringRaw is getString without the copy, for values only compared.
func (s *scanner) getStringRaw(l loc) ([]byte, *failure.Public) {
	if s.Peek() != '"' {
		return nil, s.typeErr(l, "a string")
	}
	return s.RawString()
}

func (s *scanner) getBool(l loc) (bool, *failure.Public) {
	if c := s.Peek(); c != 't' && c != 'f' {
		return false, s.typeErr(l, "a boolean")
	}
	return s.Bool()
}

func (s *scanner) getFloat(l loc) (float64, *failure.Public) {
	if !jsonscan.IsNumberStart(s.Peek()) {
		return 0, s.typeErr(l, "a number")
	}
	f, inRange, p := s.Float()
	if p != nil {
		return 0, p
	}
	if !inRange {
		return 0, bad(l, "Invalid '%s': number out of range.", l)
	}
	return f, nil
}

func (s *scanner) getInt(l loc) (int, *failure.Public) {
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
