package accesslog

import (
	"math"
	"testing"
)

// TestClass: every outcome lands in its class.
func TestClass(t *testing.T) {
	cases := []struct {
		status  int
		outcome string
		want    int
	}{
		{502, "provider_unavailable", 2},
		{504, "timeout", 2},
		{503, "ledger_unavailable", 2},
		{200, "interrupted_provider_unavailable", 2},
		{200, "interrupted_ledger_unavailable", 2},
		{401, "invalid_api_key", 1},
		{429, "rate_limited", 1},
		{499, "client_closed_request", 1},
		{200, "ok", 0},
		{200, "idempotent_replay", 0},
	}
	for _, c := range cases {
		if got := Class(c.status, c.outcome); got != c.want {
			t.Errorf("Class(%d, %q) = %d, want %d", c.status, c.outcome, got, c.want)
		}
	}
}

// TestKeep: rates 0 and 1 are exact; a share in between keeps about that
// share; all ones is a nil sampler that keeps everything.
func TestKeep(t *testing.T) {
	if s := New(1, 1, 1); s != nil || !s.Keep(200, "ok") {
		t.Fatalf("all rates 1: %v, want a nil sampler keeping every line", s)
	}
	s := New(0.25, 0, math.NaN())
	const n = 40000
	kept := 0
	for range n {
		if s.Keep(200, "ok") {
			kept++
		}
		if s.Keep(401, "invalid_api_key") {
			t.Fatal("client_error rate 0 kept a line")
		}
		if s.Keep(502, "provider_unavailable") {
			t.Fatal("error rate NaN kept a line")
		}
	}
	if share := float64(kept) / n; share < 0.23 || share > 0.27 {
		t.Errorf("ok rate 0.25 kept %.3f of lines", share)
	}
	s = New(0, 1, 1)
	for range 100 {
		if s.Keep(200, "ok") || !s.Keep(500, "internal") || !s.Keep(429, "rate_limited") {
			t.Fatal("rates 0/1 are not exact")
		}
	}
}

// BenchmarkKeep is what sampling adds to a request: a nil sampler, a
// class kept always, and a sampled class (one random draw).
func BenchmarkKeep(b *testing.B) {
	for _, c := range []struct {
		name string
		s    *Sampler
	}{{"off", nil}, {"always", New(1, 1, 0.5)}, {"sampled", New(0.01, 1, 1)}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.s.Keep(200, "ok")
			}
		})
	}
}
