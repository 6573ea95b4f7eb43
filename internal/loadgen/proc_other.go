//go:build !linux

package loadgen

import (
	"errors"
	"os/exec"
	"syscall"
)

// errNoProc is returned where /proc and CPU affinity do not exist.
var errNoProc = errors.New("loadgen: process sampling and CPU pinning need Linux")

// ClockTicks returns 100, unread.
func ClockTicks() (hz int64, known bool) { return defaultHz, false }

// ReadProc needs Linux.
func ReadProc(pid int, hz int64) (ProcSample, error) { return ProcSample{}, errNoProc }

// ChildAttr is nil off Linux: no parent-death signal.
func ChildAttr() *syscall.SysProcAttr { return nil }

// StartPinned starts cmd; pinning needs Linux.
func StartPinned(cmd *exec.Cmd, cpus []int) error {
	if len(cpus) > 0 {
		return errNoProc
	}
	return cmd.Start()
}

// PinSelf needs Linux.
func PinSelf(cpus []int) error { return errNoProc }
