package catalog

import (
	"strings"
	"testing"
	"time"
)

func certified(date, maxAge string) string {
	extra := ""
	if maxAge != "" {
		extra = ", max_age: " + maxAge
	}
	return `deployments:
  - {id: a, provider: openai, base_url: "https://a.example", model: m, funding: byok}
  - {id: b, provider: openai, base_url: "https://b.example", model: m, funding: byok}
pools:
  - id: p
    model: m
    deployments: [a, b]
    equivalence: {by: me, date: "` + date + `", evidence: e` + extra + `}
routes: [{model: m, pool: p}]
`
}

func TestCertificationMaxAge(t *testing.T) {
	now := time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)
	tests := []struct {
		name, date, maxAge string
		want               string // "" for no warning
	}{
		{"fresh", "2026-11-01", "", ""},
		{"on the 90th day", "2026-09-02", "", ""},
		{"past the default 90 days", "2026-09-01", "", `test.yaml:8: pools[0].equivalence.date: pool "p" was certified 2026-09-01, 91 days ago: older than its max_age (90d); run spillway eval on it again`},
		{"past its own max_age in days", "2026-11-01", "7d", "30 days ago: older than its max_age (7d)"},
		{"within a longer max_age", "2025-01-01", "3650d", ""},
		{"max_age as a Go duration", "2026-11-29", "36h", "older than its max_age (36h0m0s)"},
		{"max_age of whole days as hours", "2026-11-01", "240h", "older than its max_age (10d)"},
		{"today", "2026-12-01", "", ""},
		{"tomorrow, a time zone ahead", "2026-12-02", "", ""},
		{"in the future", "2026-12-05", "", `pool "p" is certified on 2026-12-05, a date in the future`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(certified(tc.date, tc.maxAge)), "test.yaml")
			if err != nil {
				t.Fatal(err)
			}
			ps := c.DueCertifications("test.yaml", now)
			switch {
			case tc.want == "" && len(ps) > 0:
				t.Errorf("warned: %v", ps)
			case tc.want != "" && (len(ps) != 1 || !strings.Contains(ps[0].String(), tc.want)):
				t.Errorf("got %v, want one warning with %q", ps, tc.want)
			}
		})
	}
}

func TestCertificationMaxAgeRefused(t *testing.T) {
	for _, v := range []string{`"ninety"`, `-1d`, `"-5h"`, `90`, `1.5d`, `99999d`, `[1]`} {
		_, err := Parse([]byte(certified("2026-11-01", v)), "test.yaml")
		if err == nil || !strings.Contains(err.Error(), "test.yaml:8: pools[0].equivalence.max_age:") {
			t.Errorf("max_age %s: %v", v, err)
		}
	}
}

// A max_age round-trips through the snapshot's YAML in days; left out, it
// stays out.
func TestCertificationMaxAgeRoundTrip(t *testing.T) {
	for _, tc := range []struct{ in, want string }{{"30d", "max_age: 30d"}, {"", ""}} {
		c, err := Parse([]byte(certified("2026-11-01", tc.in)), "test.yaml")
		if err != nil {
			t.Fatal(err)
		}
		s, err := Build(c, "test.yaml")
		if err != nil {
			t.Fatal(err)
		}
		out := render(t, s)
		if tc.want != "" && !strings.Contains(out, tc.want) || tc.want == "" && strings.Contains(out, "max_age") {
			t.Errorf("max_age %q renders:\n%s", tc.in, out)
		}
	}
}
