package catalog

import (
	"testing"
	"time"
)

// Unhappy paths first: every way ledger.retention and log.access are
// refused, each naming its field and line (the routeopts base config is 14
// lines).
func TestRetentionAndAccessLogRefusals(t *testing.T) {
	tests := []struct {
		name, block string
		wants       []want
	}{
		{"retention under a day", "ledger: {retention: 12h}\n", []want{{14, "ledger.retention", "outside 1d..36500d"}}},
		{"retention beyond a century", "ledger: {retention: 40000d}\n", []want{{14, "ledger.retention", "at most 36500d"}}},
		{"retention negative", "ledger: {retention: -1d}\n", []want{{14, "ledger.retention", "whole days"}}},
		{"retention in weeks", "ledger: {retention: 2w}\n", []want{{14, "ledger.retention", `"90d"`}}},
		{"retention without unit", "ledger: {retention: 90}\n", []want{{14, "ledger.retention", `"90d"`}}},
		{"retention as a list", "ledger: {retention: [90d]}\n", []want{{14, "ledger.retention", "expected a retention"}}},
		{"ok above one", "log: {access: {ok: 2}}\n", []want{{14, "log.access.ok", "outside 0..1"}}},
		{"error negative", "log: {access: {error: -0.5}}\n", []want{{14, "log.access.error", "outside 0..1"}}},
		{"client_error not a number", "log: {access: {client_error: .nan}}\n", []want{{14, "log.access.client_error", "outside 0..1"}}},
		{"unknown class", "log: {access: {okay: 0.1}}\n", []want{{14, "log.access.okay", `did you mean "ok"`}}},
		{"several, each on its line", "ledger:\n  retention: 1h\nlog:\n  access:\n    ok: 0.01\n    error: 3\n",
			[]want{{15, "ledger.retention", "outside 1d"}, {19, "log.access.error", "outside 0..1"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			requireProblems(t, parseProblems(t, optsBase+tc.block), tc.wants...)
		})
	}
}

// The defaults are today's behaviour: raw rows kept forever, every access
// line written; what is written reads back.
func TestRetentionAndAccessLogAccepted(t *testing.T) {
	tests := []struct {
		block         string
		retention     time.Duration
		ok, cli, fail float64
	}{
		{"", 0, 1, 1, 1},
		{"ledger: {retention: 90d}\n", 90 * 24 * time.Hour, 1, 1, 1},
		{"ledger: {retention: 36h}\n", 36 * time.Hour, 1, 1, 1},
		{"ledger: {retention: forever}\n", 0, 1, 1, 1},
		{"log: {access: {ok: 0.01}}\n", 0, 0.01, 1, 1},
		{"log: {access: {ok: 0, client_error: 0.5, error: 1}}\n", 0, 0, 0.5, 1},
	}
	for _, tc := range tests {
		c, err := Parse([]byte(optsBase+tc.block), "t.yaml")
		if err != nil {
			t.Fatalf("%q: %v", tc.block, err)
		}
		if got := c.Ledger.Retention.D(); got != tc.retention {
			t.Errorf("%q: retention %v, want %v", tc.block, got, tc.retention)
		}
		ok, cli, fail := c.Log.Access.Rates()
		if ok != tc.ok || cli != tc.cli || fail != tc.fail {
			t.Errorf("%q: rates %v %v %v, want %v %v %v", tc.block, ok, cli, fail, tc.ok, tc.cli, tc.fail)
		}
	}
	if v, _ := Retention(90 * 24 * time.Hour).MarshalYAML(); v != "90d" {
		t.Errorf("90 days marshal as %v", v)
	}
}
