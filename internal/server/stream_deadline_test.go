package server

import (
	"testing"
	"time"
)

// The write deadline moves only once a quarter of the bound has passed,
// and every write keeps at least three quarters of it.
func TestNextWriteDeadline(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	const bound = 40 * time.Second
	tests := []struct {
		name  string
		until time.Time
		now   time.Time
		want  time.Time
		moved bool
	}{
		{"none yet: set", time.Time{}, t0, t0.Add(bound), true},
		{"just set: kept", t0.Add(bound), t0, t0.Add(bound), false},
		{"a quarter less a tick passed: kept", t0.Add(bound), t0.Add(bound/4 - time.Nanosecond), t0.Add(bound), false},
		{"a quarter passed: moved", t0.Add(bound), t0.Add(bound / 4), t0.Add(bound/4 + bound), true},
		{"already passed: moved", t0.Add(bound), t0.Add(2 * bound), t0.Add(3 * bound), true},
		{"clock went back: kept (more left than the bound)", t0.Add(bound), t0.Add(-time.Second), t0.Add(bound), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, moved := nextWriteDeadline(tt.until, tt.now, bound)
			if !got.Equal(tt.want) || moved != tt.moved {
				t.Fatalf("nextWriteDeadline = %v, %v; want %v, %v", got.Sub(t0), moved, tt.want.Sub(t0), tt.moved)
			}
			if left := got.Sub(tt.now); left < bound-bound/4 {
				t.Fatalf("a write at %v has %v left, less than three quarters of %v", tt.now.Sub(t0), left, bound)
			}
		})
	}
}
