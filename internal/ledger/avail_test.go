package ledger

import (
	"runtime"
	"testing"
)

func TestFreeBytes(t *testing.T) {
	free, ok := freeBytes(t.TempDir())
	if runtime.GOOS == "linux" && (!ok || free == 0) {
		t.Fatalf("freeBytes = %d, %v on linux", free, ok)
	}
	if _, ok := freeBytes("/does/not/exist"); ok {
		t.Error("freeBytes of a missing directory reported a figure")
	}
}
