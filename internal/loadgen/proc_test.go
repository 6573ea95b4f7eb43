package loadgen

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		name         string
		in           string
		utime, stime uint64
		ok           bool
	}{
		{"empty", "", 0, 0, false},
		{"no command", "12 R 1 1 1 0 -1 0 0 0 0 0 5 6 0 0", 0, 0, false},
		{"too short", "12 (x) R 1 1 1 0 -1 0 0 0 0 0 5", 0, 0, false},
		{"utime not a number", "12 (x) R 1 1 1 0 -1 0 0 0 0 0 x 6 0", 0, 0, false},
		{"negative stime", "12 (x) R 1 1 1 0 -1 0 0 0 0 0 5 -6 0", 0, 0, false},
		{"cat", "27689 (cat) R 27687 27687 23883 0 -1 4194304 97 0 0 0 7 3 0 0 20 0 1 0 659088 3133440 359", 7, 3, true},
		{"spaces and parens in the name", "5 (a) b (c) S 1 1 1 0 -1 0 0 0 0 0 1234 56 0 0 20 0 9", 1234, 56, true},
		{"exactly 13 fields", "5 (x) S 1 1 1 0 -1 0 0 0 0 0 8 9", 8, 9, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, s, err := parseStat([]byte(tt.in))
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrProcFormat)) {
				t.Fatalf("parseStat err = %v, want ok=%v", err, tt.ok)
			}
			if u != tt.utime || s != tt.stime {
				t.Errorf("utime, stime = %d, %d; want %d, %d", u, s, tt.utime, tt.stime)
			}
		})
	}
}

func TestParseStatus(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		rss, hwm int64
		ok       bool
	}{
		{"empty", "", 0, 0, false},
		{"no VmRSS (a zombie)", "Name:\tx\nState:\tZ (zombie)\n", 0, 0, false},
		{"wrong unit", "VmRSS:\t 12 MB\n", 0, 0, false},
		{"not a number", "VmRSS:\t x kB\n", 0, 0, false},
		{"negative", "VmRSS:\t -4 kB\n", 0, 0, false},
		{"real", "Name:\tcat\nVmPeak:\t    3892 kB\nVmHWM:\t    1956 kB\nVmRSS:\t    1900 kB\nVmData:\t 424 kB\n", 1900 << 10, 1956 << 10, true},
		{"no final newline", "VmRSS:\t7 kB", 7 << 10, 0, true},
		{"lines without colons", "junk\nVmRSS:\t7 kB\n\n", 7 << 10, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rss, hwm, err := parseStatus([]byte(tt.in))
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrProcFormat)) {
				t.Fatalf("parseStatus err = %v, want ok=%v", err, tt.ok)
			}
			if rss != tt.rss || hwm != tt.hwm {
				t.Errorf("rss, hwm = %d, %d; want %d, %d", rss, hwm, tt.rss, tt.hwm)
			}
		})
	}
}

func TestParseCPUList(t *testing.T) {
	tests := []struct {
		in   string
		want []int
	}{
		{"", nil},
		{"x", nil},
		{"-1", nil},
		{"+1", nil},
		{"1-", nil},
		{"3-1", nil},
		{"0,", nil},
		{"1024", nil},
		{"0", []int{0}},
		{"1,0", []int{1, 0}},
		{"0-2,1,5", []int{0, 1, 2, 5}},
	}
	for _, tt := range tests {
		got, err := ParseCPUList(tt.in)
		if (err != nil) != (tt.want == nil) || !slices.Equal(got, tt.want) {
			t.Errorf("ParseCPUList(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
		if err != nil && !errors.Is(err, ErrOptions) {
			t.Errorf("ParseCPUList(%q) error %v is not ErrOptions", tt.in, err)
		}
	}
}

func TestTicksToDuration(t *testing.T) {
	if got := ticksToDuration(250, 100); got != 2500*time.Millisecond {
		t.Errorf("250 ticks at 100 Hz = %v", got)
	}
	if got := ticksToDuration(3, 0); got != 30*time.Millisecond {
		t.Errorf("3 ticks at an unknown rate = %v, want the 100 Hz default", got)
	}
}

func TestReadProcSelf(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	hz, known := ClockTicks()
	if !known || hz <= 0 {
		t.Fatalf("ClockTicks = %d, %v; want the kernel's value", hz, known)
	}
	// Burn a little CPU so the reading cannot be zero.
	deadline := time.Now().Add(30 * time.Millisecond)
	for x := 0; time.Now().Before(deadline); x++ {
		_ = x * x
	}
	s, err := ReadProc(os.Getpid(), hz)
	if err != nil {
		t.Fatal(err)
	}
	if s.CPU <= 0 || s.RSS <= 0 || s.PeakRSS < s.RSS {
		t.Fatalf("sample %+v", s)
	}
	if _, err := ReadProc(1<<30, hz); err == nil {
		t.Error("a process that does not exist was read")
	}
}

func TestStartPinned(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs sched_setaffinity")
	}
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = ChildAttr()
	if err := StartPinned(cmd, []int{0}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "Cpus_allowed_list:\t0\n") {
		t.Errorf("the child is not pinned to CPU 0:\n%s", b)
	}
	// This thread got its mask back.
	self, _ := os.ReadFile("/proc/self/status")
	if runtime.NumCPU() > 1 && strings.Contains(string(self), "Cpus_allowed_list:\t0\n") {
		t.Error("the driver stayed pinned")
	}
	if err := StartPinned(exec.Command("true"), []int{-1}); !errors.Is(err, ErrOptions) {
		t.Errorf("pinning to CPU -1: %v", err)
	}
}
