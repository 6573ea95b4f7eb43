package server

import (
	"testing"
	"time"
)

// The write deadline moves only once a quarter of the bound has passed,
// so every write keeps at least three quarters of it.
func TestKeepWriteDeadline(t *testing.T) {
	const bound = 40 * time.Second
	tests := []struct {
		name string
		left time.Duration
		keep bool
	}{
		{"just set", bound, true},
		{"a quarter less a tick passed", bound - bound/4 + time.Nanosecond, true},
		{"a quarter passed", bound - bound/4, false},
		{"almost due", time.Millisecond, false},
		{"already passed", -time.Second, false},
		{"clock went back: more left than the bound", bound + time.Second, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := keepWriteDeadline(tt.left, bound); got != tt.keep {
				t.Fatalf("keepWriteDeadline(%v, %v) = %v, want %v", tt.left, bound, got, tt.keep)
			}
			if tt.keep && tt.left < bound-bound/4 {
				t.Fatalf("kept a deadline with %v left, less than three quarters of %v", tt.left, bound)
			}
		})
	}
}
