package ledger

import (
	"errors"
	"testing"
	"time"
)

func TestParseUsageQueryErrors(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name  string
		v     map[string][]string
		param string
	}{
		{"bad from", map[string][]string{"from": {"yesterday"}}, "from"},
		{"bad to", map[string][]string{"to": {"2026-13-01"}}, "to"},
		{"from after to", map[string][]string{"from": {"2026-03-02"}, "to": {"2026-03-01"}}, "from"},
		{"unknown group", map[string][]string{"group_by": {"org,colour"}}, "group_by"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseUsageQuery(c.v, now)
			var pe *ParamError
			if !errors.As(err, &pe) || pe.Param != c.param || !errors.Is(err, ErrInvalidQuery) {
				t.Fatalf("err = %v, want a ParamError on %s", err, c.param)
			}
		})
	}
	q, err := ParseUsageQuery(map[string][]string{"group_by": {"org, day"}, "key": {"key_1"}}, now)
	if err != nil || !q.To.Equal(now) || !q.From.Equal(now.UTC().AddDate(0, 0, -30).Truncate(24*time.Hour)) || len(q.GroupBy) != 2 || q.Filters["key"] != "key_1" {
		t.Fatalf("defaults: %+v, %v", q, err)
	}
}

func TestFormatUSD(t *testing.T) {
	for micro, want := range map[int64]string{0: "0.000000", 1: "0.000001", 1_500_000: "1.500000", -250: "-0.000250", 12_345_678_901: "12345.678901"} {
		if got := FormatUSD(micro); got != want {
			t.Errorf("FormatUSD(%d) = %q, want %q", micro, got, want)
		}
	}
}
