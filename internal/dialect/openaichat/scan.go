package openaichat

import (
	"bytes"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/spillway-gw/spillway/internal/failure"
)

// maxDepth bounds nesting so a hostile body cannot exhaust the stack;
// encoding/json uses the same bound.
const maxDepth = 10000

// scanner is a strict pull parser over one request body. It accepts exactly
// RFC 8259 JSON and reports the first syntax error with its byte offset.
//
// Strings and raw values it returns point into b unless they needed
// unescaping, so b must be the decoder's own copy of the body (the server
// may reuse its buffer) and must never be written to.
type scanner struct {
	b []byte
	i int
	// syntaxErr is the error the scanner itself built, so Decode can tell a
	// syntax error from a semantic one.
	syntaxErr *failure.Public
}

func (s *scanner) syntax(reason string) *failure.Public {
	if s.syntaxErr == nil {
		s.syntaxErr = failure.BadRequest("", "request body is not valid JSON: %s at offset %d", reason, s.i)
	}
	return s.syntaxErr
}

func (s *scanner) unexpected() *failure.Public {
	if s.i >= len(s.b) {
		return s.syntax("unexpected end of input")
	}
	c := s.b[s.i]
	if c < 0x20 || c >= utf8.RuneSelf {
		return s.syntax("invalid character " + strconv.QuoteRuneToASCII(rune(c)))
	}
	return s.syntax("invalid character '" + string(c) + "'")
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek skips whitespace and returns the next byte, 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// kind names the JSON type of the next value, for type errors.
func (s *scanner) kind() string {
	switch c := s.peek(); {
	case c == '"':
		return "a string"
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	case c == '-' || (c >= '0' && c <= '9'):
		return "a number"
	}
	return "an invalid value"
}

// null consumes a null literal if one is next.
func (s *scanner) null() (bool, *failure.Public) {
	if s.peek() != 'n' {
		return false, nil
	}
	return true, s.literal("null")
}

func (s *scanner) literal(lit string) *failure.Public {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		for j := 0; j < len(lit) && s.i < len(s.b) && s.b[s.i] == lit[j]; j++ {
			s.i++
		}
		return s.unexpected()
	}
	s.i += len(lit)
	return nil
}

// bool reads true or false; the caller has checked the kind.
func (s *scanner) bool() (bool, *failure.Public) {
	if s.peek() == 't' {
		return true, s.literal("true")
	}
	return false, s.literal("false")
}

// nextKey advances to the next member of an object whose '{' was read by
// open (first is true for the first call). It returns the key, or ok=false
// after the closing '}'. The key aliases the body unless it had escapes.
func (s *scanner) nextKey(first bool) (key []byte, ok bool, p *failure.Public) {
	c := s.peek()
	if c == '}' {
		// After a value this is the normal end; a '}' right after a comma
		// fails below, where a key is required.
		s.i++
		return nil, false, nil
	}
	if !first {
		if c != ',' {
			return nil, false, s.unexpected()
		}
		s.i++
		c = s.peek()
	}
	if c != '"' {
		return nil, false, s.unexpected()
	}
	key, p = s.rawString()
	if p != nil {
		return nil, false, p
	}
	if s.peek() != ':' {
		return nil, false, s.unexpected()
	}
	s.i++
	return key, true, nil
}

// nextElem advances to the next element of an array whose '[' was read; it
// returns false after the closing ']'.
func (s *scanner) nextElem(first bool) (bool, *failure.Public) {
	c := s.peek()
	if c == ']' {
		s.i++
		return false, nil
	}
	if !first {
		if c != ',' {
			return false, s.unexpected()
		}
		s.i++
		if s.peek() == ']' {
			return false, s.unexpected()
		}
	}
	return true, nil
}

// open consumes '{' or '[' (the caller checked which is next).
func (s *scanner) open() { s.i++ }

// str reads a string value. The string shares memory with the scanner's
// buffer, which is never written after scanning starts.
func (s *scanner) str() (string, *failure.Public) {
	b, p := s.rawString()
	if len(b) == 0 {
		return "", p
	}
	return unsafe.String(unsafe.SliceData(b), len(b)), p
}

// rawString reads a string whose opening quote is next. Without escapes or
// invalid UTF-8 the result aliases the body; otherwise it is a new buffer
// decoded as encoding/json does (invalid bytes and lone surrogates become
// U+FFFD).
func (s *scanner) rawString() ([]byte, *failure.Public) {
	b := s.b
	start := s.i + 1 // after the opening quote
	i := start
	slow := false
	for {
		// Find the next quote with the vectorised IndexByte, then check the
		// bytes before it in a tight loop.
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			s.i = len(b)
			return nil, s.syntax("unexpected end of input in string")
		}
		end := i + q
		for i < end {
			seg := b[i:end]
			k := 0
			for k < len(seg) && seg[k]-0x20 < 0x60 && seg[k] != '\\' { // printable ASCII
				k++
			}
			i += k
			if i == end {
				break
			}
			switch c := b[i]; {
			case c == '\\':
				slow = true
				i += 2 // the escaped byte too; an escaped quote may be skipped
			case c < 0x20:
				s.i = i
				return nil, s.syntax("invalid control character in string")
			default:
				slow = true // non-ASCII, validated below
				i++
			}
		}
		if i > end { // the quote was escaped: look for the next one
			continue
		}
		raw := b[start:end]
		s.i = end + 1
		if !slow || (!hasBackslash(raw) && utf8.Valid(raw)) {
			return raw, nil
		}
		return s.unescape(start, raw)
	}
}

func hasBackslash(b []byte) bool { return bytes.IndexByte(b, '\\') >= 0 }

func (s *scanner) unescape(start int, raw []byte) ([]byte, *failure.Public) {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		// Copy a run of plain ASCII at once.
		k := i
		for k < len(raw) && raw[k] < utf8.RuneSelf && raw[k] != '\\' {
			k++
		}
		out = append(out, raw[i:k]...)
		i = k
		if i == len(raw) {
			break
		}
		if c := raw[i]; c >= utf8.RuneSelf {
			r, n := utf8.DecodeRune(raw[i:])
			out = utf8.AppendRune(out, r) // RuneError for an invalid byte
			i += n
			continue
		}
		if i+1 >= len(raw) {
			s.i = start + i
			return nil, s.syntax("invalid escape in string")
		}
		switch e := raw[i+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(raw[i+2:])
			if !ok {
				s.i = start + i
				return nil, s.syntax("invalid \\u escape in string")
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if r2, ok := hex4(raw[min(i+2, len(raw)):]); ok && i+1 < len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						out = utf8.AppendRune(out, dec)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
			continue
		default:
			s.i = start + i
			return nil, s.syntax("invalid escape in string")
		}
		i += 2
	}
	return out, nil
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// number reads a number per RFC 8259 and returns its text.
func (s *scanner) number() ([]byte, *failure.Public) {
	s.ws()
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case s.i < len(s.b) && s.b[s.i] >= '1' && s.b[s.i] <= '9':
		s.digits()
	default:
		return nil, s.unexpected()
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if !s.digits() {
			return nil, s.unexpected()
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if !s.digits() {
			return nil, s.unexpected()
		}
	}
	return s.b[start:s.i], nil
}

func (s *scanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

// skip reads and validates one value of any type.
func (s *scanner) skip() *failure.Public { return s.skipDepth(0) }

func (s *scanner) skipDepth(depth int) *failure.Public {
	if depth > maxDepth {
		return s.syntax("nesting too deep")
	}
	switch c := s.peek(); c {
	case '{':
		s.open()
		for first := true; ; first = false {
			_, ok, p := s.nextKey(first)
			if p != nil {
				return p
			}
			if !ok {
				return nil
			}
			if p := s.skipDepth(depth + 1); p != nil {
				return p
			}
		}
	case '[':
		s.open()
		for first := true; ; first = false {
			ok, p := s.nextElem(first)
			if p != nil {
				return p
			}
			if !ok {
				return nil
			}
			if p := s.skipDepth(depth + 1); p != nil {
				return p
			}
		}
	case '"':
		_, p := s.rawString()
		return p
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	default:
		_, p := s.number()
		return p
	}
}

// raw reads one value and returns its text, capped so that an append by a
// consumer cannot write into the rest of the buffer.
func (s *scanner) raw() ([]byte, *failure.Public) {
	s.ws()
	start := s.i
	if p := s.skip(); p != nil {
		return nil, p
	}
	return s.b[start:s.i:s.i], nil
}

// validate reports the first syntax error in a whole body, or nil.
func validate(b []byte) *failure.Public {
	s := scanner{b: b}
	if p := s.skip(); p != nil {
		return p
	}
	if s.peek() != 0 || s.i < len(s.b) {
		return s.syntax("invalid character after top-level value")
	}
	return nil
}
