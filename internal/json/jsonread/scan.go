// Package jsonread is spillway's one JSON parser: a strict pull parser
// without reflection that accepts exactly what encoding/json accepts, for
// caller request bodies (Scanner) and provider wire events (Decoder).
//
// Errors are plain values (*SyntaxError, with the byte offset); what a
// caller is told is the business of the dialect that reads the body.
package jsonread

import (
	"math"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// MaxDepth bounds nesting. Only Skip (and Raw, Valid, which use it)
// recurses on input; everything else nests as deep as the code that drives
// the parser, so the bound exists to cap the stack a hostile value can
// claim. It is encoding/json's bound, so every verdict matches encoding/json
// (the fuzz targets compare them without exceptions) and a value the caller
// dialects accept is never refused later by a provider encoder. Bodies are
// already bounded in bytes (server.max_body_bytes), so the work is bounded;
// a maximal nesting costs about 1 MiB of stack for the length of one Skip.
const MaxDepth = 10000

// SyntaxError reports JSON that is not well formed, or (from a Decoder)
// JSON of another shape than the caller asked for.
type SyntaxError struct {
	Msg    string // what is wrong, e.g. "invalid character 'x'"
	Offset int    // where in the input, in bytes
}

func (e *SyntaxError) Error() string {
	return "json: " + e.Msg + " at offset " + strconv.Itoa(e.Offset)
}

// Scanner is a pull parser over one document; its user drives it value by
// value and decides what each means. A method that fails returns the
// first error the Scanner met (so a caller can tell it from its own), and
// its user stops there.
//
// Strings and raw values it returns point into the input unless they
// needed unescaping, so the input must not be written while they are in
// use (a dialect decodes its own copy of a request body).
type Scanner struct {
	b     []byte
	i     int
	depth int // objects and arrays a Decoder has open, for skip's bound
	err   error
	// scratch holds strings decoded by Skip and a Decoder, reused.
	scratch []byte
}

// New starts scanning b, which the Scanner borrows (see Scanner).
func New(b []byte) Scanner { return Scanner{b: b} }

// Err is the first error met, nil when none.
func (s *Scanner) Err() error { return s.err }

// fail records the first error, at the current offset, and returns it.
func (s *Scanner) fail(msg string) error {
	if s.err == nil {
		s.err = &SyntaxError{Msg: msg, Offset: s.i}
	}
	return s.err
}

// unexpected reports the byte at the current offset as invalid.
func (s *Scanner) unexpected() error {
	if s.i >= len(s.b) {
		return s.fail("unexpected end of input")
	}
	c := s.b[s.i]
	if c < 0x20 || c >= utf8.RuneSelf {
		return s.fail("invalid character " + strconv.QuoteRuneToASCII(rune(c)))
	}
	return s.fail("invalid character '" + string(c) + "'")
}

// End checks that nothing but whitespace follows the top-level value.
func (s *Scanner) End() error {
	if s.err != nil {
		return s.err
	}
	if s.Peek() != 0 || s.i < len(s.b) {
		return s.fail("invalid character after top-level value")
	}
	return nil
}

// Peek skips whitespace and returns the next byte, 0 at the end.
func (s *Scanner) Peek() byte {
	for s.i < len(s.b) {
		switch c := s.b[s.i]; c {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return c
		}
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
	case IsNumberStart(c):
		return "a number"
	}
	return "an invalid value"
}

// IsNumberStart reports whether c can start a JSON number.
func IsNumberStart(c byte) bool { return c == '-' || (c >= '0' && c <= '9') }

// Null consumes a null literal if one is next.
func (s *Scanner) Null() (bool, error) {
	if s.Peek() != 'n' {
		return false, nil
	}
	return true, s.Literal("null")
}

// Literal consumes lit (true, false or null), which must be next.
func (s *Scanner) Literal(lit string) error {
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
func (s *Scanner) Bool() (bool, error) {
	if s.Peek() == 't' {
		return true, s.Literal("true")
	}
	return false, s.Literal("false")
}

// Open consumes '{' or '[' (the caller checked which is next).
func (s *Scanner) Open() { s.i++ }

// NextKey advances to the next member of an object whose '{' was read by
// Open (first is true for the first call). It returns the key, or ok=false
// after the closing '}'. The key aliases the input unless it had escapes.
func (s *Scanner) NextKey(first bool) (key []byte, ok bool, err error) {
	if key, ok = s.nextKey(first, false); !ok && s.err != nil {
		return nil, false, s.err
	}
	return key, ok, nil
}

// nextKey is NextKey decoding an escaped key into the scratch buffer when
// scratch is set (see str); after an error it returns false, and s.err
// holds the error.
func (s *Scanner) nextKey(first, scratch bool) (key []byte, ok bool) {
	c := s.Peek()
	if c == '}' {
		// After a value this is the normal end; a '}' right after a comma
		// fails below, where a key is required.
		s.i++
		return nil, false
	}
	if !first {
		if c != ',' {
			s.unexpected()
			return nil, false
		}
		s.i++
		c = s.Peek()
	}
	if c != '"' {
		s.unexpected()
		return nil, false
	}
	if key, ok = s.str(scratch); !ok {
		return nil, false
	}
	if s.Peek() != ':' {
		s.unexpected()
		return nil, false
	}
	s.i++
	return key, true
}

// NextElem advances to the next element of an array whose '[' was read; it
// returns false after the closing ']'.
func (s *Scanner) NextElem(first bool) (bool, error) {
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

// Str reads a string value (the caller has checked that one is next). The
// string shares memory with the input unless it needed unescaping.
func (s *Scanner) Str() (string, error) {
	b, err := s.RawString()
	if len(b) == 0 {
		return "", err
	}
	return unsafe.String(unsafe.SliceData(b), len(b)), err
}

// RawString reads a string whose opening quote is next. Without escapes
// or invalid UTF-8 the result aliases the input; otherwise it is a new
// buffer decoded as encoding/json does (invalid bytes and lone surrogates
// become U+FFFD).
func (s *Scanner) RawString() ([]byte, error) {
	if b, ok := s.str(false); ok {
		return b, nil
	}
	return nil, s.err
}

// Number reads a number per RFC 8259 and returns its text.
func (s *Scanner) Number() ([]byte, error) {
	s.Peek()
	b, i := s.b, s.i
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i+1)
	default:
		s.i = i
		return nil, s.unexpected()
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			s.i = j
			return nil, s.unexpected()
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			s.i = j
			return nil, s.unexpected()
		}
		i = j
	}
	s.i = i
	return b[start:i], nil
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// Int reads a number (the caller has checked IsNumberStart) as an integer.
// isInt is false for a number with a fraction or exponent; values beyond
// the int32 range are clamped to it, which every limit a caller checks
// treats the same as the true value.
func (s *Scanner) Int() (n int, isInt bool, err error) {
	b, err := s.Number()
	if err != nil {
		return 0, false, err
	}
	v, perr := strconv.ParseInt(string(b), 10, 64)
	if perr != nil {
		if ne, ok := perr.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
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
func (s *Scanner) Float() (f float64, inRange bool, err error) {
	b, err := s.Number()
	if err != nil {
		return 0, false, err
	}
	f, perr := strconv.ParseFloat(string(b), 64)
	return f, perr == nil, nil
}

// Skip reads and checks one value of any type.
func (s *Scanner) Skip() error { return s.skip(s.depth) }

// skip reads one value inside depth open objects and arrays.
func (s *Scanner) skip(depth int) error {
	switch c := s.Peek(); c {
	case '{':
		if depth >= MaxDepth {
			return s.fail("nesting too deep")
		}
		s.i++
		for first := true; ; first = false {
			if _, ok := s.nextKey(first, true); !ok {
				return s.err
			}
			if err := s.skip(depth + 1); err != nil {
				return err
			}
		}
	case '[':
		if depth >= MaxDepth {
			return s.fail("nesting too deep")
		}
		s.i++
		for first := true; ; first = false {
			ok, err := s.NextElem(first)
			if err != nil || !ok {
				return err
			}
			if err := s.skip(depth + 1); err != nil {
				return err
			}
		}
	case '"':
		return s.skipString()
	case 't':
		return s.Literal("true")
	case 'f':
		return s.Literal("false")
	case 'n':
		return s.Literal("null")
	default:
		_, err := s.Number()
		return err
	}
}

// Raw reads one value and returns its text, capped so that an append by a
// consumer cannot write into the rest of the input.
func (s *Scanner) Raw() ([]byte, error) {
	start := s.Mark()
	if err := s.Skip(); err != nil {
		return nil, err
	}
	return s.b[start:s.i:s.i], nil
}

// Mark returns the offset where the next value starts, for Since: a
// caller that inspects a value member by member can still keep it whole.
func (s *Scanner) Mark() int {
	s.Peek()
	return s.i
}

// Offset is the position reached in the input, with no whitespace
// skipped (unlike Mark): two offsets tell whether anything was read between
// them, at the cost of a field load.
func (s *Scanner) Offset() int { return s.i }

// Since returns the input from mark to the current position, capped like
// Raw's result.
func (s *Scanner) Since(mark int) []byte { return s.b[mark:s.i:s.i] }

// Rewind moves back to a mark taken earlier, to read a value again (off
// the happy path, e.g. to find a block's type after one of its members did
// not fit). A mark beyond the current position is ignored.
func (s *Scanner) Rewind(mark int) {
	if mark >= 0 && mark <= s.i {
		s.i = mark
	}
}

// Validate reports the first syntax error in a whole document, or nil.
func Validate(b []byte) error {
	s := Scanner{b: b}
	if err := s.Skip(); err != nil {
		return err
	}
	return s.End()
}

// Valid reports whether b is one well-formed JSON value.
func Valid(b []byte) bool { return Validate(b) == nil }

// IsObjectArgs reports whether a tool call's arguments are one JSON object,
// "" counting as {} (the adapters send it so): what Anthropic, Bedrock and
// Gemini require of a call in history.
func IsObjectArgs(args string) bool {
	i := 0
	for i < len(args) && (args[i] == ' ' || args[i] == '\t' || args[i] == '\r' || args[i] == '\n') {
		i++
	}
	if i == len(args) {
		return true
	}
	return args[i] == '{' && Valid(unsafe.Slice(unsafe.StringData(args[i:]), len(args)-i))
}
