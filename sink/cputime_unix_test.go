//go:build unix

package sink

import (
	"syscall"
	"time"
)

// cpuTime is the process's user and system CPU time so far: on a shared
// machine, what a write costs, where the wall clock also counts the waits.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
