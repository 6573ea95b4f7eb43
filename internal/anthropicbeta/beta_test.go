package anthropicbeta

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in   []string
		want string
		err  error
	}{
		{nil, "[]", nil},
		{[]string{""}, "[]", nil},
		{[]string{" a-1 , ,b-2", "a-1", "c-3"}, "[a-1 b-2 c-3]", nil},
		{[]string{"oauth-2025-04-20,prompt-caching-2024-07-31"}, "[prompt-caching-2024-07-31]", nil},
		{[]string{strings.Repeat("x,", MaxFlags) + "y"}, "", ErrTooMany},
		{[]string{strings.Repeat("x", MaxFlagLen+1)}, "", ErrTooLong},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if !errors.Is(err, tt.err) {
			t.Errorf("Parse(%q) err = %v, want %v", tt.in, err, tt.err)
			continue
		}
		if err == nil && fmt.Sprint(append([]string{}, got...)) != tt.want {
			t.Errorf("Parse(%q) = %v, want %s", tt.in, got, tt.want)
		}
	}
}

func TestKinds(t *testing.T) {
	for flag, want := range map[string]Kind{
		"prompt-caching-2024-07-31":       Hint,
		"message-threads-2026-08-12":      Hint,
		"interleaved-thinking-2025-05-14": Claude,
		"context-1m-2025-08-07":           Claude,
		"some-future-beta-2027-01-01":     Claude,
		"oauth-2025-04-20":                Dropped,
	} {
		if got := Of(flag); got != want {
			t.Errorf("Of(%s) = %d, want %d", flag, got, want)
		}
	}
	if got := FirstClaude([]string{"prompt-caching-2024-07-31", "context-1m-2025-08-07"}); got != "context-1m-2025-08-07" {
		t.Errorf("FirstClaude = %q", got)
	}
	if got := FirstClaude([]string{"prompt-caching-2024-07-31"}); got != "" {
		t.Errorf("FirstClaude of hints = %q", got)
	}
}

// FuzzParse: any header values parse or are refused by a bound, never a
// panic, and what is kept respects the bounds.
func FuzzParse(f *testing.F) {
	f.Add("a,b", "c")
	f.Add(" , ,oauth-2025-04-20", strings.Repeat("x,", 40))
	f.Fuzz(func(t *testing.T, a, b string) {
		flags, err := Parse([]string{a, b})
		if err != nil {
			return
		}
		if len(flags) > MaxFlags {
			t.Fatalf("%d flags kept", len(flags))
		}
		for _, f := range flags {
			if f == "" || len(f) > MaxFlagLen || strings.Contains(f, ",") || Of(f) == Dropped {
				t.Fatalf("kept %q", f)
			}
		}
	})
}
