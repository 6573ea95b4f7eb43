// Package wirejson reads and writes provider wire JSON without reflection:
// a validating pull decoder that picks the few fields an adapter needs out
// of each stream event, and append-style writers for request bodies.
//
// encoding/json costs several microseconds per stream event, which across a
// 20-event answer exceeds the gateway's whole per-stream budget (DESIGN.md,
// "The hot path"); this package does the same work in a fraction of that.
package wirejson

import (
	"encoding/binary"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth bounds nesting, so hostile input cannot exhaust the stack.
const maxDepth = 512

// SyntaxError reports invalid JSON, or JSON of another shape than expected.
type SyntaxError struct {
	Msg    string
	Offset int
}

func (e *SyntaxError) Error() string {
	return "wirejson: " + e.Msg + " at offset " + strconv.Itoa(e.Offset)
}

// Decoder reads one JSON document. Methods read the next value; on the
// first error the Decoder stops and every later call is a no-op, so a
// caller checks Err once at the end. The zero value is ready after Reset.
type Decoder struct {
	data    []byte
	pos     int
	depth   int
	err     error
	scratch []byte
}

// Reset starts decoding data, keeping the Decoder's scratch buffer.
func (d *Decoder) Reset(data []byte) {
	d.data, d.pos, d.depth, d.err = data, 0, 0, nil
}

// Err is the first error met, nil when none.
func (d *Decoder) Err() error { return d.err }

// End checks that nothing but whitespace follows the document and returns
// the first error met.
func (d *Decoder) End() error {
	if d.err == nil {
		if d.peek(); d.pos < len(d.data) {
			d.fail("data after the top-level value")
		}
	}
	return d.err
}

func (d *Decoder) fail(msg string) {
	if d.err == nil {
		d.err = &SyntaxError{Msg: msg, Offset: d.pos}
	}
	d.pos = len(d.data)
}

// peek skips whitespace and returns the next byte, 0 at the end.
func (d *Decoder) peek() byte {
	for d.pos < len(d.data) {
		switch c := d.data[d.pos]; c {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return c
		}
	}
	return 0
}

// Peek returns the first byte of the next value ('{', '[', '"', 'n', 't',
// 'f', '-' or a digit), 0 at the end or after an error.
func (d *Decoder) Peek() byte {
	if d.err != nil {
		return 0
	}
	return d.peek()
}

// Object reads an object, calling fn with each key. fn reads the member's
// value with one Decoder method, or leaves it alone to have it skipped. key
// is valid only until fn reads the value. null reads as an empty object.
func (d *Decoder) Object(fn func(key []byte)) {
	if d.err != nil {
		return
	}
	switch d.peek() {
	case 'n':
		d.literal("null")
		return
	case '{':
	default:
		d.fail("expected an object")
		return
	}
	d.pos++
	if d.depth++; d.depth > maxDepth {
		d.fail("nesting too deep")
		return
	}
	if d.peek() == '}' {
		d.pos++
		d.depth--
		return
	}
	for {
		if d.peek() != '"' {
			d.fail("expected a member name")
			return
		}
		key := d.str()
		if d.err != nil {
			return
		}
		if d.peek() != ':' {
			d.fail("expected ':'")
			return
		}
		d.pos++
		if d.peek() == 0 {
			d.fail("unexpected end")
			return
		}
		start := d.pos
		fn(key)
		if d.err != nil {
			return
		}
		if d.pos == start {
			d.Skip()
		}
		switch d.peek() {
		case ',':
			d.pos++
		case '}':
			d.pos++
			d.depth--
			return
		default:
			d.fail("expected ',' or '}'")
			return
		}
	}
}

// Array reads an array, calling fn for each element; fn reads it with one
// Decoder method or leaves it to be skipped. null reads as an empty array.
func (d *Decoder) Array(fn func()) {
	if d.err != nil {
		return
	}
	switch d.peek() {
	case 'n':
		d.literal("null")
		return
	case '[':
	default:
		d.fail("expected an array")
		return
	}
	d.pos++
	if d.depth++; d.depth > maxDepth {
		d.fail("nesting too deep")
		return
	}
	if d.peek() == ']' {
		d.pos++
		d.depth--
		return
	}
	for {
		if d.peek() == 0 {
			d.fail("unexpected end")
			return
		}
		start := d.pos
		fn()
		if d.err != nil {
			return
		}
		if d.pos == start {
			d.Skip()
		}
		switch d.peek() {
		case ',':
			d.pos++
		case ']':
			d.pos++
			d.depth--
			return
		default:
			d.fail("expected ',' or ']'")
			return
		}
	}
}

// IsNull reads a null if one comes next and reports whether it did.
func (d *Decoder) IsNull() bool {
	if d.err != nil || d.peek() != 'n' {
		return false
	}
	d.literal("null")
	return d.err == nil
}

// Str reads a string (null reads as "").
func (d *Decoder) Str() string {
	b := d.Bytes()
	if len(b) == 0 {
		return ""
	}
	return string(b)
}

// Bytes reads a string (null reads as empty) without allocating: the slice
// aliases the input or the Decoder's scratch buffer and is valid until the
// next call. Use it to compare, Str to keep.
func (d *Decoder) Bytes() []byte {
	if d.err != nil {
		return nil
	}
	switch d.peek() {
	case '"':
		return d.str()
	case 'n':
		d.literal("null")
	default:
		d.fail("expected a string")
	}
	return nil
}

// Int reads an integer (null reads as 0).
func (d *Decoder) Int() int {
	if d.err != nil {
		return 0
	}
	c := d.peek()
	if c == 'n' {
		d.literal("null")
		return 0
	}
	start := d.pos
	d.number()
	if d.err != nil {
		return 0
	}
	n, err := strconv.Atoi(string(d.data[start:d.pos]))
	if err != nil {
		d.pos = start
		d.fail("expected an integer")
		return 0
	}
	return n
}

// Bool reads true or false (null reads as false).
func (d *Decoder) Bool() bool {
	if d.err != nil {
		return false
	}
	switch d.peek() {
	case 't':
		d.literal("true")
		return d.err == nil
	case 'f':
		d.literal("false")
	case 'n':
		d.literal("null")
	default:
		d.fail("expected a boolean")
	}
	return false
}

// Raw reads any value, checking it, and returns its bytes. The slice
// aliases the input.
func (d *Decoder) Raw() []byte {
	if d.err != nil {
		return nil
	}
	d.peek()
	start := d.pos
	d.Skip()
	if d.err != nil {
		return nil
	}
	return d.data[start:d.pos]
}

// Skip reads and checks any value, discarding it.
func (d *Decoder) Skip() {
	if d.err != nil {
		return
	}
	switch c := d.peek(); {
	case c == '{':
		d.Object(func([]byte) {})
	case c == '[':
		d.Array(func() {})
	case c == '"':
		d.str()
	case c == 't':
		d.literal("true")
	case c == 'f':
		d.literal("false")
	case c == 'n':
		d.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		d.number()
	case c == 0:
		d.fail("unexpected end")
	default:
		d.fail("invalid character")
	}
}

func (d *Decoder) literal(lit string) {
	if len(d.data)-d.pos >= len(lit) && string(d.data[d.pos:d.pos+len(lit)]) == lit {
		d.pos += len(lit)
		return
	}
	d.fail("invalid literal")
}

// number consumes a number per the JSON grammar.
func (d *Decoder) number() {
	data, i := d.data, d.pos
	if i < len(data) && data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && data[i] >= '1' && data[i] <= '9':
		for i++; i < len(data) && data[i] >= '0' && data[i] <= '9'; i++ {
		}
	default:
		d.fail("invalid number")
		return
	}
	if i < len(data) && data[i] == '.' {
		i++
		if i >= len(data) || data[i] < '0' || data[i] > '9' {
			d.fail("invalid number")
			return
		}
		for ; i < len(data) && data[i] >= '0' && data[i] <= '9'; i++ {
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= len(data) || data[i] < '0' || data[i] > '9' {
			d.fail("invalid number")
			return
		}
		for ; i < len(data) && data[i] >= '0' && data[i] <= '9'; i++ {
		}
	}
	d.pos = i
}

// str consumes a string at d.pos (which is '"') and returns its contents.
// Strings without escapes and with valid UTF-8 alias the input.
func (d *Decoder) str() []byte {
	data := d.data
	firstHigh := -1 // the first non-ASCII byte, where UTF-8 checks start
	i := d.pos + 1
	// Eight bytes at a time while none needs a look: ids, models and
	// fingerprints are most of a chunk's bytes.
	for i+8 <= len(data) && plain8(binary.LittleEndian.Uint64(data[i:])) {
		i += 8
	}
	for ; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			if firstHigh >= 0 && !utf8.Valid(data[firstHigh:i]) {
				return d.strSlow(firstHigh)
			}
			s := data[d.pos+1 : i]
			d.pos = i + 1
			return s
		case c == '\\':
			if firstHigh >= 0 {
				return d.strSlow(firstHigh)
			}
			return d.strSlow(i)
		case c < 0x20:
			d.pos = i
			d.fail("control character in string")
			return nil
		case c >= utf8.RuneSelf && firstHigh < 0:
			firstHigh = i
		}
	}
	d.fail("unterminated string")
	return nil
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// plain8 reports whether the eight bytes in x are printable ASCII other
// than '"' and '\\' (a string's ordinary bytes). The zero-byte tests may
// flag a byte that is fine (a borrow from a real hit), never miss one, so
// false means "look byte by byte".
func plain8(x uint64) bool {
	q := x ^ ('"' * lsb)
	b := x ^ ('\\' * lsb)
	return ((x-0x20*lsb)&^x|(q-lsb)&^q|(b-lsb)&^b|x)&msb == 0
}

// strSlow decodes a string with escapes or invalid UTF-8 into scratch, the
// way encoding/json does: invalid UTF-8 and lone surrogates become U+FFFD.
func (d *Decoder) strSlow(from int) []byte {
	data := d.data
	out := append(d.scratch[:0], data[d.pos+1:from]...)
	i := from
	for i < len(data) {
		c := data[i]
		switch {
		case c == '"':
			d.scratch = out
			d.pos = i + 1
			return out
		case c == '\\':
			if i+1 >= len(data) {
				d.pos = i
				d.fail("unterminated string")
				return nil
			}
			switch e := data[i+1]; e {
			case '"', '\\', '/':
				out = append(out, e)
				i += 2
			case 'b':
				out, i = append(out, '\b'), i+2
			case 'f':
				out, i = append(out, '\f'), i+2
			case 'n':
				out, i = append(out, '\n'), i+2
			case 'r':
				out, i = append(out, '\r'), i+2
			case 't':
				out, i = append(out, '\t'), i+2
			case 'u':
				r, ok := hex4(data, i+2)
				if !ok {
					d.pos = i
					d.fail("invalid \\u escape")
					return nil
				}
				i += 6
				if utf16.IsSurrogate(r) {
					r2, ok2 := rune(-1), false
					if i+1 < len(data) && data[i] == '\\' && data[i+1] == 'u' {
						r2, ok2 = hex4(data, i+2)
					}
					if dec := utf16.DecodeRune(r, r2); ok2 && dec != utf8.RuneError {
						r = dec
						i += 6
					} else {
						r = utf8.RuneError
					}
				}
				out = utf8.AppendRune(out, r)
			default:
				d.pos = i
				d.fail("invalid escape")
				return nil
			}
		case c < 0x20:
			d.pos = i
			d.fail("control character in string")
			return nil
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size == 1 {
				out = append(out, "\uFFFD"...)
			} else {
				out = append(out, data[i:i+size]...)
			}
			i += size
		}
	}
	d.scratch = out
	d.fail("unterminated string")
	return nil
}

func hex4(data []byte, i int) (rune, bool) {
	if i+4 > len(data) {
		return 0, false
	}
	var r rune
	for _, c := range data[i : i+4] {
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

// IsObjectArgs reports whether a tool call's arguments are one JSON object,
// "" counting as {} (the adapters send it so): what Anthropic, Bedrock and
// Gemini require of a call in history.
func IsObjectArgs(args string) bool {
	s := strings.TrimLeft(args, " \t\r\n")
	if s == "" {
		return true
	}
	return s[0] == '{' && Valid([]byte(s))
}

// Valid reports whether data is one well-formed JSON value.
func Valid(data []byte) bool {
	var d Decoder
	d.Reset(data)
	d.Skip()
	return d.End() == nil
}
