package jsonread

import "strconv"

// Decoder reads one document with callbacks, for adapters that pick a few
// fields out of each provider event: null reads as the zero value of what
// was asked for, members and elements left unread are skipped, and on the
// first error every later call is a no-op, so a caller checks End (or Err)
// once. It is the Scanner with that convenience on top. The zero value is
// ready after Reset.
type Decoder struct{ s Scanner }

// Reset starts decoding data, keeping the Decoder's scratch buffer.
func (d *Decoder) Reset(data []byte) {
	d.s = Scanner{b: data, scratch: d.s.scratch[:0]}
}

// Err is the first error met, nil when none.
func (d *Decoder) Err() error { return d.s.err }

// End checks that nothing but whitespace follows the document and returns
// the first error met.
func (d *Decoder) End() error { return d.s.End() }

// fail records a shape error at the current offset and stops decoding.
func (d *Decoder) fail(msg string) {
	d.s.fail(msg)
	d.s.i = len(d.s.b)
}

// Peek returns the first byte of the next value ('{', '[', '"', 'n', 't',
// 'f', '-' or a digit), 0 at the end or after an error.
func (d *Decoder) Peek() byte {
	if d.s.err != nil {
		return 0
	}
	return d.s.Peek()
}

// Object reads an object, calling fn with each key. fn reads the member's
// value with one Decoder method, or leaves it alone to have it skipped. key
// is valid only until fn reads the value. null reads as an empty object.
//
// Object and Array are the per-event hot path: their steps are written
// out rather than shared through helpers the compiler would not inline.
func (d *Decoder) Object(fn func(key []byte)) {
	s := &d.s
	if s.err != nil {
		return
	}
	switch s.Peek() {
	case '{':
	case 'n':
		s.Literal("null")
		return
	default:
		d.fail("expected an object")
		return
	}
	if s.depth >= MaxDepth {
		s.fail("nesting too deep")
		return
	}
	s.i++
	s.depth++
	for first := true; ; first = false {
		// Scanner.nextKey's steps, written out.
		c := s.Peek()
		if c == '}' {
			s.i++
			s.depth--
			return
		}
		if !first {
			if c != ',' {
				s.unexpected()
				return
			}
			s.i++
			c = s.Peek()
		}
		if c != '"' {
			s.unexpected()
			return
		}
		key, ok := s.str(true)
		if !ok {
			return
		}
		if s.Peek() != ':' {
			s.unexpected()
			return
		}
		s.i++
		start := s.Mark()
		if start == len(s.b) {
			s.unexpected()
			return
		}
		fn(key)
		if s.err == nil && s.i == start {
			s.Skip() // fn left the value unread
		}
		if s.err != nil {
			return
		}
	}
}

// Array reads an array, calling fn for each element; fn reads it with one
// Decoder method or leaves it to be skipped. null reads as an empty array.
func (d *Decoder) Array(fn func()) {
	s := &d.s
	if s.err != nil {
		return
	}
	switch s.Peek() {
	case '[':
	case 'n':
		s.Literal("null")
		return
	default:
		d.fail("expected an array")
		return
	}
	if s.depth >= MaxDepth {
		s.fail("nesting too deep")
		return
	}
	s.i++
	s.depth++
	for first := true; ; first = false {
		if ok, err := s.NextElem(first); !ok || err != nil {
			s.depth--
			return
		}
		start := s.i // NextElem stopped at the element
		fn()
		if s.err == nil && s.i == start {
			s.Skip() // fn left the element unread
		}
		if s.err != nil {
			return
		}
	}
}

// IsNull reads a null if one comes next and reports whether it did.
func (d *Decoder) IsNull() bool {
	if d.s.err != nil || d.s.Peek() != 'n' {
		return false
	}
	return d.s.Literal("null") == nil
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
	if d.s.err != nil {
		return nil
	}
	switch d.s.Peek() {
	case '"':
		b, _ := d.s.str(true)
		return b
	case 'n':
		d.s.Literal("null")
	default:
		d.fail("expected a string")
	}
	return nil
}

// Int reads an integer (null reads as 0).
func (d *Decoder) Int() int {
	if d.s.err != nil {
		return 0
	}
	if d.s.Peek() == 'n' {
		d.s.Literal("null")
		return 0
	}
	start := d.s.i
	b, err := d.s.Number()
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(string(b))
	if err != nil {
		d.s.i = start
		d.fail("expected an integer")
		return 0
	}
	return n
}

// Bool reads true or false (null reads as false).
func (d *Decoder) Bool() bool {
	if d.s.err != nil {
		return false
	}
	switch d.s.Peek() {
	case 't':
		return d.s.Literal("true") == nil
	case 'f':
		d.s.Literal("false")
	case 'n':
		d.s.Literal("null")
	default:
		d.fail("expected a boolean")
	}
	return false
}

// Raw reads any value, checking it, and returns its bytes, which alias the
// input (capped, so an append never writes into it).
func (d *Decoder) Raw() []byte {
	if d.s.err != nil {
		return nil
	}
	raw, _ := d.s.Raw()
	return raw
}

// Skip reads and checks any value, discarding it.
func (d *Decoder) Skip() {
	if d.s.err == nil {
		d.s.Skip()
	}
}
