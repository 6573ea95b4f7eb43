package tokens

import "testing"

func TestEstimate(t *testing.T) {
	for _, c := range []struct{ bytes, want int }{{-5, 0}, {0, 0}, {1, 1}, {3, 1}, {4, 1}, {5, 2}, {8, 2}, {4001, 1001}} {
		if got := Estimate(c.bytes); got != c.want {
			t.Errorf("Estimate(%d) = %d, want %d", c.bytes, got, c.want)
		}
	}
}
