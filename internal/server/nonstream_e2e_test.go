package server_test

import (
	"strings"
	"testing"
	"time"
)

// A caller that asked for no stream is bounded by the same silence bounds
// as one that did, and a provider that dies halfway fails over invisibly:
// nothing had reached the caller yet.
func TestNonStreamedSilenceAndHalfwayDeath(t *testing.T) {
	for _, kind := range []string{"openai", "anthropic", "bedrock", "gemini"} {
		for _, tc := range []struct{ fault, wantClass string }{
			{"stall", "provider_unavailable"},         // accepts, never answers: first_byte
			{"stall_after=3", "provider_unavailable"}, // answers three deltas, then silence: idle
			{"die_after=3", "provider_unavailable"},   // connection cut halfway
			{"error_after=3", "provider_unavailable"}, // the provider's in-stream error halfway
			{"malformed_after=3", "provider_unavailable"},
		} {
			t.Run(kind+" "+tc.fault, func(t *testing.T) {
				h := newHarness(t, rungSpec{"primary", kind}, rungSpec{"secondary", "openai"})
				h.fault("primary", tc.fault)
				begin := time.Now()
				r := chat(t, h, false, hello())
				took := time.Since(begin)
				if r.err != nil {
					t.Fatalf("the caller saw an error: %v", r.err)
				}
				if d := hdr(r.resp, "X-Spillway-Deployment"); d != "secondary" {
					t.Fatalf("served by %q, want the secondary", d)
				}
				if !strings.HasPrefix(r.text, "mock secondary ") || strings.Contains(r.text, "primary") {
					t.Errorf("answer %q: want the secondary's whole answer and nothing of the primary's", r.text)
				}
				if r.finish != "stop" {
					t.Errorf("finish %q", r.finish)
				}
				// The bounds are 400 ms; the total bound is 2 s. Well under it
				// means a silence bound fired.
				if took > testTotal {
					t.Errorf("failover took %v: the total bound (%v), not a silence bound (%v), ended the attempt", took, testTotal, testFirstByte)
				}
				id := hdr(r.resp, "X-Request-Id")
				n, row, atts := h.rows(t, id)
				if n != 1 || len(atts) != 2 {
					t.Fatalf("%d request rows and %d attempt rows, want 1 and 2", n, len(atts))
				}
				if atts[0].deployment != "primary" || atts[0].failureClass != tc.wantClass || atts[0].cost != 0 {
					t.Errorf("first attempt %+v: want the primary failed as %s and charged nothing", atts[0], tc.wantClass)
				}
				if atts[1].deployment != "secondary" || atts[1].failureClass != "" || atts[1].cost == 0 {
					t.Errorf("second attempt %+v: want the secondary, served and charged", atts[1])
				}
				if row.deployment != "secondary" || row.cost != atts[1].cost || row.out != int(r.usage.CompletionTokens) {
					t.Errorf("request row %+v: want one charge, the secondary's (%d), for the usage the caller saw (%d)", row, atts[1].cost, r.usage.CompletionTokens)
				}
			})
		}
	}
}
