//go:build !linux

package main

import "runtime/debug"

// releaseStartPages gives back the heap the program's start left behind
// (startpages_linux.go also pages out the binary's start pages).
func releaseStartPages() { debug.FreeOSMemory() }
