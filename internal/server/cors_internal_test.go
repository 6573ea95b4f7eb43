package server

import (
	"strings"
	"testing"
)

// Only well-formed x-stainless-* names are echoed, and a flood of them is
// cut short.
func TestCORSRequestHeaders(t *testing.T) {
	got := corsRequestHeaders([]string{"X-Stainless-OS, x-stainless-, x-stainless-a b, x-stainless-é, x-custom", "x-stainless-lang"})
	for _, want := range []string{"authorization", "x-stainless-os", "x-stainless-lang"} {
		if !strings.Contains(got, want) {
			t.Errorf("%s missing from %s", want, got)
		}
	}
	for _, bad := range []string{"x-stainless-,", "x-stainless-a b", "é", "x-custom"} {
		if strings.Contains(got+",", bad) {
			t.Errorf("%q echoed: %s", bad, got)
		}
	}
	flood := strings.Repeat("x-stainless-x,", 10000)
	if n := strings.Count(corsRequestHeaders([]string{flood}), "x-stainless-x"); n != 32 {
		t.Errorf("a flood echoed %d names, want 32", n)
	}
}
