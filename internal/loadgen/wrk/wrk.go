// Package wrk drives `spillway bench`'s load with wrk, an outside load
// generator written in C, and reads its report into a loadgen.Result.
//
// The requests are bench.lua's (embedded here, kept byte for byte equal to
// the Go generator's); its done() hook prints one machine-readable line,
// and wrk's own text report (requests/sec, --latency distribution) is
// parsed beside it so the two can be checked against each other.
package wrk

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spillway-gw/spillway/internal/loadgen"
)

// Script is bench.lua: the bench's requests for wrk.
//
//go:embed bench.lua
var Script []byte

// jsonPrefix starts the line bench.lua's done() prints.
const jsonPrefix = "SPILLWAY_WRK_JSON "

// Bounds on what is run and read.
const (
	maxOutput   = 1 << 20 // wrk's report is a few hundred bytes
	killGrace   = 5 * time.Second
	runSlack    = 30 * time.Second // beyond -d, before a run is cancelled
	installTime = 5 * time.Minute
)

// Options are one wrk run. Zero fields take their defaults.
type Options struct {
	// Bin is the wrk binary. Default: "wrk" on PATH.
	Bin string
	// Script is the path bench.lua was written to (WriteScript). Required.
	Script string
	// BaseURL is the scheme, host and port to load, without a path
	// (bench.lua sets the path for the mode). Required.
	BaseURL string
	// Mode is plain, stream or translated. Required.
	Mode string
	// Key, when set, is sent as a bearer token.
	Key string
	// Model is the request's model. Default bench-model.
	Model string
	// Connections is wrk's -c, the requests in flight. Default 1.
	Connections int
	// Threads is wrk's -t, at most Connections. Default min(2, Connections).
	Threads int
	// Duration is wrk's -d, rounded up to whole seconds (wrk counts in
	// seconds). Default 1s.
	Duration time.Duration
	// Timeout is wrk's --timeout per request. Default 60s.
	Timeout time.Duration
	// CPUs pins wrk to these CPUs (loadgen.StartPinned); nil: unpinned.
	CPUs []int
}

// Report is one run's figures: from bench.lua's JSON line, and (Text*)
// from wrk's own text report.
type Report struct {
	DurationUS int64 `json:"duration_us"`
	// Requests is every answer wrk read to its end, of any status.
	Requests int64 `json:"requests"`
	Bytes    int64 `json:"bytes"`
	// OK answers had a 2xx status and their terminator; Cut a 2xx status
	// and not.
	OK     int64 `json:"ok"`
	Cut    int64 `json:"cut"`
	Errors struct {
		Connect int64 `json:"connect"`
		Read    int64 `json:"read"`
		Write   int64 `json:"write"`
		Status  int64 `json:"status"` // a status of 400 or above
		Timeout int64 `json:"timeout"`
	} `json:"errors"`
	LatencyUS struct {
		Min  int64   `json:"min"`
		Mean float64 `json:"mean"`
		Max  int64   `json:"max"`
		P50  int64   `json:"p50"`
		P90  int64   `json:"p90"`
		P99  int64   `json:"p99"`
		P999 int64   `json:"p99_9"`
	} `json:"latency_us"`
	// TextRPS is wrk's "Requests/sec:" line (every answer, of any
	// status, per second).
	TextRPS float64 `json:"text_rps"`
	// TextLatencyMS is wrk's --latency distribution: percentile ("50%")
	// to milliseconds.
	TextLatencyMS map[string]float64 `json:"text_latency_ms,omitempty"`
}

// Parse reads wrk's standard output: the JSON line is required, the text
// report's figures are read when present.
func Parse(out []byte) (*Report, error) {
	var rep *Report
	text := map[string]float64{}
	var rps float64
	inDist := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 4096), maxOutput)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, jsonPrefix); ok {
			rep = &Report{}
			if err := json.Unmarshal([]byte(rest), rep); err != nil {
				return nil, fmt.Errorf("wrk: bench.lua's report: %w", err)
			}
			continue
		}
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "Requests/sec:":
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				return nil, fmt.Errorf("wrk: %q: %w", line, err)
			}
			rps = v
		case strings.TrimSpace(line) == "Latency Distribution":
			inDist = true
		case inDist && len(f) == 2 && strings.HasSuffix(f[0], "%"):
			d, err := parseDuration(f[1])
			if err != nil {
				return nil, fmt.Errorf("wrk: %q: %w", line, err)
			}
			text[f[0]] = d
		default:
			inDist = false
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("wrk: reading its output: %w", err)
	}
	if rep == nil {
		return nil, errors.New("wrk: no " + strings.TrimSpace(jsonPrefix) + " line: was it run with bench.lua?")
	}
	rep.TextRPS = rps
	if len(text) > 0 {
		rep.TextLatencyMS = text
	}
	return rep, nil
}

// parseDuration reads wrk's durations ("337.00us", "8.80ms", "1.20s",
// "2.00m") as milliseconds.
func parseDuration(s string) (float64, error) {
	units := []struct {
		suffix string
		ms     float64
	}{{"us", 1e-3}, {"ms", 1}, {"s", 1e3}, {"m", 60e3}, {"h", 3600e3}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseFloat(num, 64)
			if err != nil || v < 0 || math.IsInf(v, 0) {
				return 0, fmt.Errorf("%q is not a duration", s)
			}
			return v * u.ms, nil
		}
	}
	return 0, fmt.Errorf("%q has no unit", s)
}

// Result is the report as the Go generator's Result, so both fill the
// same table. wrk measures no time to first byte; its latency covers
// every answer, of any status.
func (r *Report) Result(name string, conc int) *loadgen.Result {
	window := float64(r.DurationUS) / 1e6
	res := &loadgen.Result{Name: name, Concurrency: conc, Window: window, OK: r.OK, Cut: r.Cut, Bytes: r.Bytes}
	errs := map[string]int64{}
	add := func(kind string, n int64) {
		if n > 0 {
			errs[kind] += n
		}
	}
	add(loadgen.KindRefused, r.Errors.Connect)
	add(loadgen.KindReset, r.Errors.Read)
	add(loadgen.KindTransport, r.Errors.Write)
	add(loadgen.KindTimeout, r.Errors.Timeout)
	// Statuses below 400 that are not 2xx wrk does not count as errors;
	// answers neither OK nor cut are one or the other.
	add("status_non_2xx", r.Requests-r.OK-r.Cut)
	if len(errs) > 0 {
		res.Errors = errs
	}
	if window > 0 {
		res.RPS = float64(r.OK) / window
	}
	ms := func(us int64) float64 { return float64(us) / 1e3 }
	res.Latency = loadgen.Summary{Count: uint64(max(r.Requests, 0)), Mean: r.LatencyUS.Mean / 1e3, P50: ms(r.LatencyUS.P50),
		P90: ms(r.LatencyUS.P90), P99: ms(r.LatencyUS.P99), P999: ms(r.LatencyUS.P999), Max: ms(r.LatencyUS.Max)}
	return res
}

// WriteScript writes bench.lua into dir and returns its path.
func WriteScript(dir string) (string, error) {
	p := filepath.Join(dir, "bench.lua")
	return p, os.WriteFile(p, Script, 0o644)
}

// Args is wrk's command line for o.
func (o *Options) Args() []string {
	conns := max(o.Connections, 1)
	threads := o.Threads
	if threads <= 0 {
		threads = min(2, conns)
	}
	threads = min(threads, conns)
	secs := max(int64(math.Ceil(o.Duration.Seconds())), 1)
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	key := o.Key
	if key == "" {
		key = "-"
	}
	model := o.Model
	if model == "" {
		model = "bench-model"
	}
	return []string{"-t", strconv.Itoa(threads), "-c", strconv.Itoa(conns), "-d", strconv.FormatInt(secs, 10) + "s",
		"--timeout", strconv.FormatInt(max(int64(timeout.Seconds()), 1), 10) + "s", "--latency",
		"-s", o.Script, o.BaseURL, "--", o.Mode, key, model}
}

// Run runs wrk once and returns its report and the CPU time wrk itself
// spent (user and system).
func Run(ctx context.Context, o Options) (*Report, time.Duration, error) {
	if o.Script == "" || o.BaseURL == "" || o.Mode == "" {
		return nil, 0, errors.New("wrk: a script, a base URL and a mode are required")
	}
	bin := o.Bin
	if bin == "" {
		bin = "wrk"
	}
	args := o.Args()
	ctx, cancel := context.WithTimeout(ctx, time.Duration(max(int64(math.Ceil(o.Duration.Seconds())), 1))*time.Second+runSlack)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.WaitDelay = killGrace
	cmd.SysProcAttr = loadgen.ChildAttr()
	var stdout, stderr limitedBuffer
	stdout.max, stderr.max = maxOutput, 16<<10
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := loadgen.StartPinned(cmd, o.CPUs); err != nil {
		return nil, 0, fmt.Errorf("wrk: %w", err)
	}
	err := cmd.Wait()
	var cpu time.Duration
	if ps := cmd.ProcessState; ps != nil {
		cpu = ps.UserTime() + ps.SystemTime()
	}
	if err != nil {
		return nil, cpu, fmt.Errorf("wrk %s: %w\n%s%s", strings.Join(args, " "), err, stderr.String(), stdout.String())
	}
	rep, err := Parse(stdout.b.Bytes())
	if err != nil {
		return nil, cpu, fmt.Errorf("%w\nwrk printed:\n%s%s", err, stdout.String(), stderr.String())
	}
	return rep, cpu, nil
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	b   bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string { return l.b.String() }

// Ensure finds wrk on PATH; when there is none it installs Debian's wrk
// package if it runs as root with apt-get, and otherwise says how to. It
// returns the binary's path. apt-get's output goes to log.
func Ensure(ctx context.Context, log io.Writer) (string, error) {
	if p, err := exec.LookPath("wrk"); err == nil {
		return p, nil
	}
	if os.Geteuid() != 0 {
		return "", errors.New("wrk is not on PATH: install Debian's wrk package (apt-get install wrk, as root), or drive with --driver go")
	}
	apt, err := exec.LookPath("apt-get")
	if err != nil {
		return "", errors.New("wrk is not on PATH and there is no apt-get to install it with: install wrk, or drive with --driver go")
	}
	ctx, cancel := context.WithTimeout(ctx, installTime)
	defer cancel()
	fmt.Fprintln(log, "wrk is not on PATH: installing Debian's wrk package (apt-get install -y wrk)")
	install := func() error {
		cmd := exec.CommandContext(ctx, apt, "install", "-y", "-qq", "--no-install-recommends", "wrk")
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		cmd.Stdout, cmd.Stderr = log, log
		return cmd.Run()
	}
	if err := install(); err != nil {
		// A fresh container has no package lists yet.
		update := exec.CommandContext(ctx, apt, "update", "-qq")
		update.Stdout, update.Stderr = log, log
		if uerr := update.Run(); uerr != nil {
			return "", fmt.Errorf("installing wrk: %w; apt-get update: %w", err, uerr)
		}
		if err := install(); err != nil {
			return "", fmt.Errorf("installing wrk: apt-get install wrk: %w", err)
		}
	}
	p, err := exec.LookPath("wrk")
	if err != nil {
		return "", errors.New("apt-get installed wrk, but no wrk is on PATH")
	}
	return p, nil
}
