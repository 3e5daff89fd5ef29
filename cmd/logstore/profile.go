package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
)

// cpuProfileEnv names a file that receives a CPU profile of the whole
// command (`go tool pprof -top bin/logstore FILE`); scripts/bench sets it
// for the logstore run.
const cpuProfileEnv = "LOGSTORE_CPUPROFILE"

// startCPUProfile starts the profile LOGSTORE_CPUPROFILE asks for and
// returns what stops it; a profile that cannot start is reported, not fatal.
func startCPUProfile(stderr io.Writer) (stop func()) {
	path := os.Getenv(cpuProfileEnv)
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(stderr, "logstore: %s: no CPU profile: %v\n", cpuProfileEnv, err)
		if f != nil {
			f.Close()
		}
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
