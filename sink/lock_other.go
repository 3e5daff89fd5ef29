//go:build !unix

package sink

import "os"

// lockFile is a no-op without flock; leftovers are then found by age only.
func lockFile(*os.File) error { return nil }

// unlocked cannot prove a file unused without flock.
func unlocked(string) bool { return false }
