package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"time"
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

// heapProfileEnv names a file that receives the heap profile taken when
// the heap in use was at its highest (sampled every 200 ms): what a
// member's peak memory is made of (`go tool pprof -sample_index=inuse_space
// bin/logstore FILE`).
const heapProfileEnv = "LOGSTORE_HEAPPROFILE"

// startHeapProfile samples the heap until stop is called and keeps the
// profile of its highest point in LOGSTORE_HEAPPROFILE.
func startHeapProfile(stderr io.Writer) (stop func()) {
	path := os.Getenv(heapProfileEnv)
	if path == "" {
		return func() {}
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		var highest uint64
		var ms runtime.MemStats
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse <= highest {
				continue
			}
			highest = ms.HeapInuse
			var buf bytes.Buffer
			if err := pprof.Lookup("heap").WriteTo(&buf, 0); err == nil {
				err = os.WriteFile(path, buf.Bytes(), 0o644)
				if err != nil {
					fmt.Fprintf(stderr, "logstore: %s: %v\n", heapProfileEnv, err)
					return
				}
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}
