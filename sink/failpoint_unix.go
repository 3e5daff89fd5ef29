//go:build unix

package sink

import (
	"os"
	"syscall"
)

// kill ends the process at once, as a crash would: no deferred call runs.
func kill() {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
}
