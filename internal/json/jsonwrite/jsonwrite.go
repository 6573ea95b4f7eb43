// Package jsonwrite is spillway's one JSON writer: append-style functions
// without reflection or allocation, for encoders on the hot path.
//
// AppendString produces exactly the bytes encoding/json produces with HTML
// escaping turned off: the same short escapes, \u00XX for other control
// characters, \ufffd for each invalid UTF-8 byte and escaped U+2028/U+2029,
// so every output is valid UTF-8 JSON that any parser reads back.
package jsonwrite

import (
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/spillway-gw/spillway/internal/json/jsonread"
)

const hex = "0123456789abcdef"

// AppendString appends s as a quoted JSON string.
func AppendString[S ~string | ~[]byte](dst []byte, s S) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		// Converting at most 4 bytes to a string does not escape to the heap.
		n := min(len(s)-i, utf8.UTFMax)
		c, size := utf8.DecodeRuneInString(string(s[i : i+n]))
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		// U+2028 and U+2029 are valid JSON but break JavaScript embedding;
		// encoding/json escapes them, so do we.
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendStringOrNull appends s as a JSON string, or null when s is empty.
func AppendStringOrNull(dst []byte, s string) []byte {
	if s == "" {
		return append(dst, "null"...)
	}
	return AppendString(dst, s)
}

// AppendInt appends n as a JSON number.
func AppendInt(dst []byte, n int64) []byte { return strconv.AppendInt(dst, n, 10) }

// AppendBool appends true or false.
func AppendBool(dst []byte, b bool) []byte { return strconv.AppendBool(dst, b) }

// AppendFloat appends f as encoding/json writes a float64. NaN and
// infinities have no JSON form: callers check Finite first.
func AppendFloat(dst []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 → e-9, as encoding/json does.
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// Finite reports whether f has a JSON form.
func Finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// Key appends a member name and its colon, preceded by a comma unless the
// object was just opened. name must need no escaping (wire field names).
func Key(dst []byte, name string) []byte {
	dst = Sep(dst)
	dst = append(dst, '"')
	dst = append(dst, name...)
	return append(dst, '"', ':')
}

// Sep appends the comma that separates a value from the one before it,
// unless dst ends with '{' or '[' (the first member or element).
func Sep(dst []byte) []byte {
	if n := len(dst); n > 0 && dst[n-1] != '{' && dst[n-1] != '[' {
		dst = append(dst, ',')
	}
	return dst
}

// AppendCompact appends the JSON value raw without insignificant
// whitespace, reporting false (and appending nothing) when raw is not one
// well-formed value.
func AppendCompact(dst []byte, raw []byte) ([]byte, bool) {
	if !jsonread.Valid(raw) {
		return dst, false
	}
	inStr := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if inStr {
			dst = append(dst, c)
			switch c {
			case '\\':
				i++
				dst = append(dst, raw[i])
			case '"':
				inStr = false
			}
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '"':
			inStr = true
		}
		dst = append(dst, c)
	}
	return dst, true
}
