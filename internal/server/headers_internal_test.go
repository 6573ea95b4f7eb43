package server

import (
	"net/http"
	"testing"
)

// TestHeaderKeysCanonical: headerValues stores keys as given, so every key
// it is handed must already be canonical or a reader's Get misses it.
func TestHeaderKeysCanonical(t *testing.T) {
	keys := []string{hdrRequestID, hdrAnthropicRequestID, hdrModel, hdrDeployment, hdrAttempts, hdrTrail,
		// streamSink.Commit's own.
		"Content-Type", "Cache-Control", "X-Accel-Buffering", "Trailer"}
	for _, k := range keys {
		if c := http.CanonicalHeaderKey(k); c != k {
			t.Errorf("%q is not canonical (%q)", k, c)
		}
	}
}

// TestHeaderValuesShareNothing: values set from one array stay apart when
// a key is added to or replaced later.
func TestHeaderValuesShareNothing(t *testing.T) {
	h := http.Header{}
	hv := newHeaderValues(h, 1)
	hv.set("A", "1")
	hv.set("B", "2") // past the capacity: a new array
	hv.set("C", "3")
	h.Add("A", "1b")
	h.Set("B", "2b")
	if got := h.Values("A"); len(got) != 2 || got[0] != "1" || got[1] != "1b" {
		t.Fatalf("A = %q", got)
	}
	if h.Get("B") != "2b" || h.Get("C") != "3" {
		t.Fatalf("B = %q, C = %q", h.Get("B"), h.Get("C"))
	}
	hv.set("A", "x")
	if got := h.Values("A"); len(got) != 1 || got[0] != "x" || h.Get("C") != "3" {
		t.Fatalf("after a second set: A = %q, C = %q", got, h.Get("C"))
	}
}
