package wrk

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// The fixtures are wrk 4.1.0's output (Debian's package) with bench.lua,
// against the OpenAI mock: a stream run, a plain run, and a translated run
// sent to a path the mock does not serve (every answer a 404).
func TestParseRecordedOutput(t *testing.T) {
	tests := []struct {
		file                 string
		requests, ok, status int64
		rps                  float64
		p50, p99             int64 // µs, from the JSON line
		text50, text99       float64
	}{
		{"stream.txt", 844, 844, 0, 834.68, 8797, 28052, 8.80, 28.05},
		{"plain.txt", 5206, 5206, 0, 5169.40, 337, 28557, 0.337, 28.56},
		{"status.txt", 13622, 0, 13622, 13477.65, 79, 5188, 0.079, 5.19},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			out, err := os.ReadFile("testdata/" + tt.file)
			if err != nil {
				t.Fatal(err)
			}
			r, err := Parse(out)
			if err != nil {
				t.Fatal(err)
			}
			if r.Requests != tt.requests || r.OK != tt.ok || r.Errors.Status != tt.status || r.TextRPS != tt.rps ||
				r.LatencyUS.P50 != tt.p50 || r.LatencyUS.P99 != tt.p99 {
				t.Errorf("report %+v", r)
			}
			if !near(r.TextLatencyMS["50%"], tt.text50) || !near(r.TextLatencyMS["99%"], tt.text99) || len(r.TextLatencyMS) != 4 {
				t.Errorf("text distribution %v", r.TextLatencyMS)
			}
			// The two reports agree: JSON requests over duration is the
			// text's requests/sec.
			if got := float64(r.Requests) / (float64(r.DurationUS) / 1e6); !nearRel(got, r.TextRPS, 0.01) {
				t.Errorf("rps from JSON %.2f, text %.2f", got, r.TextRPS)
			}
			res := r.Result("x", 8)
			if res.OK != tt.ok || res.Completed() != tt.requests || res.TTFB != nil || res.Window <= 0 ||
				!near(res.Latency.P50, float64(tt.p50)/1e3) {
				t.Errorf("result %+v", res)
			}
			if tt.status > 0 && res.Errors["status_non_2xx"] != tt.status {
				t.Errorf("errors %v", res.Errors)
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	for _, out := range []string{
		"",
		"Running 1s test @ http://127.0.0.1:1\nRequests/sec:    834.68\n",
		jsonPrefix + "{not json\n",
		"Requests/sec: many\n" + jsonPrefix + "{}\n",
		"  Latency Distribution\n     50%    8.80parsecs\n" + jsonPrefix + "{}\n",
		"  Latency Distribution\n     50%    -1ms\n" + jsonPrefix + "{}\n",
	} {
		if r, err := Parse([]byte(out)); err == nil {
			t.Errorf("Parse(%q) = %+v", out, r)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]float64{"337.00us": 0.337, "8.80ms": 8.8, "1.20s": 1200, "2.00m": 120000, "0.00us": 0} {
		if got, err := parseDuration(in); err != nil || !near(got, want) {
			t.Errorf("parseDuration(%q) = %v, %v", in, got, err)
		}
	}
}

func TestArgs(t *testing.T) {
	o := Options{Script: "/s/bench.lua", BaseURL: "http://127.0.0.1:9", Mode: "translated", Key: "sk-1",
		Connections: 1, Threads: 4, Duration: 1500 * time.Millisecond}
	want := []string{"-t", "1", "-c", "1", "-d", "2s", "--timeout", "60s", "--latency", "-s", "/s/bench.lua",
		"http://127.0.0.1:9", "--", "translated", "sk-1", "bench-model"}
	if got := o.Args(); !slices.Equal(got, want) {
		t.Errorf("args %q", got)
	}
	o = Options{Script: "s", BaseURL: "u", Mode: "plain", Connections: 128}
	if got := strings.Join(o.Args(), " "); got != "-t 2 -c 128 -d 1s --timeout 60s --latency -s s u -- plain - bench-model" {
		t.Errorf("args %q", got)
	}
}

func TestScriptIsEmbedded(t *testing.T) {
	for _, want := range []string{"function done(", "function response(", "SPILLWAY_WRK_JSON", `"Authorization"`} {
		if !strings.Contains(string(Script), want) {
			t.Errorf("bench.lua has no %q", want)
		}
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func nearRel(a, b, rel float64) bool { return a-b <= rel*b && b-a <= rel*b }
