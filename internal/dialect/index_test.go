package dialect

import (
	"strconv"
	"testing"
)

func TestIndex(t *testing.T) {
	for _, n := range []int{0, 1, smallIndex, smallIndex + 1, 1000} {
		var x Index
		for i := 0; i < n; i++ {
			if at, dup := x.Add(strconv.Itoa(i)); dup || at != i {
				t.Fatalf("n=%d: Add(%d) = %d %v", n, i, at, dup)
			}
		}
		for i := 0; i < n; i++ {
			if at, ok := x.Find(strconv.Itoa(i)); !ok || at != i {
				t.Fatalf("n=%d: Find(%d) = %d %v", n, i, at, ok)
			}
			if at, dup := x.Add(strconv.Itoa(i)); !dup || at != i {
				t.Fatalf("n=%d: re-Add(%d) = %d %v", n, i, at, dup)
			}
		}
		if _, ok := x.Find("missing"); ok || x.Len() != n {
			t.Fatalf("n=%d: found a missing key, or Len %d", n, x.Len())
		}
		x.Reset()
		if x.Len() != 0 {
			t.Fatal("Reset kept keys")
		}
		if _, ok := x.Find("0"); ok {
			t.Fatal("Reset kept a key findable")
		}
	}
}
