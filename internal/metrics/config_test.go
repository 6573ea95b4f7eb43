package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/catalog"
)

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

// The collector reads the status at each scrape: a refusal shows, and
// goes when a good file is applied.
func TestWatchConfig(t *testing.T) {
	st := catalog.Status{Version: "0123456789ab", LoadedAt: time.Unix(1700000000, 0), Applied: 2, Refused: 1,
		LastRefused: &catalog.Refusal{At: time.Unix(1700000600, 0), Version: "ba9876543210", Problems: []string{"x"}}}
	m := New(nil)
	m.WatchConfig(func() catalog.Status { return st })
	for _, want := range []string{
		`spillway_config_reloads_total{result="applied"} 2`,
		`spillway_config_reloads_total{result="refused"} 1`,
		`spillway_config_info{version="0123456789ab"} 1`,
		`spillway_config_last_reload_refused 1`,
		`spillway_config_loaded_timestamp_seconds 1.7e+09`,
		`spillway_config_last_refused_timestamp_seconds 1.7000006e+09`,
	} {
		if out := scrape(t, m); !strings.Contains(out, want) {
			t.Errorf("missing %s", want)
		}
	}
	st.LastRefused, st.Version = nil, "ffffffffffff"
	out := scrape(t, m)
	if !strings.Contains(out, "spillway_config_last_reload_refused 0") || !strings.Contains(out, `spillway_config_info{version="ffffffffffff"} 1`) ||
		strings.Contains(out, "0123456789ab") || strings.Contains(out, "spillway_config_last_refused_timestamp_seconds 1") {
		t.Errorf("after an applied reload:\n%s", out)
	}
}
