package loadgen

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// ProcSample is one reading of a process's resource use.
type ProcSample struct {
	// CPU is user plus system time, at the kernel's clock-tick resolution
	// (10 ms at USER_HZ 100): sample over seconds, not per request.
	CPU time.Duration
	// RSS and PeakRSS are the resident set now and at its highest, bytes.
	RSS, PeakRSS int64
}

// ErrProcFormat is wrapped by every error about an unreadable /proc file.
var ErrProcFormat = errors.New("loadgen: unexpected /proc format")

// parseStat returns utime and stime, in clock ticks, from the contents of
// /proc/<pid>/stat (proc(5)): fields 14 and 15, counted after the command
// name, which is in parentheses and may itself hold spaces and ')'.
func parseStat(b []byte) (utime, stime uint64, err error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("%w: stat has no command name", ErrProcFormat)
	}
	// After ") " come field 3 (state) onwards: utime is the 12th of them.
	f := bytes.Fields(b[i+1:])
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("%w: stat has %d fields after the command name, want at least 13", ErrProcFormat, len(f))
	}
	if utime, err = strconv.ParseUint(string(f[11]), 10, 64); err != nil {
		return 0, 0, fmt.Errorf("%w: stat utime: %w", ErrProcFormat, err)
	}
	if stime, err = strconv.ParseUint(string(f[12]), 10, 64); err != nil {
		return 0, 0, fmt.Errorf("%w: stat stime: %w", ErrProcFormat, err)
	}
	return utime, stime, nil
}

// parseStatus returns VmRSS and VmHWM, in bytes, from the contents of
// /proc/<pid>/status, whose lines read "VmRSS:\t   1956 kB".
func parseStatus(b []byte) (rss, hwm int64, err error) {
	var haveRSS bool
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		key, val, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			continue
		}
		var dst *int64
		switch string(key) {
		case "VmRSS":
			dst, haveRSS = &rss, true
		case "VmHWM":
			dst = &hwm
		default:
			continue
		}
		num, unit, _ := bytes.Cut(bytes.TrimSpace(val), []byte{' '})
		if string(bytes.TrimSpace(unit)) != "kB" {
			return 0, 0, fmt.Errorf("%w: status %s is not in kB", ErrProcFormat, key)
		}
		kb, err := strconv.ParseInt(string(num), 10, 64)
		if err != nil || kb < 0 || kb > 1<<50 {
			return 0, 0, fmt.Errorf("%w: status %s: %q", ErrProcFormat, key, num)
		}
		*dst = kb << 10
	}
	if !haveRSS {
		// A zombie or kernel thread has no VmRSS line.
		return 0, 0, fmt.Errorf("%w: status has no VmRSS", ErrProcFormat)
	}
	return rss, hwm, nil
}

// ticksToDuration converts clock ticks at hz per second.
func ticksToDuration(ticks uint64, hz int64) time.Duration {
	if hz <= 0 {
		hz = defaultHz
	}
	return time.Duration(ticks) * (time.Second / time.Duration(hz))
}

// defaultHz is USER_HZ on every Linux architecture, used when the kernel's
// value cannot be read.
const defaultHz = 100

// ParseCPUList parses a CPU list as taskset and cpuset(7) write it:
// "0", "0-3", "0,2-3". Duplicates are kept once, in first-seen order.
func ParseCPUList(s string) ([]int, error) {
	if s == "" {
		return nil, fmt.Errorf("%w: empty CPU list", ErrOptions)
	}
	var out []int
	seen := map[int]bool{}
	for part := range bytes.SplitSeq([]byte(s), []byte{','}) {
		lo, hi, isRange := bytes.Cut(part, []byte{'-'})
		a, err := cpuNum(lo)
		if err != nil {
			return nil, err
		}
		b := a
		if isRange {
			if b, err = cpuNum(hi); err != nil {
				return nil, err
			}
			if b < a {
				return nil, fmt.Errorf("%w: CPU range %s runs backwards", ErrOptions, part)
			}
		}
		for c := a; c <= b; c++ {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// maxCPU bounds CPU numbers: the kernel's affinity masks hold 1024 CPUs.
const maxCPU = 1023

func cpuNum(b []byte) (int, error) {
	n, err := strconv.Atoi(string(b))
	if err != nil || n < 0 || n > maxCPU || len(b) == 0 || b[0] == '+' {
		return 0, fmt.Errorf("%w: CPU %q is not a number from 0 to %d", ErrOptions, b, maxCPU)
	}
	return n, nil
}
