package provider

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name string
		h    map[string]string
		want time.Duration
	}{
		{"none", nil, 0},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0},
		{"negative seconds", map[string]string{"Retry-After": "-3"}, 0},
		{"zero seconds", map[string]string{"Retry-After": "0"}, 0},
		{"date in the past", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{"absurd seconds", map[string]string{"Retry-After": "1e300"}, 0},
		{"bad ms falls back to seconds", map[string]string{"Retry-After-Ms": "x", "Retry-After": "3"}, 3 * time.Second},
		{"seconds", map[string]string{"Retry-After": "7"}, 7 * time.Second},
		{"fractional seconds", map[string]string{"Retry-After": "1.5"}, 1500 * time.Millisecond},
		{"http date", map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{"ms wins", map[string]string{"retry-after-ms": "250", "Retry-After": "7"}, 250 * time.Millisecond},
		{"fractional ms", map[string]string{"retry-after-ms": "12.5"}, 12500 * time.Microsecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.h {
				h.Set(k, v)
			}
			if got := RetryAfter(h, now); got != tt.want {
				t.Errorf("RetryAfter = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestReadAllSized: the size is a hint, never a truth: a body shorter or
// longer than announced reads whole, errors pass through, and a right
// hint costs a single allocation.
func TestReadAllSized(t *testing.T) {
	body := strings.Repeat("0123456789", 300)
	errBoom := errors.New("boom")
	tests := []struct {
		name    string
		r       io.Reader
		size    int64
		want    string
		wantErr error
	}{
		{"exact", strings.NewReader(body), int64(len(body)), body, nil},
		{"unknown", strings.NewReader(body), -1, body, nil},
		{"announced longer", strings.NewReader(body), int64(len(body)) + 100, body, nil},
		{"announced shorter", strings.NewReader(body), 10, body, nil},
		{"announced zero", strings.NewReader(body), 0, body, nil},
		{"over the hint limit", strings.NewReader(body), 1 << 40, body, nil},
		{"empty", strings.NewReader(""), 0, "", nil},
		{"one byte at a time", iotest.OneByteReader(strings.NewReader(body)), int64(len(body)), body, nil},
		{"error mid-way", io.MultiReader(strings.NewReader(body[:100]), iotest.ErrReader(errBoom)), int64(len(body)), body[:100], errBoom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadAllSized(tt.r, tt.size, 1<<20)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if string(got) != tt.want {
				t.Fatalf("read %d bytes, want %d", len(got), len(tt.want))
			}
		})
	}
	// A peer that announces a large body and sends little pins little.
	got, err := ReadAllSized(strings.NewReader("{}"), 8<<20, 8<<20)
	if err != nil || string(got) != "{}" || cap(got) > sizedReadMax+1 {
		t.Errorf("announced 8 MiB, sent 2 bytes: %q, %v, capacity %d", got, err, cap(got))
	}
	big := strings.Repeat("x", 3*sizedReadMax)
	if got, err := ReadAllSized(strings.NewReader(big), int64(len(big)), 1<<30); err != nil || string(got) != big {
		t.Errorf("a body past the first allocation: %d bytes, %v", len(got), err)
	}
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := ReadAllSized(strings.NewReader(body), int64(len(body)), 1<<20); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 2 { // the buffer, and the strings.Reader
		t.Errorf("%v allocations with an exact size hint", allocs)
	}
}

func TestIsJSON(t *testing.T) {
	for ct, want := range map[string]bool{
		"application/json":                 true,
		"application/json; charset=utf-8":  true,
		" Application/JSON ;charset=UTF-8": true,
		"text/event-stream":                false,
		"application/jsonl":                false,
		"application/problem+json":         false,
		"":                                 false,
	} {
		h := http.Header{}
		if ct != "" {
			h.Set("Content-Type", ct)
		}
		if got := IsJSON(h); got != want {
			t.Errorf("IsJSON(%q) = %v, want %v", ct, got, want)
		}
	}
}
