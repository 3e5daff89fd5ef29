//go:build !unix

package sink

import "os"

// kill ends the process at once; without SIGKILL the nearest is an exit
// that runs no deferred call.
func kill() {
	os.Exit(137)
}
