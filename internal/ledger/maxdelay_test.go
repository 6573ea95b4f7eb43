package ledger

import (
	"testing"
	"time"
)

// TestDefaultMaxDelay: no fill wait in front of a journal append, 2ms in
// front of a store transaction, and a value the caller set is kept.
func TestDefaultMaxDelay(t *testing.T) {
	for _, tc := range []struct {
		name    string
		journal bool
		set     time.Duration
		want    time.Duration
	}{
		{"journal default", true, 0, -1},
		{"store default", false, 0, 2 * time.Millisecond},
		{"journal set", true, 3 * time.Millisecond, 3 * time.Millisecond},
		{"store never waits", false, -1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeStore{}
			var w *Writer
			if tc.journal {
				w, _, _ = journalWriter(t, f, WriterOptions{MaxDelay: tc.set})
			} else {
				w, _ = testWriter(t, f, WriterOptions{MaxDelay: tc.set})
			}
			if w.opts.MaxDelay != tc.want {
				t.Fatalf("MaxDelay %v, want %v", w.opts.MaxDelay, tc.want)
			}
		})
	}
}
