package dialect

import (
	"strings"

	"github.com/spillway-gw/spillway/internal/canonical"
)

// The checks below are the same in every caller dialect; each dialect
// words its own error around them.

// ValidToolName reports whether s matches ^[a-zA-Z0-9_-]{1,64}$, the rule
// Anthropic applies to client tool names and OpenAI to function and schema
// names.
func ValidToolName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Declared reports whether a tool of that name is among tools.
func Declared(tools []canonical.Tool, name string) bool {
	for i := range tools {
		if tools[i].Name == name {
			return true
		}
	}
	return false
}

// HasPrefixFold is strings.HasPrefix ignoring ASCII and Unicode case.
func HasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// IsBase64 checks the standard alphabet and padding without decoding.
func IsBase64(s string) bool {
	if s == "" || len(s)%4 != 0 {
		return false
	}
	body := strings.TrimRight(s, "=")
	if len(s)-len(body) > 2 {
		return false
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/') {
			return false
		}
	}
	return true
}
