package adversarial

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// haveProc reports whether /proc/<pid>/status and /proc/net/tcp can be
// read: the gateway's memory and its sockets are checked on Linux only.
var haveProc = runtime.GOOS == "linux"

// procMem reads VmRSS and VmHWM of pid, in bytes; 0 when unreadable.
func procMem(pid int) (rss, hwm int64) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if name == "VmRSS" {
			rss = kb << 10
		} else {
			hwm = kb << 10
		}
	}
	return rss, hwm
}

// sampler samples the resident memory of a gateway's process every 20ms
// until stopped, following it across a restart.
type sampler struct {
	g    *gateway
	stop chan struct{}
	done chan struct{}

	base, peak, baseHWM, samples int64
}

func sample(g *gateway) *sampler {
	s := &sampler{g: g, stop: make(chan struct{}), done: make(chan struct{})}
	s.base, s.baseHWM = procMem(g.pid())
	s.peak = s.base
	go s.run()
	return s
}

func (s *sampler) run() {
	defer close(s.done)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		rss, _ := procMem(s.g.pid())
		s.peak = max(s.peak, rss)
		s.samples++
	}
}

// end stops sampling and returns the figures: the peak is the highest
// sample, or the process's VmHWM when it rose during the case (a peak
// shorter than the sampling interval).
func (s *sampler) end() figures {
	close(s.stop)
	<-s.done
	rss, hwm := procMem(s.g.pid())
	peak := max(s.peak, rss)
	if hwm > s.baseHWM {
		peak = max(peak, hwm)
	}
	return figures{base: s.base, peak: peak, hwm: hwm, samples: s.samples}
}

type figures struct {
	name            string
	took            time.Duration
	base, peak, hwm int64
	samples         int64
}

func (f figures) growth() int64 { return f.peak - f.base }

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/(1<<20)) }

// attack is one case: run must finish within maxTime, and the gateway's
// resident memory must grow by less than maxGrowth while it runs.
type attack struct {
	name      string
	maxTime   time.Duration
	maxGrowth int64
	run       func(t *testing.T)
}

// suite runs attacks against one gateway process and keeps their figures.
type suite struct {
	g    *gateway
	figs []figures
}

// run runs each attack as a subtest, with a memory sampler around it.
func (s *suite) run(t *testing.T, attacks []attack) {
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			sm := sample(s.g)
			start := time.Now()
			func() {
				defer func() {
					// A Fatal inside run still stops the sampler.
					f := sm.end()
					f.name, f.took = t.Name(), time.Since(start)
					s.figs = append(s.figs, f)
					t.Logf("took %v; gateway RSS %s at start, peak %s (growth %s, %d samples), VmHWM %s",
						f.took.Round(time.Millisecond), mb(f.base), mb(f.peak), mb(f.growth()), f.samples, mb(f.hwm))
					if f.took > a.maxTime {
						t.Errorf("took %v, bound %v", f.took.Round(time.Millisecond), a.maxTime)
					}
					if haveProc && f.growth() > a.maxGrowth {
						t.Errorf("the gateway's RSS grew by %s, bound %s", mb(f.growth()), mb(a.maxGrowth))
					}
				}()
				a.run(t)
			}()
		})
	}
}

// report logs every case's figures as one table.
func (s *suite) report(t *testing.T) {
	var b strings.Builder
	fmt.Fprintf(&b, "%-58s %9s %10s %10s %10s %10s\n", "case", "time", "RSS start", "RSS peak", "growth", "VmHWM")
	for _, f := range s.figs {
		fmt.Fprintf(&b, "%-58s %9s %10s %10s %10s %10s\n", f.name, f.took.Round(time.Millisecond), mb(f.base), mb(f.peak), mb(f.growth()), mb(f.hwm))
	}
	t.Logf("figures (gateway built in %v):\n%s", buildTook.Round(time.Millisecond), b.String())
}
