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

// ImageURLPart reads an OpenAI image_url value: an http(s) URL, or a data
// URL of the form data:image/<type>;base64,<data>. problem is set, to be
// worded as "Invalid '<field>': <problem>.", when url is neither.
func ImageURLPart(url string) (part canonical.Part, problem string) {
	for _, scheme := range [...]string{"https://", "http://"} {
		if HasPrefixFold(url, scheme) {
			if len(url) == len(scheme) {
				return canonical.Part{}, "the URL has no host"
			}
			return canonical.Part{Type: canonical.PartImage, ImageURL: url}, ""
		}
	}
	if !HasPrefixFold(url, "data:") {
		return canonical.Part{}, "expected an http(s) URL or a data URL of the form 'data:image/png;base64,<data>'"
	}
	meta, data, ok := strings.Cut(url[len("data:"):], ",")
	mime, ok2 := strings.CutSuffix(meta, ";base64")
	if !ok || !ok2 || !HasPrefixFold(mime, "image/") || len(mime) == len("image/") || strings.ContainsAny(mime, ";, ") {
		return canonical.Part{}, "a data URL must have the form 'data:image/<type>;base64,<data>'"
	}
	if !IsBase64(data) {
		return canonical.Part{}, "the data URL's payload is not valid base64"
	}
	return canonical.Part{Type: canonical.PartImage, MediaType: strings.ToLower(mime), Data: data}, ""
}

// ThinkingText joins the text of an answer's thinking blocks, for dialects
// that show reasoning as one string.
func ThinkingText(parts []canonical.Part) string {
	var b strings.Builder
	for _, p := range parts {
		if p.Type == canonical.PartThinking {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// signaturePrefix marks a reasoning signature that spillway hands a caller
// for a provider family other than Claude: "spw:<family>:<signature>".
// Claude's signatures go out unchanged, so a conversation a caller began
// with Anthropic directly continues through spillway and back.
const signaturePrefix = "spw:"

// EncodeSignature is the signature a caller is given for a reasoning block.
func EncodeSignature(sig string, f canonical.Family) string {
	if f == canonical.FamilyClaude || f == "" {
		return sig
	}
	return signaturePrefix + string(f) + ":" + sig
}

// DecodeSignature reads a signature a caller sent back: its family and the
// provider's own signature. An unmarked one is Claude's.
func DecodeSignature(s string) (string, canonical.Family) {
	rest, ok := strings.CutPrefix(s, signaturePrefix)
	if !ok {
		return s, canonical.FamilyClaude
	}
	fam, sig, ok := strings.Cut(rest, ":")
	if !ok {
		return s, canonical.FamilyClaude
	}
	return sig, canonical.Family(fam)
}

// redactedMark follows the family in a marked redacted block.
const redactedMark = "/redacted"

// MarkReasoning renders a reasoning block for a dialect whose one field
// for it is opaque (Responses' encrypted_content): "spw:<family>:" then the
// signature of a thinking block, "spw:<family>/redacted:" then the data of
// a redacted one.
func MarkReasoning(p canonical.Part) string {
	if p.Type == canonical.PartRedactedThinking {
		return signaturePrefix + string(p.Family) + redactedMark + ":" + p.Data
	}
	return signaturePrefix + string(p.Family) + ":" + p.Signature
}

// ReadReasoning reverses MarkReasoning, with text the block's visible
// reasoning. ok is false for a value spillway did not mark: another
// service's encrypted reasoning, which no rung can read.
func ReadReasoning(s, text string) (canonical.Part, bool) {
	rest, ok := strings.CutPrefix(s, signaturePrefix)
	if !ok {
		return canonical.Part{}, false
	}
	fam, payload, ok := strings.Cut(rest, ":")
	if !ok || fam == "" {
		return canonical.Part{}, false
	}
	if f, ok := strings.CutSuffix(fam, redactedMark); ok {
		return canonical.Part{Type: canonical.PartRedactedThinking, Data: payload, Family: canonical.Family(f)}, true
	}
	return canonical.Part{Type: canonical.PartThinking, Text: text, Signature: payload, Family: canonical.Family(fam)}, true
}
