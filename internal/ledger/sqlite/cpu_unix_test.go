//go:build unix

package sqlite_test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user+system) this process has used: the
// benchmarks report it per operation, which stays meaningful on a busy
// machine where wall-clock figures do not.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
