//go:build linux

package loadgen

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// atClkTck is AT_CLKTCK, the auxiliary-vector entry holding USER_HZ
// (linux/auxvec.h): where glibc's sysconf(_SC_CLK_TCK) reads it.
const atClkTck = 17

// ClockTicks returns the kernel's clock ticks per second (USER_HZ, what
// `getconf CLK_TCK` prints), and whether it was read: when it was not,
// it returns 100, the value on every architecture Linux ships.
func ClockTicks() (hz int64, known bool) {
	aux, err := unix.Auxv()
	if err != nil {
		return defaultHz, false
	}
	for _, kv := range aux {
		if kv[0] == atClkTck && kv[1] > 0 {
			return int64(kv[1]), true
		}
	}
	return defaultHz, false
}

// ReadProc samples process pid's CPU time and resident memory from
// /proc/<pid>/stat and /proc/<pid>/status; hz is ClockTicks'.
func ReadProc(pid int, hz int64) (ProcSample, error) {
	dir := "/proc/" + strconv.Itoa(pid)
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return ProcSample{}, err
	}
	ut, st, err := parseStat(stat)
	if err != nil {
		return ProcSample{}, err
	}
	status, err := os.ReadFile(dir + "/status")
	if err != nil {
		return ProcSample{}, err
	}
	rss, hwm, err := parseStatus(status)
	if err != nil {
		return ProcSample{}, err
	}
	return ProcSample{CPU: ticksToDuration(ut+st, hz), RSS: rss, PeakRSS: hwm}, nil
}

// ChildAttr is what a child process of a load run is started with: it is
// killed if the thread that started it dies, so a killed driver leaves no
// strays. Go keeps its threads alive (StartPinned unlocks its thread), so
// in practice that is the driver's own death.
func ChildAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// StartPinned starts cmd restricted to cpus from its first instruction:
// the thread that forks is pinned for the fork, so every thread the child
// ever makes inherits the mask (pinning a running Go process by pid would
// miss threads it already has). No cpus: a plain Start.
func StartPinned(cmd *exec.Cmd, cpus []int) error {
	if len(cpus) == 0 {
		return cmd.Start()
	}
	set, err := cpuSet(cpus)
	if err != nil {
		return err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var old unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return fmt.Errorf("loadgen: reading this thread's CPU affinity: %w", err)
	}
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("loadgen: pinning to CPUs %v: %w", cpus, err)
	}
	serr := cmd.Start()
	if err := unix.SchedSetaffinity(0, &old); err != nil && serr == nil {
		serr = fmt.Errorf("loadgen: restoring this thread's CPU affinity: %w", err)
	}
	return serr
}

// PinSelf restricts every thread of this process to cpus and sets
// GOMAXPROCS to match. Threads made later inherit the mask from the
// (pinned) thread that makes them; the loop catches any made meanwhile.
func PinSelf(cpus []int) error {
	set, err := cpuSet(cpus)
	if err != nil {
		return err
	}
	done := map[int]bool{}
	for {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		fresh := 0
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || done[tid] {
				continue
			}
			if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
				return fmt.Errorf("loadgen: pinning thread %d to CPUs %v: %w", tid, cpus, err)
			}
			done[tid] = true
			fresh++
		}
		if fresh == 0 {
			runtime.GOMAXPROCS(len(cpus))
			return nil
		}
	}
}

func cpuSet(cpus []int) (unix.CPUSet, error) {
	var set unix.CPUSet
	if len(cpus) == 0 {
		return set, fmt.Errorf("%w: no CPUs to pin to", ErrOptions)
	}
	for _, c := range cpus {
		if c < 0 || c > maxCPU {
			return set, fmt.Errorf("%w: CPU %d out of range", ErrOptions, c)
		}
		set.Set(c)
	}
	return set, nil
}
