package anthropicmsgs

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spillway-gw/spillway/internal/dialect/jsonscan"
	"github.com/spillway-gw/spillway/internal/failure"
)

// path is where a request field is, written as Anthropic writes it in its
// errors: messages.2.content.0.text. It is a value built on the stack and
// turned into a string only on error, so naming fields costs nothing on
// the happy path.
type path struct {
	segs [8]struct {
		name string // "" for an index
		idx  int
	}
	n int
}

func field(name string) path {
	var p path
	return p.f(name)
}

// f appends a named segment.
func (p path) f(name string) path {
	if p.n < len(p.segs) {
		p.segs[p.n].name = name
		p.n++
	}
	return p
}

// at appends an index segment.
func (p path) at(i int) path {
	if p.n < len(p.segs) {
		p.segs[p.n].name, p.segs[p.n].idx = "", i
		p.n++
	}
	return p
}

func (p path) String() string {
	var b strings.Builder
	for k := range p.n {
		if k > 0 {
			b.WriteByte('.')
		}
		if s := p.segs[k]; s.name != "" {
			b.WriteString(s.name)
		} else {
			b.WriteString(strconv.Itoa(s.idx))
		}
	}
	return b.String()
}

// bad is a 400 naming the field at p, worded as Anthropic words its
// validation errors: "<path>: <what is wrong>".
func bad(p path, format string, args ...any) *failure.Public {
	ps := p.String()
	return failure.BadRequest(ps, "%s: %s", ps, fmt.Sprintf(format, args...))
}

func missing(p path) *failure.Public { return bad(p, "Field required") }

func extra(p path) *failure.Public { return bad(p, "Extra inputs are not permitted") }

// unsupported refuses a real Anthropic feature the gateway cannot honour on
// every provider, so it is never silently dropped.
func unsupported(p path, why string) *failure.Public {
	return bad(p, "not supported by this gateway: %s", why)
}

// scanner is the shared pull parser, given this dialect's field readers
// with Anthropic's wording.
type scanner struct{ jsonscan.Scanner }

func (s *scanner) typeErr(p path, want string) *failure.Public {
	return bad(p, "Input should be %s", want)
}

// null consumes a null if one is next. Optional fields treat null as
// absent.
func (s *scanner) null() (bool, *failure.Public) { return s.Null() }

func (s *scanner) getString(p path) (string, *failure.Public) {
	if s.Peek() != '"' {
		return "", s.typeErr(p, "a valid string")
	}
	return s.Str()
}

// getRaw is getString without the copy, for values only compared.
func (s *scanner) getRaw(p path) ([]byte, *failure.Public) {
	if s.Peek() != '"' {
		return nil, s.typeErr(p, "a valid string")
	}
	return s.RawString()
}

func (s *scanner) getBool(p path) (bool, *failure.Public) {
	if c := s.Peek(); c != 't' && c != 'f' {
		return false, s.typeErr(p, "a valid boolean")
	}
	return s.Bool()
}

func (s *scanner) getInt(p path) (int, *failure.Public) {
	if !jsonscan.IsNumberStart(s.Peek()) {
		return 0, s.typeErr(p, "a valid integer")
	}
	n, isInt, e := s.Int()
	if e != nil {
		return 0, e
	}
	if !isInt {
		return 0, bad(p, "Input should be a valid integer, got a number with a fractional part")
	}
	return n, nil
}

// directCaller reads a tool_use block's caller: true when it is null or
// {"type":"direct"}; any other caller is read and reported as not direct.
func (s *scanner) directCaller(p path) (bool, *failure.Public) {
	if isNull, e := s.null(); isNull || e != nil {
		return true, e
	}
	if e := s.object(p); e != nil {
		return false, e
	}
	direct, members := false, 0
	for first := true; ; first = false {
		key, ok, e := s.NextKey(first)
		if e != nil {
			return false, e
		}
		if !ok {
			return direct && members == 1, nil
		}
		members++
		if string(key) == "type" {
			typ, e := s.getRaw(p.f("type"))
			if e != nil {
				return false, e
			}
			direct = string(typ) == "direct"
			continue
		}
		if e := s.Skip(); e != nil {
			return false, e
		}
	}
}

// getTopK reads an optional top_k: an integer of at least 0 (Anthropic's
// bound; 0 and negative values are refused by some providers, so the
// canonical form keeps what the caller sent).
func (s *scanner) getTopK(p path) (*int, *failure.Public) {
	if isNull, e := s.null(); isNull || e != nil {
		return nil, e
	}
	n, e := s.getInt(p)
	if e != nil {
		return nil, e
	}
	if n < 0 {
		return nil, bad(p, "Input should be greater than or equal to 0")
	}
	return &n, nil
}

// getRange reads an optional number within [lo, hi], worded as Anthropic
// words its range errors.
func (s *scanner) getRange(p path, lo, hi float64) (*float64, *failure.Public) {
	if isNull, e := s.null(); isNull || e != nil {
		return nil, e
	}
	if !jsonscan.IsNumberStart(s.Peek()) {
		return nil, s.typeErr(p, "a valid number")
	}
	f, inRange, e := s.Float()
	if e != nil {
		return nil, e
	}
	if !inRange || f < lo || f > hi {
		return nil, bad(p, "range: %g..%g", lo, hi)
	}
	return &f, nil
}

// object checks that an object is next and consumes its '{'.
func (s *scanner) object(p path) *failure.Public {
	if s.Peek() != '{' {
		return s.typeErr(p, "a valid dictionary")
	}
	s.Open()
	return nil
}

// array checks that an array is next and consumes its '['.
func (s *scanner) array(p path) *failure.Public {
	if s.Peek() != '[' {
		return s.typeErr(p, "a valid list")
	}
	s.Open()
	return nil
}

// rejectUnlessNull refuses any value but null.
func (s *scanner) rejectUnlessNull(p path, why string) *failure.Public {
	if isNull, e := s.null(); isNull || e != nil {
		return e
	}
	if e := s.Skip(); e != nil {
		return e
	}
	return unsupported(p, why)
}

// cacheControl checks a cache_control marker and ignores it: it is a
// prompt-caching hint, which a provider without prompt caching may drop
// without changing the answer.
func (s *scanner) cacheControl(p path) *failure.Public {
	if isNull, e := s.null(); isNull || e != nil {
		return e
	}
	if e := s.object(p); e != nil {
		return e
	}
	hasType := false
	for first := true; ; first = false {
		key, ok, e := s.NextKey(first)
		if e != nil {
			return e
		}
		if !ok {
			break
		}
		switch string(key) {
		case "type":
			hasType = true
			var v []byte
			if v, e = s.getRaw(p.f("type")); e == nil && string(v) != "ephemeral" {
				e = bad(p.f("type"), "Input should be 'ephemeral'")
			}
		case "ttl":
			var v []byte
			if v, e = s.getRaw(p.f("ttl")); e == nil && string(v) != "5m" && string(v) != "1h" {
				e = bad(p.f("ttl"), "Input should be '5m' or '1h'")
			}
		default:
			e = extra(p.f(string(key)))
		}
		if e != nil {
			return e
		}
	}
	if !hasType {
		return missing(p.f("type"))
	}
	return nil
}
