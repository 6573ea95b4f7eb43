package anthropicmsgs

import (
	"github.com/spillway-gw/spillway/internal/dialect/fields"
	"github.com/spillway-gw/spillway/internal/failure"
)

// words is how Anthropic words its validation errors, "<path>: <what is
// wrong>" with the path written messages.2.content.0.text; the shared
// field readers (dialect/fields) speak through it.
var words = fields.Wording{
	Path:  fields.Dots,
	Frame: "%[1]s: %[2]s",
	Kinds: fields.Kinds{String: "a valid string", Bool: "a valid boolean", Int: "a valid integer",
		Number: "a valid number", Object: "a valid dictionary", Array: "a valid list"},
	Type:         "%[1]s: Input should be %[2]s",
	Fraction:     "%[1]s: Input should be a valid integer, got a number with a fractional part",
	Overflow:     "%[1]s: range: %[2]g..%[3]g",
	Range:        "%[1]s: range: %[2]g..%[3]g",
	Required:     "%[1]s: Field required",
	Unrecognized: "%[1]s: Extra inputs are not permitted",
	Refused:      "%[1]s: not supported by this gateway: %[2]s",
	Pattern:      "%[1]s: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'",
	Enum:         "%[1]s: Input should be %[3]s",
	Or:           " or ",
	NotObject:    "request body must be a JSON object, but got %[1]s instead",
	Syntax:       "request body is not valid JSON: %[1]s at offset %[2]d",
}

// scanner is the shared pull parser with the shared field readers.
type scanner = fields.Reader

// path is where a request field is (see fields.Path).
type path = fields.Path

// directCaller reads a tool_use block's caller: true when it is null or
// {"type":"direct"}; any other caller is read and reported as not direct.
func directCaller(s *scanner, p path) (bool, *failure.Public) {
	if isNull, e := s.Null(); isNull || e != nil {
		return true, e
	}
	if e := s.Object(p); e != nil {
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
			typ, e := s.StrRaw(p.F("type"))
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
func getTopK(s *scanner, p path) (*int, *failure.Public) {
	if isNull, e := s.Null(); isNull || e != nil {
		return nil, e
	}
	n, e := s.Int(p)
	if e != nil {
		return nil, e
	}
	if n < 0 {
		return nil, words.Bad(p, "Input should be greater than or equal to 0")
	}
	return &n, nil
}

// cacheControl checks a cache_control marker and ignores it: it is a
// prompt-caching hint, which a provider without prompt caching may drop
// without changing the answer.
func cacheControl(s *scanner, p path) *failure.Public {
	if isNull, e := s.Null(); isNull || e != nil {
		return e
	}
	hasType := false
	if e := s.Fields(p, func(key []byte) (e *failure.Public) {
		switch string(key) {
		case "type":
			hasType = true
			_, e = s.Enum(p.F("type"), "ephemeral")
		case "ttl":
			_, e = s.Enum(p.F("ttl"), "5m", "1h")
		}
		return e
	}); e != nil {
		return e
	}
	if !hasType {
		return words.Missing(p.F("type"))
	}
	return nil
}
