package wirejson

import (
	"math"
	"strconv"
	"unicode/utf8"
)

const hex = "0123456789abcdef"

// AppendString appends s as a JSON string, escaped exactly as
// encoding/json does with HTML escaping off: quotes, backslashes and control
// characters escaped, U+2028/U+2029 escaped, invalid UTF-8 as U+FFFD.
func AppendString(dst []byte, s string) []byte {
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
			case '\\', '"':
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
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
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
	if !Valid(raw) {
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
