//go:build unix

package sink

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on f that lasts until f is closed or
// the process ends.
func lockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// unlocked reports whether no process holds a lock on path.
func unlocked(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	return lockFile(f) == nil
}
