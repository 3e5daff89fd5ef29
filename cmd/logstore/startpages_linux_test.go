package main

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// rssFileKiB is the process's resident file-backed memory (/proc/self/status).
func rssFileKiB(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "RssFile:"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

// TestReleaseStartPagesDropsTheBinarysStartPages: the pages of the binary
// its start touched (every package's init, iceberg-go's among them) leave
// the process's resident memory; before, they stayed for the whole run
// (the bench's peak RSS 274 MiB against 229-241 MiB before the table sink
// was linked, RssFile 54 against 23 MiB).
func TestReleaseStartPagesDropsTheBinarysStartPages(t *testing.T) {
	before := rssFileKiB(t)
	releaseStartPages()
	after := rssFileKiB(t)
	t.Logf("RssFile %d KiB before, %d KiB after", before, after)
	if after > before/2 {
		t.Errorf("RssFile %d KiB before, %d KiB after: the binary's start pages must be given back", before, after)
	}
}
