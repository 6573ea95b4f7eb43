package openai

import (
	"strings"
	"testing"

	"github.com/spillway-gw/spillway/internal/canonical"
)

func TestCheck(t *testing.T) {
	k := 3
	for _, tc := range []struct {
		name string
		req  canonical.Request
		want string
	}{
		{"plain", canonical.Request{}, ""},
		{"hint betas only", canonical.Request{Betas: []string{"prompt-caching-2024-07-31", "token-efficient-tools-2025-02-19"}}, ""},
		{"a Claude beta", canonical.Request{Betas: []string{"interleaved-thinking-2025-05-14"}}, "beta interleaved-thinking-2025-05-14: only Claude's own API"},
		{"an unknown beta is Claude's", canonical.Request{Betas: []string{"new-thing-2027-01-01"}}, "beta new-thing-2027-01-01"},
		{"top_k", canonical.Request{TopK: &k}, "no top_k"},
	} {
		err := New().(*Adapter).Check(&tc.req)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
