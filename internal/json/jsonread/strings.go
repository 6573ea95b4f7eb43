package jsonread

import (
	"bytes"
	"encoding/binary"
	"unicode/utf16"
	"unicode/utf8"
)

// str reads the string whose opening quote is at s.i. Contents without
// escapes or invalid UTF-8 alias the input. Others are decoded as
// encoding/json decodes them: into the Scanner's scratch buffer when
// scratch is set (valid until the next such call), else into a new buffer.
// ok is false after an error, which s.err holds. Every string of every
// document passes here, so the scan is written out in one function.
func (s *Scanner) str(scratch bool) (_ []byte, ok bool) {
	b, start := s.b, s.i+1
	i, escaped, high := start, false, -1
	for {
		// Eight bytes at a time while none needs a look: most of a body's
		// bytes are plain ASCII text.
		for i+8 <= len(b) && plain8(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		// Then byte by byte up to the byte that needs one (within eight).
		for i < len(b) && b[i] >= 0x20 && b[i] < utf8.RuneSelf && b[i] != '"' && b[i] != '\\' {
			i++
		}
		if i >= len(b) {
			s.i = len(b)
			s.fail("unexpected end of input in string")
			return nil, false
		}
		c := b[i]
		if c == '"' {
			break
		}
		switch {
		case c == '\\':
			escaped = true
			i += 2 // the escaped byte too, so an escaped quote is passed
		case c >= utf8.RuneSelf:
			if high < 0 {
				high = i
			}
			for i++; i < len(b) && b[i] >= utf8.RuneSelf; i++ {
			}
		default: // a control character
			if bytes.IndexByte(b[i:], '"') < 0 {
				// A string that never ends is reported as such first.
				s.i = len(b)
				s.fail("unexpected end of input in string")
				return nil, false
			}
			s.i = i
			s.fail("invalid control character in string")
			return nil, false
		}
	}
	raw := b[start:i]
	s.i = i + 1
	if !escaped && (high < 0 || utf8.Valid(b[high:i])) {
		return raw, true
	}
	var out []byte
	if scratch {
		out = s.unescape(s.scratch[:0], start, raw)
		s.scratch = out[:0]
	} else {
		out = s.unescape(make([]byte, 0, len(raw)), start, raw)
	}
	return out, s.err == nil
}

// skipString reads and checks a string without keeping it (invalid
// UTF-8 is no error: it decodes as U+FFFD).
func (s *Scanner) skipString() error {
	if _, ok := s.str(true); !ok {
		return s.err
	}
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

// unescape appends the decoded contents raw (which starts at offset start
// of the input) to dst: escapes resolved, invalid UTF-8 and lone
// surrogates as U+FFFD, as encoding/json does. A bad escape stops it, in
// s.err.
func (s *Scanner) unescape(dst []byte, start int, raw []byte) []byte {
	for i := 0; i < len(raw); {
		// Copy a run of plain ASCII at once.
		k := i
		for k < len(raw) && raw[k] < utf8.RuneSelf && raw[k] != '\\' {
			k++
		}
		dst = append(dst, raw[i:k]...)
		i = k
		if i == len(raw) {
			break
		}
		if raw[i] >= utf8.RuneSelf {
			r, n := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && n == 1 {
				dst = append(dst, "\uFFFD"...)
			} else {
				dst = append(dst, raw[i:i+n]...)
			}
			i += n
			continue
		}
		if i+1 >= len(raw) {
			s.i = start + i
			s.fail("invalid escape in string")
			return dst
		}
		switch e := raw[i+1]; e {
		case '"', '\\', '/':
			dst = append(dst, e)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(raw[i+2:])
			if !ok {
				s.i = start + i
				s.fail("invalid \\u escape in string")
				return dst
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if i+1 < len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					if r2, ok := hex4(raw[i+2:]); ok {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							dst = utf8.AppendRune(dst, dec)
							i += 6
							continue
						}
					}
				}
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default:
			s.i = start + i
			s.fail("invalid escape in string")
			return dst
		}
		i += 2
	}
	return dst
}

// hex4 reads the four hex digits of a \u escape from the start of b.
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
