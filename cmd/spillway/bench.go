package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spillway-gw/spillway/internal/keys"
	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/ledger/sqlite"
	"github.com/spillway-gw/spillway/internal/loadgen"
	"github.com/spillway-gw/spillway/internal/loadgen/wrk"
)

const benchUsage = `usage: spillway bench [flags]

Measures what one hop costs. It runs this binary three times on loopback: a
mock OpenAI provider ("direct"), a bare net/http/httputil.ReverseProxy in
front of it ("bare": pooled 32 KiB copy buffers, full duplex, flush per
write: the least any proxy pays), and spillway in front of it ("spillway":
virtual-key auth, routing, budgets at org/team/key/model scope with RPM and
TPM limits, classification and the SQLite ledger all on). It then loads
each path with plain requests, 20-event streams, and streams translated
between dialects, at each concurrency: a warm-up, then a measured window.

How to read it:
  rps          complete answers per second in the window
  ok, cut      complete answers; answers that ended before their terminator
               (a stream cut mid-way: golang/go#40747 without full duplex)
  errors       other failures (status, reset, refused, timeout); the JSON
               has them by kind. Any cut or error makes a cell suspect.
  p50 p90 p99  latency in ms, sending to last byte
  ttfb50/99    streams: ms to the first body byte
  cpu us/req   CPU time (user+system, /proc/<pid>/stat) per counted answer
               over the window: proxy = the bare proxy or spillway, then
               the mock and the load generator for reference. On a shared
               2-core machine this is the steadiest figure: throughput is
               bounded by the cores all three processes share.
  rss MiB      the proxy's (or mock's) resident memory at the window's end
  translated   the caller speaks Anthropic Messages to spillway, which
               translates to and from the OpenAI mock. direct and bare do
               not translate: their translated row is their stream row.
  ratios       spillway/bare CPU per request (targets: plain <= 1.2,
               stream <= 1.3, translated <= 1.4), throughput (>= 0.9 at
               128 clients) and resident memory (<= 2); spillway's and
               bare's time-to-first-byte overhead over direct at p50 and
               p99, ms (target: spillway p99 < 1 with one stream in
               flight: --concurrency 1), for each driver.
  --driver     go (the default) loads with this binary's generator;
               wrk with wrk (Debian's package, installed with apt-get when
               missing and root) and the bench's Lua script
               (internal/loadgen/wrk/bench.lua: the same requests, the
               terminator checked); go,wrk measures every cell with both,
               interleaved, and prints both sets of ratios. wrk measures
               no time to first byte, and its load us/req is wrk's own.
  --together   bare and spillway are loaded at the same time, each with
               the cell's clients (direct still alone): machine drift then
               moves both alike, and the CPU ratio holds within a few
               percent where cells measured one after the other move by a
               tenth or more. Throughput and first byte are not compared
               (the two share the cores).
  --slow-streams N   instead of the table: N streams held open through
               bare and spillway while the mock sends one event a second;
               resident memory in flight minus idle, per stream (target
               <= 64 KiB at 1000).
Closed loop (the default) runs every path at its own saturation: CPU per
request there is what a busy proxy pays, and first-byte times are mostly
queueing. An open loop at a rate every path sustains (--rate 300
--concurrency 64) compares the paths at equal throughput: that is where
the first-byte overhead means latency added by the hop. CPU per request is
higher at low rates (less batching per wake-up), so compare it only within
one row of ratios. Compare figures within one run, not across runs: other
work on the machine (the load average is printed) moves absolute numbers
far more than the ratios. On a shared machine even one run's ratio moves
by a tenth or more from run to run: --rounds 3 measures every cell three
times, the paths interleaved, and reports each ratio's median with the
rounds' own values beside it. Pin processes (--pin) to separate them;
unpinned, they share every core.

flags:
`

// Defaults of the matrix.
const (
	benchModel       = "bench-model"
	benchStartBound  = 30 * time.Second // a child must listen within this
	benchStopGrace   = 5 * time.Second  // SIGTERM, then SIGKILL
	benchReqTimeout  = time.Minute
	benchSlowSample  = 250 * time.Millisecond
	benchSlowMaxHold = 5 * time.Second
	benchSlowTokens  = 200 // a slow stream outlives any hold
)

// The paths and modes, in the order they are measured and printed.
func benchPaths() []string { return []string{"direct", "bare", "spillway"} }
func benchModes() []string { return []string{"plain", "stream", "translated"} }

// benchDrivers are the load generators: the Go one (internal/loadgen) and
// wrk (internal/loadgen/wrk), an outside one written in C.
func benchDrivers() []string { return []string{"go", "wrk"} }

// benchCPUTarget is the bound on spillway/bare CPU per request.
func benchCPUTarget(mode string) float64 {
	switch mode {
	case "plain":
		return 1.2
	case "stream":
		return 1.3
	}
	return 1.4
}

// benchConfig is the parsed command line.
type benchConfig struct {
	duration, warmup time.Duration
	concurrency      []int
	rate             float64
	paths, modes     []string
	drivers          []string
	pin              map[string][]int
	slow             int
	events           int
	jsonPath         string
	exe              string
	rounds           int
	// together loads bare and spillway at once (see pair).
	together bool
}

// runBench runs `spillway bench`, or with args[0] == "bench-proxy" the
// baseline proxy bench starts as a child. args[0] is the command name.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "bench-proxy" {
		return runBenchProxy(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "bench" {
		args = args[1:]
	}
	cfg, err := parseBenchFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	b := &bencher{cfg: cfg, stdout: stdout, stderr: stderr}
	defer b.stopAll()
	return b.run(ctx)
}

func parseBenchFlags(args []string, stderr io.Writer) (*benchConfig, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &benchConfig{}
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "measured window per cell (with --slow-streams: how long the streams are held, at most 5s)")
	fs.DurationVar(&c.warmup, "warmup", 2*time.Second, "warm-up before each window, not counted")
	conc := fs.String("concurrency", "32,128", "concurrent clients, comma-separated (with --rate: the most requests in flight)")
	fs.Float64Var(&c.rate, "rate", 0, "requests per second per cell (open loop); 0: closed loop")
	paths := fs.String("paths", strings.Join(benchPaths(), ","), "paths to measure: direct, bare, spillway")
	modes := fs.String("modes", strings.Join(benchModes(), ","), "request kinds: plain, stream, translated")
	drivers := fs.String("driver", "go", "load generators, comma-separated: go (this binary's), wrk (installed with apt-get when missing and root); go,wrk measures every cell with both")
	pin := fs.String("pin", "", "pin processes to CPUs, e.g. mock=0,proxy=1,load=0 (ranges as 0-1); proxy covers bare and spillway")
	fs.IntVar(&c.slow, "slow-streams", 0, "RSS mode: hold this many slow streams open through bare and spillway (instead of the table)")
	fs.IntVar(&c.events, "events", 20, "content events per streamed answer (the mock's tokens)")
	fs.StringVar(&c.jsonPath, "json", "", "also write every figure to this JSON file")
	fs.StringVar(&c.exe, "exe", "", "binary to run as mock, proxy and gateway (default: this one)")
	fs.IntVar(&c.rounds, "rounds", 1, "measure every cell this many times, paths interleaved, and report each ratio's median over the rounds (a shared machine's drift moves single runs)")
	fs.BoolVar(&c.together, "together", false, "load bare and spillway at the same time, each with the cell's clients, so drift on a shared machine moves both alike: CPU per request is compared, throughput is not (they share the cores)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), benchUsage)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if err := noArgs(fs); err != nil {
		return nil, err
	}
	var err error
	if c.concurrency, err = parseIntList(*conc); err != nil {
		return nil, usageErrorf("--concurrency: %v", err)
	}
	if c.paths, err = parseChoices(*paths, benchPaths()); err != nil {
		return nil, usageErrorf("--paths: %v", err)
	}
	if c.modes, err = parseChoices(*modes, benchModes()); err != nil {
		return nil, usageErrorf("--modes: %v", err)
	}
	if c.drivers, err = parseChoices(*drivers, benchDrivers()); err != nil {
		return nil, usageErrorf("--driver: %v", err)
	}
	if c.pin, err = parsePin(*pin); err != nil {
		return nil, usageErrorf("--pin: %v", err)
	}
	switch {
	case c.duration <= 0 || c.warmup < 0:
		return nil, usageErrorf("--duration must be positive and --warmup not negative")
	case c.rate < 0 || math.IsNaN(c.rate) || math.IsInf(c.rate, 0):
		return nil, usageErrorf("--rate must be a positive number (or 0 for a closed loop)")
	case c.slow < 0 || c.slow > 100_000:
		return nil, usageErrorf("--slow-streams must be from 0 to 100000")
	case c.events < 1 || c.events > 10_000:
		return nil, usageErrorf("--events must be from 1 to 10000")
	case c.rounds < 1 || c.rounds > 100:
		return nil, usageErrorf("--rounds must be from 1 to 100")
	case c.rounds > 1 && c.slow > 0:
		return nil, usageErrorf("--rounds applies to the table, not to --slow-streams")
	case c.slow > 0 && slices.Contains(c.drivers, "wrk"):
		return nil, usageErrorf("--driver wrk applies to the table, not to --slow-streams")
	case c.rate > 0 && slices.Contains(c.drivers, "wrk"):
		return nil, usageErrorf("--driver wrk runs a closed loop: it does not take --rate")
	case c.together && c.slow > 0:
		return nil, usageErrorf("--together applies to the table, not to --slow-streams")
	case c.together && !(slices.Contains(c.paths, "bare") && slices.Contains(c.paths, "spillway")):
		return nil, usageErrorf("--together compares bare and spillway: --paths must name both")
	}
	if c.exe == "" {
		if c.exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("finding this binary: %w", err)
		}
	}
	return c, nil
}

// parseIntList parses "32,128": positive numbers, at most 100000 each.
func parseIntList(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 100_000 {
			return nil, fmt.Errorf("%q is not a number from 1 to 100000", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// parseChoices parses a comma-separated subset of allowed, returned in
// allowed's order without repeats.
func parseChoices(s string, allowed []string) ([]string, error) {
	want := map[string]bool{}
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if !slices.Contains(allowed, f) {
			return nil, fmt.Errorf("%q is not one of %s", f, strings.Join(allowed, ", "))
		}
		want[f] = true
	}
	var out []string
	for _, a := range allowed {
		if want[a] {
			out = append(out, a)
		}
	}
	return out, nil
}

// parsePin parses "mock=0,proxy=1,load=0" (CPU ranges as "0-1"); "" pins
// nothing.
func parsePin(s string) (map[string][]int, error) {
	out := map[string][]int{}
	if s == "" {
		return out, nil
	}
	for f := range strings.SplitSeq(s, ",") {
		role, cpus, ok := strings.Cut(f, "=")
		role = strings.TrimSpace(role)
		if !ok || (role != "mock" && role != "proxy" && role != "load") {
			return nil, fmt.Errorf("%q is not mock=CPUS, proxy=CPUS or load=CPUS", f)
		}
		if _, dup := out[role]; dup {
			return nil, fmt.Errorf("%s pinned twice", role)
		}
		list, err := loadgen.ParseCPUList(strings.TrimSpace(cpus))
		if err != nil {
			return nil, err
		}
		out[role] = list
	}
	return out, nil
}

// bencher is one bench run: its children and what it measured.
type bencher struct {
	cfg            *benchConfig
	stdout, stderr io.Writer
	hz             int64
	dir            string
	children       []*child
	mock, bare, gw *child
	key            string
	// wrkBin and wrkScript are the wrk binary and bench.lua's path, when
	// wrk drives.
	wrkBin, wrkScript string
}

// benchReport is everything a run measured, as --json writes it.
type benchReport struct {
	Started           time.Time        `json:"started"`
	GoVersion         string           `json:"go_version"`
	NumCPU            int              `json:"num_cpu"`
	ClockTicks        int64            `json:"clock_ticks_per_s"`
	ClockTicksAssumed bool             `json:"clock_ticks_assumed,omitempty"`
	Drivers           []string         `json:"drivers"`
	Duration          float64          `json:"duration_s"`
	Warmup            float64          `json:"warmup_s"`
	Rate              float64          `json:"rate,omitempty"`
	Events            int              `json:"events"`
	Rounds            int              `json:"rounds"`
	Pin               map[string][]int `json:"pin,omitempty"`
	// LoadAvg is /proc/loadavg's 1, 5 and 15 minute figures at the start
	// and the end: other work on the machine moves every absolute figure.
	LoadAvg [2]string     `json:"loadavg,omitempty"`
	Cells   []*benchCell  `json:"cells,omitempty"`
	Ratios  []*benchRatio `json:"ratios,omitempty"`
	Slow    []*slowResult `json:"slow_streams,omitempty"`
}

// benchCell is one path × mode × concurrency measurement.
type benchCell struct {
	// Driver is the load generator: go or wrk.
	Driver      string `json:"driver"`
	Path        string `json:"path"`
	Mode        string `json:"mode"`
	Concurrency int    `json:"concurrency"`
	Round       int    `json:"round"`
	// SameAs names the mode whose measurement this is ("stream" for a
	// translated cell of a path that does not translate).
	SameAs string `json:"same_as,omitempty"`
	// Together: measured at the same time as the other proxy's cell
	// (--together); its throughput shares the cores with that one.
	Together bool `json:"together,omitempty"`
	// From and To are when the window's samples were taken.
	From time.Time       `json:"window_from"`
	To   time.Time       `json:"window_to"`
	Load *loadgen.Result `json:"load"`
	// Wrk is wrk's own report of the window (driver wrk): bench.lua's
	// counts and its text report's requests/sec and --latency
	// distribution, to check Load against.
	Wrk *wrk.Report `json:"wrk,omitempty"`
	// CPU µs per counted answer over the window. Proxy is the bare proxy
	// or spillway; none on the direct path. Load is the driver's own: this
	// process for go, the wrk process for wrk (its whole run).
	ProxyCPU float64 `json:"proxy_cpu_us_per_req,omitempty"`
	MockCPU  float64 `json:"mock_cpu_us_per_req"`
	LoadCPU  float64 `json:"load_cpu_us_per_req"`
	// Resident memory at the window's end, KiB.
	ProxyRSS int64 `json:"proxy_rss_kib,omitempty"`
	MockRSS  int64 `json:"mock_rss_kib"`
}

// benchRatio compares spillway with bare and direct for one mode and
// concurrency.
type benchRatio struct {
	Driver      string  `json:"driver"`
	Mode        string  `json:"mode"`
	Concurrency int     `json:"concurrency"`
	CPU         float64 `json:"cpu_spillway_over_bare,omitempty"`
	CPUTarget   float64 `json:"cpu_target"`
	RPS         float64 `json:"rps_spillway_over_bare,omitempty"`
	RPSDirect   float64 `json:"rps_spillway_over_direct,omitempty"`
	// RSS is spillway's resident memory over bare's at the window's end.
	RSS float64 `json:"rss_spillway_over_bare,omitempty"`
	// Time-to-first-byte overhead over direct, ms, streams only.
	TTFBP50     *float64 `json:"ttfb_overhead_p50_ms,omitempty"`
	TTFBP99     *float64 `json:"ttfb_overhead_p99_ms,omitempty"`
	BareTTFBP50 *float64 `json:"bare_ttfb_overhead_p50_ms,omitempty"`
	BareTTFBP99 *float64 `json:"bare_ttfb_overhead_p99_ms,omitempty"`
	// With --rounds above 1 the figures above are medians over the
	// rounds; these are the rounds' own CPU and throughput ratios.
	CPURounds []float64 `json:"cpu_ratio_rounds,omitempty"`
	RPSRounds []float64 `json:"rps_ratio_rounds,omitempty"`
}

// slowResult is the RSS mode's finding for one proxy.
type slowResult struct {
	Path         string              `json:"path"`
	Streams      int                 `json:"streams"`
	Open         int                 `json:"open"`
	IdleRSS      int64               `json:"idle_rss_kib"`
	HeldRSS      int64               `json:"held_rss_kib"`
	PerStreamKiB float64             `json:"per_stream_kib"`
	Hold         *loadgen.HoldResult `json:"hold"`
}

func (b *bencher) run(ctx context.Context) error {
	var known bool
	b.hz, known = loadgen.ClockTicks()
	rep := &benchReport{
		Started: time.Now().UTC(), GoVersion: runtime.Version(), NumCPU: runtime.NumCPU(),
		ClockTicks: b.hz, ClockTicksAssumed: !known, Duration: b.cfg.duration.Seconds(),
		Warmup: b.cfg.warmup.Seconds(), Rate: b.cfg.rate, Events: b.cfg.events, Rounds: b.cfg.rounds, Drivers: b.cfg.drivers,
	}
	rep.LoadAvg[0] = loadAvg()
	if len(b.cfg.pin) > 0 {
		rep.Pin = b.cfg.pin
	}
	if cpus := b.cfg.pin["load"]; cpus != nil {
		if err := loadgen.PinSelf(cpus); err != nil {
			return err
		}
	}
	var err error
	if b.dir, err = os.MkdirTemp("", "spillway-bench-"); err != nil {
		return err
	}
	defer os.RemoveAll(b.dir)
	if slices.Contains(b.cfg.drivers, "wrk") {
		if b.wrkBin, err = wrk.Ensure(ctx, b.stderr); err != nil {
			return err
		}
		if b.wrkScript, err = wrk.WriteScript(b.dir); err != nil {
			return err
		}
	}
	if err := b.startAll(ctx); err != nil {
		return err
	}
	b.header(rep, known)
	if b.cfg.slow > 0 {
		if rep.Slow, err = b.slowStreams(ctx); err != nil {
			return err
		}
		b.printSlow(rep.Slow)
	} else {
		var perRound [][]*benchRatio
		for r := 1; r <= b.cfg.rounds; r++ {
			cells, err := b.matrix(ctx, r)
			if err != nil {
				return err
			}
			rep.Cells = append(rep.Cells, cells...)
			perRound = append(perRound, ratios(cells, b.cfg))
		}
		rep.Ratios = medianRatios(perRound)
		if err := b.printCells(rep.Cells); err != nil {
			return err
		}
		if err := printRatios(b.stdout, rep.Ratios); err != nil {
			return err
		}
	}
	rep.LoadAvg[1] = loadAvg()
	if rep.LoadAvg[0] != "" {
		fmt.Fprintf(b.stdout, "load average (1, 5, 15 min): %s at the start, %s at the end\n", rep.LoadAvg[0], rep.LoadAvg[1])
	}
	if b.cfg.jsonPath != "" {
		data, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(b.cfg.jsonPath, append(data, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// loadAvg is the first three fields of /proc/loadavg; "" where there is
// none.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

func (b *bencher) header(rep *benchReport, known bool) {
	hz := fmt.Sprintf("USER_HZ %d", b.hz)
	if !known {
		hz += " (assumed: the kernel's value could not be read)"
	}
	loop := "closed loop"
	if b.cfg.rate > 0 {
		loop = fmt.Sprintf("open loop at %g req/s", b.cfg.rate)
	}
	plan := fmt.Sprintf("%s per cell after a %s warm-up, %s", b.cfg.duration, b.cfg.warmup, loop)
	if b.cfg.slow > 0 {
		plan = fmt.Sprintf("%d slow streams held for %s after a %s warm-up", b.cfg.slow, min(b.cfg.duration, benchSlowMaxHold), b.cfg.warmup)
	}
	fmt.Fprintf(b.stdout, "spillway bench: %s, %d CPUs, %s; %s\n", rep.GoVersion, rep.NumCPU, hz, plan)
	for _, c := range b.children {
		pin := ""
		if cpus := b.cfg.pin[c.role]; cpus != nil {
			pin = fmt.Sprintf(", CPUs %v", cpus)
		}
		fmt.Fprintf(b.stdout, "  %-8s pid %d %s%s\n", c.name, c.cmd.Process.Pid, c.url, pin)
	}
	fmt.Fprintln(b.stdout)
}

// startAll starts the mock, the bare proxy and spillway, and checks each
// path answers once.
func (b *bencher) startAll(ctx context.Context) error {
	var err error
	if b.mock, err = b.start(ctx, "mock", "mock", "mock", "--kind", "openai", "--name", "bench",
		"--listen", "127.0.0.1:0", "--fault", fmt.Sprintf("tokens=%d", b.cfg.events)); err != nil {
		return err
	}
	if b.wants("bare") {
		if b.bare, err = b.start(ctx, "proxy", "bare", "bench-proxy", "--target", b.mock.url, "--listen", "127.0.0.1:0"); err != nil {
			return err
		}
	}
	if b.wants("spillway") {
		cfg, err := b.gatewayConfig(ctx)
		if err != nil {
			return err
		}
		if b.gw, err = b.start(ctx, "proxy", "spillway", "serve", "--config", cfg, "--listen", "127.0.0.1:0", "--reload-every", "0"); err != nil {
			return err
		}
	}
	// One answer per path before any load: a broken path fails in
	// seconds, with its process's own words.
	for _, p := range b.cfg.paths {
		for _, m := range b.cfg.modes {
			res, err := loadgen.Run(ctx, loadgen.Options{Target: b.target(p, m), Requests: 1, Client: loadgen.NewClient(1, 10*time.Second)})
			if err != nil {
				return err
			}
			if res.OK != 1 {
				return fmt.Errorf("%s %s: the first request failed (cut %d, errors %v)\n%s", p, m, res.Cut, res.Errors, b.tails())
			}
		}
	}
	return nil
}

func (b *bencher) wants(path string) bool { return slices.Contains(b.cfg.paths, path) }

// gatewayConfig writes the gateway's config and prepares its ledger: a
// key with a budget, a daily cap and RPM/TPM limits, and budgets at org,
// team and model scope, all far above what a run spends, so every gate is
// checked and none refuses.
func (b *bencher) gatewayConfig(ctx context.Context) (string, error) {
	db := filepath.Join(b.dir, "ledger.db")
	yaml := fmt.Sprintf(`server: {shutdown_grace: 2s}
ledger: {path: %s}
deployments:
  - {id: mock, provider: openai, base_url: %s, model: %s, price: {input_per_mtok: 3, output_per_mtok: 15}, context_window: 128000, max_output_tokens: 4096}
pools: [{id: bench, model: %s, deployments: [mock]}]
routes: [{model: %s, pool: bench}]
`, db, b.mock.url, benchModel, benchModel, benchModel)
	path := filepath.Join(b.dir, "spillway.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		return "", err
	}
	st, err := sqlite.Open(ctx, db)
	if err != nil {
		return "", err
	}
	defer st.Close()
	usd := 1e6
	lim := ledger.Limits{CreditUSD: &usd, DailyCapUSD: &usd, RPM: 1 << 30, TPM: 1 << 40}
	kc, err := keys.Create(ctx, st, &keys.Request{Org: "bench", Team: "bench", Limits: lim}, time.Now())
	if err != nil {
		return "", fmt.Errorf("creating the bench key: %w", err)
	}
	b.key = kc.Key
	for _, s := range []struct{ scope, id string }{{ledger.ScopeOrg, "bench"}, {ledger.ScopeTeam, "bench"}, {ledger.ScopeModel, benchModel}} {
		bud, err := lim.Budget(s.scope, s.id, time.Now())
		if err != nil {
			return "", err
		}
		if err := st.SetBudget(ctx, bud); err != nil {
			return "", fmt.Errorf("setting the %s budget: %w", s.scope, err)
		}
	}
	return path, nil
}

// target is the request of one path and mode.
func (b *bencher) target(path, mode string) loadgen.Target {
	const msgs = `"messages":[{"role":"user","content":"Write twenty words about rivers."}]`
	t := loadgen.Target{Name: path + " " + mode, Header: http.Header{"Content-Type": {"application/json"}}}
	base := b.mock.url
	switch path {
	case "bare":
		base = b.bare.url
	case "spillway":
		base = b.gw.url
	}
	switch {
	case mode == "plain":
		t.URL = base + "/v1/chat/completions"
		t.Body = []byte(`{"model":"` + benchModel + `","max_tokens":256,` + msgs + `}`)
		t.Terminator = []byte("}")
	case mode == "translated" && path == "spillway":
		t.URL = base + "/v1/messages"
		t.Body = []byte(`{"model":"` + benchModel + `","max_tokens":256,"stream":true,` + msgs + `}`)
		t.Header.Set("Anthropic-Version", "2023-06-01")
		t.Stream, t.Terminator = true, []byte(`data: {"type":"message_stop"}`)
	default: // stream, and translated where nothing translates
		t.URL = base + "/v1/chat/completions"
		t.Body = []byte(`{"model":"` + benchModel + `","max_tokens":256,"stream":true,"stream_options":{"include_usage":true},` + msgs + `}`)
		t.Stream, t.Terminator = true, []byte("data: [DONE]")
	}
	if path == "spillway" {
		t.Header.Set("Authorization", "Bearer "+b.key)
	}
	return t
}

// matrix measures every cell: modes outermost, then concurrency, then
// drivers, paths innermost, so drift on the machine touches the paths
// being compared alike.
func (b *bencher) matrix(ctx context.Context, round int) ([]*benchCell, error) {
	var cells []*benchCell
	total := 0
	for _, m := range b.cfg.modes {
		for _, p := range b.cfg.paths {
			if !reuses(p, m, b.cfg) {
				total += len(b.cfg.concurrency) * len(b.cfg.drivers)
			}
		}
	}
	n := 0
	progress := func(c *benchCell) {
		n++
		c.Round = round
		prefix := ""
		if b.cfg.rounds > 1 {
			prefix = fmt.Sprintf("round %d/%d ", round, b.cfg.rounds)
		}
		fmt.Fprintf(b.stderr, "%s[%d/%d] %-3s %-8s %-10s c=%-4d %8.0f rps  ok %d cut %d errors %d  proxy %.0f µs/req\n",
			prefix, n, total, c.Driver, c.Path, c.Mode, c.Concurrency, c.Load.RPS, c.Load.OK, c.Load.Cut, c.Load.Failed()-c.Load.Cut, c.ProxyCPU)
		cells = append(cells, c)
	}
	for _, m := range b.cfg.modes {
		for _, conc := range b.cfg.concurrency {
			for _, d := range b.cfg.drivers {
				for _, p := range b.cfg.paths {
					if b.cfg.together && p != "direct" {
						continue // below, as a pair
					}
					if reuses(p, m, b.cfg) {
						src := findCell(cells, d, p, "stream", conc)
						cp := *src
						cp.Mode, cp.SameAs = m, "stream"
						cells = append(cells, &cp)
						continue
					}
					c, err := b.cell(ctx, d, p, m, conc)
					if err != nil {
						return nil, err
					}
					progress(c)
				}
				if b.cfg.together {
					pair, err := b.pair(ctx, d, m, conc)
					if err != nil {
						return nil, err
					}
					for _, c := range pair {
						progress(c)
					}
				}
			}
		}
	}
	return cells, nil
}

// pair measures bare and spillway at the same time, each loaded with conc
// clients by its own driver instance, their windows started together. On a
// shared machine, load from elsewhere then moves both alike, and their CPU
// per request compares far more steadily than in cells measured one after
// the other. Throughput, the mock's and the load generator's CPU are shared
// by the two and so not reported per cell.
func (b *bencher) pair(ctx context.Context, driver, mode string, conc int) ([]*benchCell, error) {
	if err := b.mockControl(ctx, http.MethodPost, "/_mock/reset", ""); err != nil {
		return nil, err
	}
	paths := []string{"bare", "spillway"}
	out := make([]*benchCell, len(paths))
	errs := make([]error, len(paths))
	var wg sync.WaitGroup
	for i, p := range paths {
		wg.Go(func() { out[i], errs[i] = b.measure(ctx, driver, p, mode, conc) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, c := range out {
		c.Together = true
		c.MockCPU, c.LoadCPU = 0, 0
	}
	return out, nil
}

// reuses reports whether a path's translated cell is its stream cell: only
// spillway translates, and the stream cell exists when stream is measured.
// With --together, bare is measured again beside spillway's translated
// streams (a cell from another window would defeat the pairing).
func reuses(path, mode string, cfg *benchConfig) bool {
	if cfg.together && path == "bare" {
		return false
	}
	return mode == "translated" && path != "spillway" && slices.Contains(cfg.modes, "stream")
}

func findCell(cells []*benchCell, driver, path, mode string, conc int) *benchCell {
	for _, c := range cells {
		if c.Driver == driver && c.Path == path && c.Mode == mode && c.Concurrency == conc {
			return c
		}
	}
	return nil
}

// cell measures one path, mode and concurrency with one driver.
func (b *bencher) cell(ctx context.Context, driver, path, mode string, conc int) (*benchCell, error) {
	// The mock keeps every request it saw; forget them so its memory
	// stays flat across cells.
	if err := b.mockControl(ctx, http.MethodPost, "/_mock/reset", ""); err != nil {
		return nil, err
	}
	return b.measure(ctx, driver, path, mode, conc)
}

// measure loads one path with one driver and samples the processes around
// the window.
func (b *bencher) measure(ctx context.Context, driver, path, mode string, conc int) (*benchCell, error) {
	proxy := map[string]*child{"bare": b.bare, "spillway": b.gw}[path]
	procs := []*child{b.mock}
	if proxy != nil {
		procs = append(procs, proxy)
	}
	var before, after []loadgen.ProcSample
	var sampleErr error
	var from, to time.Time
	sample := func() []loadgen.ProcSample {
		if from.IsZero() {
			from = time.Now()
		} else {
			to = time.Now()
		}
		out := make([]loadgen.ProcSample, len(procs)+1)
		for i, p := range procs {
			s, err := loadgen.ReadProc(p.cmd.Process.Pid, b.hz)
			if err != nil && sampleErr == nil {
				sampleErr = fmt.Errorf("sampling %s: %w", p.name, err)
			}
			out[i] = s
		}
		out[len(procs)], _ = loadgen.ReadProc(os.Getpid(), b.hz)
		return out
	}
	var res *loadgen.Result
	var wrkRep *wrk.Report
	var wrkCPU time.Duration
	var err error
	if driver == "wrk" {
		wrkRep, wrkCPU, err = b.wrkCell(ctx, path, mode, conc, func() { before = sample() }, func() { after = sample() })
		if err == nil {
			res = wrkRep.Result(b.target(path, mode).Name, conc)
		}
	} else {
		client := loadgen.NewClient(conc, benchReqTimeout)
		defer client.CloseIdleConnections()
		res, err = loadgen.Run(ctx, loadgen.Options{
			Target: b.target(path, mode), Client: client, Concurrency: conc, Rate: b.cfg.rate,
			Warmup: b.cfg.warmup, Duration: b.cfg.duration,
			OnWindowStart: func() { before = sample() },
			OnWindowEnd:   func() { after = sample() },
		})
	}
	if err != nil {
		return nil, err
	}
	if sampleErr != nil {
		return nil, fmt.Errorf("%w\n%s", sampleErr, b.tails())
	}
	c := &benchCell{Driver: driver, Path: path, Mode: mode, Concurrency: conc, Load: res, Wrk: wrkRep, From: from, To: to}
	if before == nil || after == nil {
		return c, nil
	}
	n := float64(res.Completed())
	perReq := func(i int) float64 {
		if n == 0 {
			return 0
		}
		return float64(after[i].CPU-before[i].CPU) / float64(time.Microsecond) / n
	}
	c.MockCPU, c.MockRSS = perReq(0), after[0].RSS>>10
	if proxy != nil {
		c.ProxyCPU, c.ProxyRSS = perReq(1), after[1].RSS>>10
	}
	c.LoadCPU = perReq(len(procs))
	if driver == "wrk" && n > 0 {
		c.LoadCPU = float64(wrkCPU) / float64(time.Microsecond) / n
	}
	return c, nil
}

// wrkCell loads one path with wrk: a warm-up run (whole seconds, as wrk
// counts), then the measured run, with the processes sampled just before
// it starts and just after it ends. Unlike the Go driver's window, that
// counts the CPU of the requests wrk abandons in flight when it stops and
// of opening its connections: at most conc requests' worth, a percent or
// two of a run of several seconds.
func (b *bencher) wrkCell(ctx context.Context, path, mode string, conc int, start, end func()) (*wrk.Report, time.Duration, error) {
	t := b.target(path, mode)
	u, err := url.Parse(t.URL)
	if err != nil {
		return nil, 0, err
	}
	wmode := mode
	if mode == "translated" && path != "spillway" {
		wmode = "stream" // only spillway translates
	}
	key := ""
	if path == "spillway" {
		key = b.key
	}
	o := wrk.Options{Bin: b.wrkBin, Script: b.wrkScript, BaseURL: u.Scheme + "://" + u.Host, Mode: wmode, Key: key,
		Model: benchModel, Connections: conc, Timeout: benchReqTimeout, CPUs: b.cfg.pin["load"]}
	if b.cfg.warmup > 0 {
		o.Duration = b.cfg.warmup
		if _, _, err := wrk.Run(ctx, o); err != nil {
			return nil, 0, fmt.Errorf("%s warm-up: %w\n%s", t.Name, err, b.tails())
		}
	}
	o.Duration = b.cfg.duration
	start()
	rep, cpu, err := wrk.Run(ctx, o)
	end()
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w\n%s", t.Name, err, b.tails())
	}
	return rep, cpu, nil
}

func (b *bencher) mockControl(ctx context.Context, method, path, body string) error {
	req, err := http.NewRequestWithContext(ctx, method, b.mock.url+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("mock control %s: %w", path, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("mock control %s: %s: %s", path, resp.Status, msg)
	}
	return nil
}

// ratios compares spillway with bare (CPU, throughput, memory) and with
// direct (time to first byte) for every mode, concurrency and driver
// measured.
func ratios(cells []*benchCell, cfg *benchConfig) []*benchRatio {
	var out []*benchRatio
	for _, m := range cfg.modes {
		for _, conc := range cfg.concurrency {
			for _, drv := range cfg.drivers {
				if r := ratioOf(cells, drv, m, conc); r != nil {
					out = append(out, r)
				}
			}
		}
	}
	return out
}

func ratioOf(cells []*benchCell, drv, m string, conc int) *benchRatio {
	gw := findCell(cells, drv, "spillway", m, conc)
	if gw == nil {
		return nil
	}
	r := &benchRatio{Driver: drv, Mode: m, Concurrency: conc, CPUTarget: benchCPUTarget(m)}
	bare := findCell(cells, drv, "bare", m, conc)
	if bare != nil {
		r.CPU = ratio(gw.ProxyCPU, bare.ProxyCPU)
		r.RSS = ratio(float64(gw.ProxyRSS), float64(bare.ProxyRSS))
		if !gw.Together {
			r.RPS = ratio(gw.Load.RPS, bare.Load.RPS)
		}
	}
	direct := findCell(cells, drv, "direct", m, conc)
	if direct == nil || gw.Together {
		return r // direct ran alone: its throughput and first byte compare with neither
	}
	r.RPSDirect = ratio(gw.Load.RPS, direct.Load.RPS)
	if d := direct.Load.TTFB; d != nil && gw.Load.TTFB != nil {
		r.TTFBP50, r.TTFBP99 = ptr(gw.Load.TTFB.P50-d.P50), ptr(gw.Load.TTFB.P99-d.P99)
		if bare != nil && bare.Load.TTFB != nil {
			r.BareTTFBP50, r.BareTTFBP99 = ptr(bare.Load.TTFB.P50-d.P50), ptr(bare.Load.TTFB.P99-d.P99)
		}
	}
	return r
}

// medianRatios folds the rounds' ratios (each round lists the same modes
// and concurrencies in the same order) into one list of medians, keeping
// each round's CPU and throughput ratio beside them.
func medianRatios(rounds [][]*benchRatio) []*benchRatio {
	if len(rounds) == 1 {
		return rounds[0]
	}
	out := make([]*benchRatio, len(rounds[0]))
	for i, first := range rounds[0] {
		m := &benchRatio{Driver: first.Driver, Mode: first.Mode, Concurrency: first.Concurrency, CPUTarget: first.CPUTarget}
		var cpu, rps, direct, rss []float64
		var t50, t99, b50, b99 []*float64
		for _, rs := range rounds {
			r := rs[i]
			cpu, rps, direct, rss = append(cpu, r.CPU), append(rps, r.RPS), append(direct, r.RPSDirect), append(rss, r.RSS)
			t50, t99, b50, b99 = append(t50, r.TTFBP50), append(t99, r.TTFBP99), append(b50, r.BareTTFBP50), append(b99, r.BareTTFBP99)
		}
		m.CPURounds, m.RPSRounds = cpu, rps
		m.CPU, m.RPS, m.RPSDirect, m.RSS = median(cpu), median(rps), median(direct), median(rss)
		m.TTFBP50, m.TTFBP99, m.BareTTFBP50, m.BareTTFBP99 = medianPtr(t50), medianPtr(t99), medianPtr(b50), medianPtr(b99)
		out[i] = m
	}
	return out
}

// median of the known values of vs (above 0: ratio reports an unknown
// ratio as 0), the mean of the middle two for an even count; 0 when none is
// known. vs is not modified.
func median(vs []float64) float64 {
	s := slices.DeleteFunc(slices.Clone(vs), func(v float64) bool { return v <= 0 })
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func medianPtr(vs []*float64) *float64 {
	var fs []float64
	for _, v := range vs {
		if v != nil {
			fs = append(fs, *v)
		}
	}
	if len(fs) == 0 {
		return nil
	}
	return ptr(median(fs))
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

func ptr(f float64) *float64 { return &f }

func (b *bencher) printCells(cells []*benchCell) error {
	rs := make([]*loadgen.Result, len(cells))
	for i, c := range cells {
		rs[i] = c.Load
		name := c.Load.Name
		if c.SameAs != "" {
			name = c.Path + " " + c.Mode + " (=" + c.SameAs + ")"
		}
		if c.Driver == "wrk" {
			name = "wrk " + name
		}
		if b.cfg.rounds > 1 {
			name = fmt.Sprintf("r%d %s", c.Round, name)
		}
		if name != c.Load.Name {
			cp := *c.Load
			cp.Name = name
			rs[i] = &cp
		}
	}
	num := func(f func(c *benchCell) float64, format string) func(int) string {
		return func(i int) string {
			if v := f(cells[i]); v > 0 {
				return fmt.Sprintf(format, v)
			}
			return "-"
		}
	}
	err := loadgen.WriteTable(b.stdout, rs,
		loadgen.Column{Header: "proxy cpu us/req", Value: num(func(c *benchCell) float64 { return c.ProxyCPU }, "%.1f")},
		loadgen.Column{Header: "mock us/req", Value: num(func(c *benchCell) float64 { return c.MockCPU }, "%.1f")},
		loadgen.Column{Header: "load us/req", Value: num(func(c *benchCell) float64 { return c.LoadCPU }, "%.1f")},
		loadgen.Column{Header: "proxy rss MiB", Value: num(func(c *benchCell) float64 { return float64(c.ProxyRSS) / 1024 }, "%.1f")},
		loadgen.Column{Header: "mock rss MiB", Value: num(func(c *benchCell) float64 { return float64(c.MockRSS) / 1024 }, "%.1f")},
	)
	if err != nil {
		return err
	}
	for _, c := range cells {
		if c.SameAs == "" && c.Load.Failed() > 0 {
			fmt.Fprintf(b.stdout, "warning: %s %s %s c=%d had %d cut and %v other failures: its figures are suspect\n",
				c.Driver, c.Path, c.Mode, c.Concurrency, c.Load.Cut, c.Load.Errors)
		}
	}
	return nil
}

func printRatios(w io.Writer, rs []*benchRatio) error {
	if len(rs) == 0 {
		return nil
	}
	title := "spillway/bare (CPU per request, throughput) and first-byte overhead over direct (ms):"
	if len(rs[0].CPURounds) > 1 {
		title = fmt.Sprintf("medians over %d rounds of spillway/bare (CPU per request, throughput) and first-byte overhead over direct (ms):", len(rs[0].CPURounds))
	}
	if rs[0].RPS == 0 && rs[0].CPU > 0 {
		title += "\n(bare and spillway loaded together: CPU per request compares, throughput and first byte do not)"
	}
	fmt.Fprintln(w, "\n"+title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tconc\tdriver\tcpu ratio\ttarget\t\trps ratio\trps/direct\trss ratio\tttfb+ p50\tttfb+ p99\tbare ttfb+ p50\tbare ttfb+ p99\tcpu ratio by round\t")
	for _, r := range rs {
		verdict := "-"
		if r.CPU > 0 {
			verdict = "ok"
			if r.CPU > r.CPUTarget {
				verdict = "over"
			}
		}
		byRound := "-"
		if len(r.CPURounds) > 1 {
			parts := make([]string, len(r.CPURounds))
			for i, v := range r.CPURounds {
				parts[i] = fmt.Sprintf("%.2f", v)
			}
			byRound = strings.Join(parts, " ")
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t<= %.1f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Mode, r.Concurrency, r.Driver, fx(r.CPU), r.CPUTarget, verdict,
			fx(r.RPS), fx(r.RPSDirect), fx(r.RSS), fms(r.TTFBP50), fms(r.TTFBP99), fms(r.BareTTFBP50), fms(r.BareTTFBP99), byRound)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "targets: cpu ratio plain <= 1.2, stream <= 1.3, translated <= 1.4; rps ratio >= 0.9 at 128 clients; rss ratio <= 2; ttfb+ p99 < 1 ms with one stream in flight")
	return nil
}

func fx(v float64) string {
	if v <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", v)
}

func fms(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%+.3f", *v)
}

// slowStreams is the RSS mode: for each proxy, warm it with fast streams,
// slow the mock to one event a second, read the proxy's idle RSS, hold N
// streams open through it, and read its RSS while they are in flight.
func (b *bencher) slowStreams(ctx context.Context) ([]*slowResult, error) {
	var out []*slowResult
	fast := fmt.Sprintf("tokens=%d", b.cfg.events)
	slow := fmt.Sprintf("tokens=%d;event_delay=1s", benchSlowTokens)
	hold := min(b.cfg.duration, benchSlowMaxHold)
	for _, p := range []*child{b.bare, b.gw} {
		if p == nil {
			continue
		}
		t := b.target(p.name, "stream")
		if err := b.mockControl(ctx, http.MethodPut, "/_mock/fault", fast); err != nil {
			return nil, err
		}
		if b.cfg.warmup > 0 {
			client := loadgen.NewClient(32, benchReqTimeout)
			_, err := loadgen.Run(ctx, loadgen.Options{Target: t, Client: client, Concurrency: min(32, b.cfg.slow), Duration: b.cfg.warmup})
			client.CloseIdleConnections()
			if err != nil {
				return nil, err
			}
		}
		if err := b.mockControl(ctx, http.MethodPut, "/_mock/fault", slow); err != nil {
			return nil, err
		}
		idle, err := loadgen.ReadProc(p.cmd.Process.Pid, b.hz)
		if err != nil {
			return nil, err
		}
		r := &slowResult{Path: p.name, Streams: b.cfg.slow, IdleRSS: idle.RSS >> 10}
		client := loadgen.NewClient(b.cfg.slow, 0)
		r.Hold, err = loadgen.Hold(ctx, loadgen.HoldOptions{Target: t, Client: client, N: b.cfg.slow, During: func(open int) {
			r.Open = open
			r.HeldRSS = b.peakRSS(ctx, p, hold) >> 10
		}})
		client.CloseIdleConnections()
		if err != nil {
			return nil, err
		}
		if r.Open > 0 {
			r.PerStreamKiB = float64(r.HeldRSS-r.IdleRSS) / float64(r.Open)
		}
		fmt.Fprintf(b.stderr, "%s: %d of %d slow streams open, RSS %d KiB idle, %d KiB held\n", p.name, r.Open, r.Streams, r.IdleRSS, r.HeldRSS)
		out = append(out, r)
		if err := b.mockControl(ctx, http.MethodPost, "/_mock/reset", ""); err != nil {
			return nil, err
		}
	}
	return out, b.mockControl(ctx, http.MethodPut, "/_mock/fault", fast)
}

// peakRSS samples p's RSS every benchSlowSample for d and returns the
// highest reading, bytes.
func (b *bencher) peakRSS(ctx context.Context, p *child, d time.Duration) int64 {
	var peak int64
	t := time.NewTicker(benchSlowSample)
	defer t.Stop()
	end := time.Now().Add(d)
	for {
		if s, err := loadgen.ReadProc(p.cmd.Process.Pid, b.hz); err == nil {
			peak = max(peak, s.RSS)
		}
		if !time.Now().Before(end) {
			return peak
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return peak
		}
	}
}

func (b *bencher) printSlow(rs []*slowResult) {
	fmt.Fprintln(b.stdout, "resident memory per slow stream in flight (one event a second), target <= 64 KiB:")
	tw := tabwriter.NewWriter(b.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "path\tstreams\topen\tidle KiB\theld KiB\tKiB/stream\t\tfailed\t")
	for _, r := range rs {
		verdict := "ok"
		if r.PerStreamKiB > 64 {
			verdict = "over"
		}
		failed := "-"
		if len(r.Hold.Failed) > 0 {
			failed = fmt.Sprint(r.Hold.Failed)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%.1f\t%s\t%s\t\n", r.Path, r.Streams, r.Open, r.IdleRSS, r.HeldRSS, r.PerStreamKiB, verdict, failed)
	}
	_ = tw.Flush()
}

// child is one process the bench started.
type child struct {
	role, name string
	url        string
	cmd        *exec.Cmd
	out        *lineWatch
	errTail    *tailBuffer
	done       chan struct{} // closed when the process has exited
}

// start runs the bench binary with args as a child and waits until it
// prints the URL it listens on.
func (b *bencher) start(ctx context.Context, role, name string, args ...string) (*child, error) {
	c := &child{role: role, name: name, cmd: exec.Command(b.cfg.exe, args...), out: &lineWatch{ready: make(chan string, 1)},
		errTail: &tailBuffer{max: 8 << 10}, done: make(chan struct{})}
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.errTail
	c.cmd.SysProcAttr = loadgen.ChildAttr()
	if err := loadgen.StartPinned(c.cmd, b.cfg.pin[role]); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	b.children = append(b.children, c)
	go func() { _ = c.cmd.Wait(); close(c.done) }()
	t := time.NewTimer(benchStartBound)
	defer t.Stop()
	select {
	case c.url = <-c.out.ready:
		return c, nil
	case <-c.done:
		return nil, fmt.Errorf("%s exited before listening: %s\n%s", name, c.cmd.ProcessState, c.errTail)
	case <-t.C:
		return nil, fmt.Errorf("%s did not listen within %s\n%s", name, benchStartBound, c.errTail)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// stop asks the child to shut down, then kills it after a grace period.
func (c *child) stop() {
	select {
	case <-c.done:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(benchStopGrace)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

// stopAll stops the children, the gateway first so that it drains before
// its provider goes.
func (b *bencher) stopAll() {
	for _, c := range slices.Backward(b.children) {
		c.stop()
	}
}

// tails is every child's last stderr output, for an error message.
func (b *bencher) tails() string {
	var sb strings.Builder
	for _, c := range b.children {
		if s := c.errTail.String(); s != "" {
			fmt.Fprintf(&sb, "--- %s stderr (last lines):\n%s\n", c.name, s)
		}
	}
	return sb.String()
}

// lineWatch is a child's stdout: it sends the first listening URL the
// child prints on ready and discards the rest.
type lineWatch struct {
	mu    sync.Mutex
	part  []byte
	found bool
	ready chan string
}

func (w *lineWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.found {
		return len(p), nil
	}
	w.part = append(w.part, p...)
	for {
		i := bytes.IndexByte(w.part, '\n')
		if i < 0 {
			break
		}
		line := string(w.part[:i])
		w.part = w.part[i+1:]
		if u, ok := listenURL(line); ok {
			w.found = true
			w.ready <- u
			w.part = nil
			break
		}
	}
	if len(w.part) > 64<<10 { // no newline for this long: not our line
		w.part = w.part[:0]
	}
	return len(p), nil
}

// listenURL finds "listening on http://127.0.0.1:PORT" in a line, as the
// mock, the bench proxy and serve print it, and returns the URL.
func listenURL(line string) (string, bool) {
	_, rest, ok := strings.Cut(line, " listening on ")
	if !ok {
		return "", false
	}
	raw, _, _ := strings.Cut(rest, " ")
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.Path != "" || u.RawQuery != "" || u.User != nil || u.Fragment != "" {
		return "", false
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil || (host != "127.0.0.1" && host != "::1" && host != "localhost") {
		return "", false
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", false
	}
	return raw, true
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// runBenchProxy is the baseline: a bare httputil.ReverseProxy made as
// strong as a proxy can cheaply be, so that spillway is compared with the
// least any proxy pays.
func runBenchProxy(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("spillway bench-proxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	target := fs.String("target", "", "upstream base URL (required)")
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on")
	pprofAddr := fs.String("pprof", os.Getenv("SPILLWAY_PPROF_BARE"), "serve Go's pprof profiles on this loopback address, as serve --pprof does, to profile the baseline beside spillway (default $SPILLWAY_PPROF_BARE; empty = off)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if *pprofAddr != "" {
		stop, err := servePprof(*pprofAddr, slog.New(slog.NewTextHandler(stderr, nil)))
		if err != nil {
			return err
		}
		defer stop()
	}
	u, err := url.Parse(*target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--target %q is not an http(s) URL", *target)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: newBareProxy(u, stderr), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "spillway bench-proxy listening on http://%s (to %s)\n", ln.Addr(), u)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// newBareProxy forwards everything to target.
func newBareProxy(target *url.URL, errLog io.Writer) http.Handler {
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        1024,
			MaxIdleConnsPerHost: 512,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		},
		FlushInterval: -1, // flush every write: a stream's events are not held back
		BufferPool:    &proxyBuffers{},
		ErrorLog:      log.New(errLog, "bench-proxy: ", log.LstdFlags),
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Without full duplex the server may consider the request done
		// and cut a response still streaming: about 1 stream in 4-9k on
		// a 2-core machine (golang/go#40747).
		_ = http.NewResponseController(w).EnableFullDuplex()
		rp.ServeHTTP(w, r)
	})
}

// proxyBufSize is the copy buffer of the bare proxy, as httputil's own
// default (32 KiB) but pooled.
const proxyBufSize = 32 << 10

// proxyBuffers pools copy buffers as array pointers, so Put allocates no
// slice header.
type proxyBuffers struct{ p sync.Pool }

func (pb *proxyBuffers) Get() []byte {
	if a, ok := pb.p.Get().(*[proxyBufSize]byte); ok {
		return a[:]
	}
	return new([proxyBufSize]byte)[:]
}

func (pb *proxyBuffers) Put(b []byte) {
	if len(b) == proxyBufSize {
		pb.p.Put((*[proxyBufSize]byte)(b))
	}
}
