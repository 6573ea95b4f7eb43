// Package anthropicbeta knows Anthropic's beta flags (the anthropic-beta
// header): which are hints that never change what a caller gets back, so
// any rung may serve them; which only Claude's own APIs (Anthropic, and
// Bedrock through its anthropic_beta field) can honour; and which concern
// the caller's own credential and are never forwarded.
package anthropicbeta

import (
	"errors"
	"strings"
)

// Kind is what a beta flag means to a rung.
type Kind uint8

const (
	// Claude betas change the answer, or may: only rungs that speak to
	// Claude's own API (Anthropic, Bedrock) can honour them. Every beta
	// this table does not name is treated as one.
	Claude Kind = iota
	// Hint betas change nothing a caller can see through this gateway:
	// deprecated flags for features now generally available, or flags for
	// features the gateway handles itself. Any rung may serve them;
	// Anthropic rungs still receive them.
	Hint
	// Dropped betas are about how the caller authenticates to the gateway
	// and are never sent upstream.
	Dropped
)

// known lists the flags whose meaning is settled. Source: Anthropic's SDK
// changelogs (anthropic-sdk-go v2.10.0 lists the deprecated values that
// the API still accepts) and the SDKs' beta constants.
var known = map[string]Kind{
	"prompt-caching-2024-07-31":              Hint, // GA; deprecated flag
	"pdfs-2024-09-25":                        Hint, // GA; documents are refused per block anyway
	"token-counting-2024-11-01":              Hint, // GA; count_tokens is served without it
	"message-batches-2024-09-24":             Hint, // batches are not served
	"token-efficient-tools-2025-02-19":       Hint, // tool-call token efficiency only
	"extended-cache-ttl-2025-04-11":          Hint, // cache lifetime, never the answer
	"fine-grained-tool-streaming-2025-05-14": Hint, // how tool input is chunked
	"structured-outputs-2025-11-13":          Hint, // output formats are mapped per rung
	"structured-outputs-2025-12-15":          Hint,
	"message-threads-2026-08-12":             Hint, // a 'thread' is refused so SDKs fall back
	"oauth-2025-04-20":                       Dropped,
}

// Of classifies one flag.
func Of(flag string) Kind {
	if k, ok := known[flag]; ok {
		return k
	}
	return Claude
}

// Bounds on what a caller may send: real requests carry a handful of flags.
const (
	MaxFlags   = 32
	MaxFlagLen = 128
)

// ErrTooMany and ErrTooLong refuse a header past the bounds.
var (
	ErrTooMany = errors.New("too many anthropic-beta flags")
	ErrTooLong = errors.New("an anthropic-beta flag is too long")
)

// Parse splits anthropic-beta header values (each a comma-separated list)
// into flags, trimmed, without empties or duplicates, in order. Dropped
// flags are left out.
func Parse(values []string) ([]string, error) {
	var out []string
	n := 0
	for _, v := range values {
		for f := range strings.SplitSeq(v, ",") {
			f = strings.TrimSpace(f)
			if f == "" {
				continue
			}
			if n++; n > MaxFlags {
				return nil, ErrTooMany
			}
			if len(f) > MaxFlagLen {
				return nil, ErrTooLong
			}
			if Of(f) == Dropped || contains(out, f) {
				continue
			}
			out = append(out, f)
		}
	}
	return out, nil
}

// FirstClaude returns the first flag only Claude's APIs can honour, "" when
// every flag is a hint.
func FirstClaude(flags []string) string {
	for _, f := range flags {
		if Of(f) == Claude {
			return f
		}
	}
	return ""
}

func contains(fs []string, f string) bool {
	for _, g := range fs {
		if g == f {
			return true
		}
	}
	return false
}
