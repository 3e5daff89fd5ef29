package main

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// startChildEnv makes the test binary, started again by a test, run the
// command line instead of the tests.
const startChildEnv = "LOGSTORE_TEST_START_CHILD"

// maxInitBytes bounds what one package's init may allocate. The largest
// left is iceberg-go's internal package at ~1.2 MB; substrait's extension
// collection was 32 MB.
const maxInitBytes = 4 << 20

var initTraceLine = regexp.MustCompile(`(?m)^init (\S+) @\S+ ms, \S+ ms clock, (\d+) bytes, \d+ allocs$`)

// TestVersionDoesNotLoadTableExpressionLibraries: a command that touches no
// table (--version here; check, rack, status and --help start the same
// way) does not load what only a table scan needs. iceberg-go's
// table/substrait parsed substrait's whole extension collection in its
// package init, 32 MB of allocations and ~80 ms before main, on every start
// of the default build (third_party/iceberg-go/PATCHES.md). The test binary
// links every package the logstore binary links, so the Go runtime's
// inittrace of `--version` run by it shows every init the binary runs;
// allocations, unlike times, do not depend on the machine's load.
func TestVersionDoesNotLoadTableExpressionLibraries(t *testing.T) {
	if os.Getenv(startChildEnv) == "1" {
		os.Exit(runMain([]string{"--version"}, os.Stdout, os.Stderr))
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$")
	cmd.Env = append(os.Environ(), startChildEnv+"=1", "GODEBUG=inittrace=1")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("--version: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "logstore") {
		t.Fatalf("--version printed no version:\n%s", stdout.String())
	}
	inits := initTraceLine.FindAllStringSubmatch(stderr.String(), -1)
	if len(inits) < 10 {
		t.Fatalf("GODEBUG=inittrace=1 reported %d package inits; the runtime's trace format changed?\n%s", len(inits), stderr.String())
	}
	var total int64
	for _, m := range inits {
		bytes, _ := strconv.ParseInt(m[2], 10, 64)
		total += bytes
		if bytes > maxInitBytes {
			t.Errorf("package %s allocates %.1f MB in its init at every start (at most %d MB)", m[1], float64(bytes)/(1<<20), maxInitBytes>>20)
		}
	}
	t.Logf("%d package inits, %.1f MB allocated", len(inits), float64(total)/(1<<20))
}
