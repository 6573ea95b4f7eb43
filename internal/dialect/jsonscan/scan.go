// Package jsonscan is a strict, allocation-light pull parser for caller
// request bodies, shared by the caller dialects. It accepts exactly RFC 8259
// JSON, as encoding/json does, and reports the first syntax error with its
// byte offset as a 400 the dialects return unchanged.
package jsonscan

import (
	"bytes"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/spillway-gw/spillway/internal/failure"
)

// MaxDepth bounds nesting so a hostile body cannot exhaust the stack;
// encoding/json uses the same bound.
const MaxDepth = 10000

// Scanner is a pull parser over one request body. The dialect drives it
// member by member and decides what each value means.
//
// Strings and raw values it returns point into the body unless they needed
// unescaping, so the body must be the decoder's own copy (the server may
// reuse its buffer) and must never be written to while they are in use.
type Scanner struct {
	b []byte
	i int
	// syntaxErr is the error the scanner itself built, so a dialect can tell
	// a syntax error from a semantic one.
	syntaxErr *failure.Public
}

// New starts scanning b, which the Scanner borrows (see Scanner).
func New(b []byte) Scanner { return Scanner{b: b} }

// IsSyntax reports whether p is the syntax error this scanner reported. A
// parse-then-validate server reports broken JSON before any field error,
// so a dialect that got a semantic error first runs Validate on the body.
func (s *Scanner) IsSyntax(p *failure.Public) bool { return p != nil && p == s.syntaxErr }

// End checks that nothing but whitespace follows the top-level value.
func (s *Scanner) End() *failure.Public {
	if s.Peek() != 0 || s.i < len(s.b) {
		return s.syntax("invalid character after top-level value")
	}
	return nil
}

func (s *Scanner) syntax(reason string) *failure.Public {
	if s.syntaxErr == nil {
		s.syntaxErr = failure.BadRequest("", "request body is not valid JSON: %s at offset %d", reason, s.i)
	}
	return s.syntaxErr
}

func (s *Scanner) unexpected() *failure.Public {
	if s.i >= len(s.b) {
		return s.syntax("unexpected end of input")
	}
	c := s.b[s.i]
	if c < 0x20 || c >= utf8.RuneSelf {
		return s.syntax("invalid character " + strconv.QuoteRuneToASCII(rune(c)))
	}
	return s.syntax("invalid character '" + string(c) + "'")
}

func (s *Scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// Peek skips whitespace and returns the next byte, 0 at the end.
func (s *Scanner) Peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// Kind names the JSON type of the next value, for type errors.
func (s *Scanner) Kind() string {
	switch c := s.Peek(); {
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

// Null consumes a null literal if one is next.
func (s *Scanner) Null() (bool, *failure.Public) {
	if s.Peek() != 'n' {
		return false, nil
	}
	return true, s.Literal("null")
}

// Literal consumes lit (true, false or null), which must be next.
func (s *Scanner) Literal(lit string) *failure.Public {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		for j := 0; j < len(lit) && s.i < len(s.b) && s.b[s.i] == lit[j]; j++ {
			s.i++
		}
		return s.unexpected()
	}
	s.i += len(lit)
	return nil
}

// Bool reads true or false; the caller has checked the kind.
func (s *Scanner) Bool() (bool, *failure.Public) {
	if s.Peek() == 't' {
		return true, s.Literal("true")
	}
	return false, s.Literal("false")
}

// NextKey advances to the next member of an object whose '{' was read by
// Open (first is true for the first call). It returns the key, or ok=false
// after the closing '}'. The key aliases the body unless it had escapes.
func (s *Scanner) NextKey(first bool) (key []byte, ok bool, p *failure.Public) {
	c := s.Peek()
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
		c = s.Peek()
	}
	if c != '"' {
		return nil, false, s.unexpected()
	}
	key, p = s.RawString()
	if p != nil {
		return nil, false, p
	}
	if s.Peek() != ':' {
		return nil, false, s.unexpected()
	}
	s.i++
	return key, true, nil
}

// NextElem advances to the next element of an array whose '[' was read; it
// returns false after the closing ']'.
func (s *Scanner) NextElem(first bool) (bool, *failure.Public) {
	c := s.Peek()
	if c == ']' {
		s.i++
		return false, nil
	}
	if !first {
		if c != ',' {
			return false, s.unexpected()
		}
		s.i++
		if s.Peek() == ']' {
			return false, s.unexpected()
		}
	}
	return true, nil
}

// Open consumes '{' or '[' (the caller checked which is next).
func (s *Scanner) Open() { s.i++ }

// Str reads a string value. The string shares memory with the scanner's
// buffer, which is never written after scanning starts.
func (s *Scanner) Str() (string, *failure.Public) {
	b, p := s.RawString()
	if len(b) == 0 {
		return "", p
	}
	return unsafe.String(unsafe.SliceData(b), len(b)), p
}

// RawString reads a string whose opening quote is next. Without escapes or
// invalid UTF-8 the result aliases the body; otherwise it is a new buffer
// decoded as encoding/json does (invalid bytes and lone surrogates become
// U+FFFD).
func (s *Scanner) RawString() ([]byte, *failure.Public) {
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

func (s *Scanner) unescape(start int, raw []byte) ([]byte, *failure.Public) {
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

// Number reads a number per RFC 8259 and returns its text.
func (s *Scanner) Number() ([]byte, *failure.Public) {
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

// IsNumberStart reports whether c can start a JSON number.
func IsNumberStart(c byte) bool { return c == '-' || (c >= '0' && c <= '9') }

// Int reads a number (the caller has checked IsNumberStart) as an integer.
// isInt is false for a number with a fraction or exponent; values beyond
// the int32 range are clamped to it, which every limit a dialect checks
// treats the same as the true value.
func (s *Scanner) Int() (n int, isInt bool, p *failure.Public) {
	b, p := s.Number()
	if p != nil {
		return 0, false, p
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			if b[0] == '-' {
				return math.MinInt32, true, nil
			}
			return math.MaxInt32, true, nil
		}
		return 0, false, nil
	}
	return int(max(min(v, math.MaxInt32), math.MinInt32)), true, nil
}

// Float reads a number (the caller has checked IsNumberStart); inRange is
// false when it overflows a float64.
func (s *Scanner) Float() (f float64, inRange bool, p *failure.Public) {
	b, p := s.Number()
	if p != nil {
		return 0, false, p
	}
	f, err := strconv.ParseFloat(string(b), 64)
	return f, err == nil, nil
}

func (s *Scanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

// Skip reads and validates one value of any type.
func (s *Scanner) Skip() *failure.Public { return s.skipDepth(0) }

func (s *Scanner) skipDepth(depth int) *failure.Public {
	if depth > MaxDepth {
		return s.syntax("nesting too deep")
	}
	switch c := s.Peek(); c {
	case '{':
		s.Open()
		for first := true; ; first = false {
			_, ok, p := s.NextKey(first)
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
		s.Open()
		for first := true; ; first = false {
			ok, p := s.NextElem(first)
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
		_, p := s.RawString()
		return p
	case 't':
		return s.Literal("true")
	case 'f':
		return s.Literal("false")
	case 'n':
		return s.Literal("null")
	default:
		_, p := s.Number()
		return p
	}
}

// Raw reads one value and returns its text, capped so that an append by a
// consumer cannot write into the rest of the buffer.
func (s *Scanner) Raw() ([]byte, *failure.Public) {
	s.ws()
	start := s.i
	if p := s.Skip(); p != nil {
		return nil, p
	}
	return s.b[start:s.i:s.i], nil
}

// Mark returns the offset where the next value starts, for Since: a
// dialect that inspects a value member by member can still keep it whole.
func (s *Scanner) Mark() int {
	s.ws()
	return s.i
}

// Since returns the body from mark to the current position, capped like
// Raw's result.
func (s *Scanner) Since(mark int) []byte { return s.b[mark:s.i:s.i] }

// Rewind moves back to a mark taken earlier, to read a value again; a
// dialect uses it off the happy path, e.g. to find a block's type after
// one of its members did not fit.
func (s *Scanner) Rewind(mark int) {
	if mark >= 0 && mark <= s.i {
		s.i = mark
	}
}

// Validate reports the first syntax error in a whole body, or nil.
func Validate(b []byte) *failure.Public {
	s := Scanner{b: b}
	if p := s.Skip(); p != nil {
		return p
	}
	return s.End()
}
