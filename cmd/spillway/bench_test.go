package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spillway-gw/spillway/internal/loadgen"
	"github.com/spillway-gw/spillway/internal/mock"
)

func TestParseBenchFlagsRefuses(t *testing.T) {
	tests := [][]string{
		{"--concurrency", "0"},
		{"--concurrency", "4,x"},
		{"--concurrency", ""},
		{"--paths", "direct,nginx"},
		{"--modes", ""},
		{"--pin", "mock"},
		{"--pin", "gpu=0"},
		{"--pin", "mock=0,mock=1"},
		{"--pin", "proxy=a"},
		{"--duration", "0s"},
		{"--warmup", "-1s"},
		{"--rate", "-3"},
		{"--rate", "NaN"},
		{"--slow-streams", "-1"},
		{"--events", "0"},
		{"--rounds", "0"},
		{"--rounds", "101"},
		{"--rounds", "2", "--slow-streams", "10"},
		{"--driver", "jmeter"},
		{"--driver", ""},
		{"--driver", "wrk", "--slow-streams", "10"},
		{"--driver", "go,wrk", "--rate", "100"},
		{"--together", "--slow-streams", "10"},
		{"--together", "--paths", "direct,spillway"},
		{"extra"},
	}
	for _, args := range tests {
		if _, err := parseBenchFlags(args, io.Discard); err == nil {
			t.Errorf("parseBenchFlags(%q) accepted", args)
		}
	}
	c, err := parseBenchFlags([]string{"--paths", "spillway,direct", "--modes", "translated,plain", "--pin", "mock=0,proxy=1-1,load=0"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.paths, []string{"direct", "spillway"}) || !slices.Equal(c.modes, []string{"plain", "translated"}) ||
		!slices.Equal(c.concurrency, []int{32, 128}) || !slices.Equal(c.pin["proxy"], []int{1}) || c.exe == "" || c.rounds != 1 ||
		!slices.Equal(c.drivers, []string{"go"}) {
		t.Errorf("config %+v", c)
	}
}

func TestListenURL(t *testing.T) {
	tests := []struct {
		line, want string
	}{
		{"", ""},
		{"spillway listening on", ""},
		{"spillway listening on http://10.0.0.1:80", ""},
		{"spillway listening on https://127.0.0.1:80", ""},
		{"spillway listening on http://127.0.0.1:0", ""},
		{"spillway listening on http://127.0.0.1:99999", ""},
		{"spillway listening on http://127.0.0.1:80/v1", ""},
		{"spillway listening on http://u@127.0.0.1:80", ""},
		{`spillway mock: openai provider "bench" listening on http://127.0.0.1:41959`, "http://127.0.0.1:41959"},
		{"spillway listening on http://127.0.0.1:46473 (config /tmp/x.yaml, ledger /tmp/l.db)", "http://127.0.0.1:46473"},
		{"spillway bench-proxy listening on http://[::1]:8080 (to http://127.0.0.1:1)", "http://[::1]:8080"},
	}
	for _, tt := range tests {
		got, ok := listenURL(tt.line)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("listenURL(%q) = %q, %v; want %q", tt.line, got, ok, tt.want)
		}
	}
}

func TestLineWatchFindsTheURLAcrossWrites(t *testing.T) {
	w := &lineWatch{ready: make(chan string, 1)}
	for _, p := range []string{"no virtual keys yet\n  sk-spw-x\nspillway list", "ening on http://127.0.0.1:5", "55 (config c)\nmore\n"} {
		if n, err := w.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatal(n, err)
		}
	}
	select {
	case u := <-w.ready:
		if u != "http://127.0.0.1:555" {
			t.Fatalf("found %q", u)
		}
	default:
		t.Fatal("no URL found")
	}
	_, _ = w.Write([]byte("spillway listening on http://127.0.0.1:9\n")) // only the first counts; never blocks
}

func TestTailBufferKeepsTheEnd(t *testing.T) {
	tb := &tailBuffer{max: 8}
	_, _ = tb.Write([]byte("0123456789"))
	_, _ = tb.Write([]byte("ab"))
	if got := tb.String(); got != "456789ab" {
		t.Fatalf("tail %q", got)
	}
}

// The bare proxy passes a stream through event by event (flush per
// write) and pooled buffers go round without a fault.
func TestBareProxyStreams(t *testing.T) {
	m, err := mock.New("openai", mock.Options{Name: "p", Fault: "tokens=20"})
	if err != nil {
		t.Fatal(err)
	}
	up := httptest.NewServer(m)
	defer up.Close()
	u, _ := url.Parse(up.URL)
	proxy := httptest.NewServer(newBareProxy(u, io.Discard))
	defer proxy.Close()
	body := []byte(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	res, err := loadgen.Run(context.Background(), loadgen.Options{
		Target:      loadgen.Target{URL: proxy.URL + "/v1/chat/completions", Body: body, Stream: true, Terminator: []byte("data: [DONE]"), Header: http.Header{"Content-Type": {"application/json"}}},
		Concurrency: 4, Requests: 200,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK != 200 || res.Failed() != 0 {
		t.Fatalf("ok %d cut %d errors %v", res.OK, res.Cut, res.Errors)
	}
	var pb proxyBuffers
	b := pb.Get()
	pb.Put(b)
	pb.Put(make([]byte, 10)) // a foreign buffer is dropped, not kept
	if len(pb.Get()) != proxyBufSize {
		t.Fatal("pool returned a buffer of the wrong size")
	}
}

// buildSpillway builds the binary the bench runs as its children.
func buildSpillway(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "spillway")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// A tiny full run: every path and mode, the table, the ratios and the
// JSON, and no process left behind.
func TestRunBenchTiny(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs three processes under load")
	}
	out, rep := benchRun(t, "--duration", "300ms", "--warmup", "100ms", "--concurrency", "4",
		"--modes", "plain,stream,translated", "--rounds", "2")
	for _, want := range []string{
		"r1 direct plain", "r2 bare plain", "spillway plain", "direct stream", "bare stream", "spillway stream",
		"r2 direct translated (=stream)", "bare translated (=stream)", "spillway translated",
		"proxy cpu us/req", "medians over 2 rounds", "cpu ratio", "rps ratio", "ttfb+ p99", "cpu ratio by round",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the table has no %q:\n%s", want, out)
		}
	}
	_, ratioTable, _ := strings.Cut(out, "cpu ratio")
	for _, mode := range []string{"plain", "stream", "translated"} {
		found := false
		for line := range strings.Lines(ratioTable) {
			f := strings.Fields(line)
			found = found || (len(f) > 3 && f[0] == mode && f[1] == "4")
		}
		if !found {
			t.Errorf("no ratio row for %s:\n%s", mode, out)
		}
	}
	if len(rep.Cells) != 18 || len(rep.Ratios) != 3 || rep.ClockTicks <= 0 || rep.Rounds != 2 {
		t.Fatalf("report: %d cells, %d ratios, clock ticks %d", len(rep.Cells), len(rep.Ratios), rep.ClockTicks)
	}
	cpu := 0.0
	for _, c := range rep.Cells {
		if c.Load == nil || c.Load.OK == 0 || c.Load.Failed() != 0 || c.Load.Window <= 0 {
			t.Errorf("cell %s %s: %+v", c.Path, c.Mode, c.Load)
		}
		if c.Path != "direct" {
			cpu += c.ProxyCPU
		}
	}
	// CPU is read in 10 ms clock ticks: one 300 ms cell on a starved
	// machine may read zero, all six proxy cells cannot.
	if cpu <= 0 {
		t.Error("no proxy CPU measured in any cell")
	}
	for _, r := range rep.Ratios {
		if r.RPS <= 0 || r.RPSDirect <= 0 || r.CPUTarget <= 0 || (r.Mode != "plain" && (r.TTFBP99 == nil || r.BareTTFBP99 == nil)) ||
			len(r.RPSRounds) != 2 || r.RPS != median(r.RPSRounds) {
			t.Errorf("ratio %+v", r)
		}
	}
}

// processesOf lists the live processes running bin (Linux only).
func processesOf(t *testing.T, bin string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []string
	for _, e := range ents {
		if exe, err := os.Readlink("/proc/" + e.Name() + "/exe"); err == nil && exe == bin {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

func TestRunBenchSlowStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and holds streams open for seconds")
	}
	bin := buildSpillway(t)
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	jsonPath := filepath.Join(t.TempDir(), "slow.json")
	err := runBench(ctx, []string{"bench", "--exe", bin, "--slow-streams", "20", "--duration", "300ms", "--warmup", "100ms", "--json", jsonPath}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("runBench: %v\nstderr:\n%s", err, stderr.String())
	}
	var rep benchReport
	data, _ := os.ReadFile(jsonPath)
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Slow) != 2 || len(rep.Cells) != 0 {
		t.Fatalf("report %s", data)
	}
	for _, s := range rep.Slow {
		if s.Open != 20 || s.HeldRSS <= 0 || s.IdleRSS <= 0 {
			t.Errorf("%s: %+v", s.Path, s)
		}
	}
	if !strings.Contains(stdout.String(), "KiB/stream") {
		t.Errorf("stdout:\n%s", stdout.String())
	}
}

func FuzzListenURL(f *testing.F) {
	f.Add("spillway listening on http://127.0.0.1:46473 (config c)")
	f.Add(`spillway mock: openai provider "x" listening on http://[::1]:1`)
	f.Add("x listening on http://localhost:65535")
	f.Fuzz(func(t *testing.T, line string) {
		u, ok := listenURL(line)
		if !ok {
			return
		}
		p, err := url.Parse(u)
		if err != nil || p.Scheme != "http" || p.Port() == "" || !strings.Contains(line, u) {
			t.Fatalf("listenURL(%q) = %q", line, u)
		}
	})
}

func FuzzParsePin(f *testing.F) {
	for _, s := range []string{"", "mock=0,proxy=1,load=0", "proxy=0-1", "mock=0,mock=1", "load="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		pin, err := parsePin(s)
		if err != nil {
			return
		}
		for role, cpus := range pin {
			if (role != "mock" && role != "proxy" && role != "load") || len(cpus) == 0 {
				t.Fatalf("parsePin(%q) = %v", s, pin)
			}
		}
	})
}

func FuzzParseLists(f *testing.F) {
	f.Add("32,128")
	f.Add("direct,bare")
	f.Add(" 4 ,x")
	f.Fuzz(func(t *testing.T, s string) {
		if ns, err := parseIntList(s); err == nil {
			for _, n := range ns {
				if n < 1 || n > 100_000 {
					t.Fatalf("parseIntList(%q) = %v", s, ns)
				}
			}
		}
		if cs, err := parseChoices(s, benchPaths()); err == nil {
			if len(cs) == 0 || !slices.IsSortedFunc(cs, func(a, b string) int {
				return slices.Index(benchPaths(), a) - slices.Index(benchPaths(), b)
			}) {
				t.Fatalf("parseChoices(%q) = %v", s, cs)
			}
		}
	})
}

func TestMedianRatios(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	round := func(cpu, rps float64, ttfb *float64) []*benchRatio {
		return []*benchRatio{
			{Mode: "plain", Concurrency: 32, CPU: cpu, RPS: rps, CPUTarget: 1.2},
			{Mode: "stream", Concurrency: 32, CPU: cpu + 1, RPS: rps, TTFBP99: ttfb, CPUTarget: 1.3},
		}
	}
	one := round(1.5, 0.9, f(0.4))
	if got := medianRatios([][]*benchRatio{one}); &got[0] != &one[0] || got[0].CPURounds != nil {
		t.Error("one round must come back as it is")
	}
	got := medianRatios([][]*benchRatio{round(1.5, 0.9, f(0.4)), round(1.1, 1.0, nil), round(1.3, 0.7, f(0.2))})
	if len(got) != 2 || got[0].Mode != "plain" || got[1].Mode != "stream" || got[0].CPUTarget != 1.2 {
		t.Fatalf("rows %+v", got)
	}
	if got[0].CPU != 1.3 || got[0].RPS != 0.9 || got[1].CPU != 2.3 {
		t.Errorf("medians cpu %v rps %v, stream cpu %v", got[0].CPU, got[0].RPS, got[1].CPU)
	}
	if !slices.Equal(got[0].CPURounds, []float64{1.5, 1.1, 1.3}) {
		t.Errorf("rounds %v", got[0].CPURounds)
	}
	// A figure some rounds lack is the median of the rounds that have it.
	if got[1].TTFBP99 == nil || math.Abs(*got[1].TTFBP99-0.3) > 1e-9 || got[0].TTFBP99 != nil {
		t.Errorf("ttfb p99 %v / %v", got[1].TTFBP99, got[0].TTFBP99)
	}
	for _, tt := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{2}, 2}, {[]float64{3, 1}, 2}, {[]float64{5, 1, 4}, 4}, {[]float64{4, 1, 3, 2}, 2.5},
		// 0 is an unknown ratio, not a small one.
		{[]float64{0, 1.6}, 1.6}, {[]float64{0, 0, 1.6}, 1.6}, {[]float64{0, 0}, 0}} {
		in := slices.Clone(tt.in)
		if got := median(in); got != tt.want || !slices.Equal(in, tt.in) {
			t.Errorf("median(%v) = %v, want %v (input now %v)", tt.in, got, tt.want, in)
		}
	}
}

// TestRunBenchTogether: with --together, bare and spillway are loaded in
// the same window (direct alone), bare is measured again beside spillway's
// translated streams, and only what the pairing makes comparable is
// reported: CPU and memory ratios, no throughput or first-byte ratio.
func TestRunBenchTogether(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs three processes under load")
	}
	out, rep := benchRun(t, "--together", "--duration", "600ms", "--warmup", "100ms",
		"--concurrency", "4", "--modes", "stream,translated")
	if !strings.Contains(out, "loaded together") || !strings.Contains(out, "bare translated ") ||
		strings.Contains(out, "bare translated (=stream)") {
		t.Errorf("the table does not say the paths ran together, or reuses bare's stream cell:\n%s", out)
	}
	// direct stream, its translated copy, and a bare+spillway pair per mode.
	if len(rep.Cells) != 6 || len(rep.Ratios) != 2 {
		t.Fatalf("report: %d cells, %d ratios", len(rep.Cells), len(rep.Ratios))
	}
	for _, m := range []string{"stream", "translated"} {
		bare, gw := findCell(rep.Cells, "go", "bare", m, 4), findCell(rep.Cells, "go", "spillway", m, 4)
		if bare == nil || gw == nil || !bare.Together || !gw.Together || bare.SameAs != "" {
			t.Fatalf("%s: bare %+v, spillway %+v", m, bare, gw)
		}
		for _, c := range []*benchCell{bare, gw} {
			if c.Load.OK == 0 || c.Load.Failed() != 0 || c.MockCPU != 0 || c.LoadCPU != 0 {
				t.Errorf("%s %s: %+v, mock cpu %v, load cpu %v", m, c.Path, c.Load, c.MockCPU, c.LoadCPU)
			}
		}
		// Each window is 600 ms after a shared warm-up: started together,
		// they overlap by most of their length.
		end, start := bare.To, bare.From
		if gw.To.Before(end) {
			end = gw.To
		}
		if gw.From.After(start) {
			start = gw.From
		}
		overlap := end.Sub(start)
		if overlap < 300*time.Millisecond {
			t.Errorf("%s: windows %v-%v and %v-%v overlap by %v", m, bare.From, bare.To, gw.From, gw.To, overlap)
		}
		if direct := findCell(rep.Cells, "go", "direct", m, 4); direct == nil || direct.Together {
			t.Errorf("%s: direct %+v should run alone", m, direct)
		}
	}
	for _, r := range rep.Ratios {
		if r.RPS != 0 || r.RPSDirect != 0 || r.TTFBP99 != nil || r.RSS <= 0 {
			t.Errorf("ratio %+v: together, only CPU and memory compare", r)
		}
	}
}

// benchRun runs `spillway bench` on a fresh build with args (plus --exe and
// --json), checks it left no process behind, and returns its table and
// report.
func benchRun(t *testing.T, args ...string) (string, benchReport) {
	t.Helper()
	bin := buildSpillway(t)
	jsonPath := filepath.Join(t.TempDir(), "bench.json")
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := runBench(ctx, append([]string{"bench", "--exe", bin, "--json", jsonPath}, args...), &stdout, &stderr)
	if err != nil {
		t.Fatalf("runBench: %v\nstderr:\n%s", err, stderr.String())
	}
	if pids := processesOf(t, bin); len(pids) > 0 {
		t.Errorf("processes left running: %v", pids)
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep benchReport
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	return stdout.String(), rep
}
