package provider

import (
	"net/http"
	"testing"
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
