//go:build !nodemo

package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/logstore/logstore/pipeline"
	"github.com/logstore/logstore/sink"
)

// TestDemoWritesReadableParquet runs `logstore demo` as a newcomer would
// (embedded Kafka, the real pipeline) and reads every file back.
func TestDemoWritesReadableParquet(t *testing.T) {
	out := filepath.Join(t.TempDir(), "demo")
	t.Setenv("LOGSTORE_RACK", "")
	var stdout, stderr bytes.Buffer
	if code := runMain([]string{"demo", "--records", "20000", "--output", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("demo exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	for _, want := range []string{"records read     20000", "dead letters     200", "Parquet files"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the summary lacks %q:\n%s", want, stdout.String())
		}
	}
	var rows, dead int64
	err := filepath.WalkDir(out, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".parquet") && !strings.HasSuffix(path, sink.DeadLetterExt) {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		info, _ := f.Stat()
		pf, err := parquet.OpenFile(f, info.Size())
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return nil
		}
		if strings.Contains(path, "_errors") {
			dead += pf.NumRows()
		} else {
			rows += pf.NumRows()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// 1 in 100 is malformed; the demo's `where` drops DEBUG lines (1 in 7 levels).
	if dead != 200 || rows < 15000 || rows > 19800 {
		t.Errorf("read back %d rows and %d dead letters; want 200 dead letters and the non-DEBUG rest", rows, dead)
	}
}

// TestDemoRefusesCountsItCannotHonour: `demo --records -5` produced nothing
// and exited 0; `--partitions 0` let the embedded Kafka pick its own count
// and wrote 7 files.
func TestDemoRefusesCountsItCannotHonour(t *testing.T) {
	for _, args := range [][]string{
		{"--records", "-5"}, {"--records", "0"}, {"--partitions", "0"}, {"--partitions", "-1"}, {"--bad-every", "-1"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "demo")
			code, stdout, stderr := runCLI(t, append([]string{"demo", "--output", out}, args...)...)
			if code != exitUsage || !strings.Contains(stderr, args[0]+" "+args[1]+": give ") {
				t.Errorf("demo %s: exit %d, want %d naming the flag and the fix\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, exitUsage, stdout, stderr)
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("demo %s made %s before refusing", strings.Join(args, " "), out)
			}
		})
	}
}

// demoSummaryLine finds a line of the demo's summary by its label.
func demoSummaryLine(t *testing.T, stdout, pattern string) []string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^  ` + pattern).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("the summary has no line matching %q:\n%s", pattern, stdout)
	}
	return m
}

// TestDemoRunTwiceReadsAgain: a second `make demo` read 0 records (the
// first run's resume records in the same folder said it was done), logged
// WARN lines about a group without offsets, and reported the first run's
// files as its own. Each run now has a folder of its own.
func TestDemoRunTwiceReadsAgain(t *testing.T) {
	out := filepath.Join(t.TempDir(), "demo")
	var folders []string
	for run := 1; run <= 2; run++ {
		var stdout, stderr bytes.Buffer
		if code := runMain([]string{"demo", "--records", "5000", "--output", out}, &stdout, &stderr); code != 0 {
			t.Fatalf("run %d: demo exited %d\nstdout:\n%s\nstderr:\n%s", run, code, stdout.String(), stderr.String())
		}
		if !strings.Contains(stdout.String(), "records read     5000\n") {
			t.Errorf("run %d did not read the 5000 records it produced:\n%s", run, stdout.String())
		}
		if strings.Contains(stderr.String(), "level=WARN") || strings.Contains(stderr.String(), "level=ERROR") {
			t.Errorf("run %d warned:\n%s", run, stderr.String())
		}
		folders = append(folders, demoSummaryLine(t, stdout.String(), `Parquet files .* under (\S+)\n`)[1])
	}
	if folders[0] == folders[1] || filepath.Dir(folders[0]) != out || filepath.Dir(folders[1]) != out {
		t.Errorf("the two runs wrote into %q and %q; want two folders of their own below %s", folders[0], folders[1], out)
	}
}

// TestDemoSummaryCountsThisRunsFiles: the summary's file counts are the
// files this run wrote, data apart from dead letters, not everything that
// lies below the output folder.
func TestDemoSummaryCountsThisRunsFiles(t *testing.T) {
	out := filepath.Join(t.TempDir(), "demo")
	earlier := filepath.Join(out, "_errors", "dt=2026-01-01")
	if err := os.MkdirAll(earlier, 0o755); err != nil {
		t.Fatal(err)
	}
	// A file left by something else below the output folder.
	if err := os.WriteFile(filepath.Join(out, "old.parquet"), []byte("PAR1"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := runMain([]string{"demo", "--records", "5000", "--output", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("demo exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	m := demoSummaryLine(t, stdout.String(), `Parquet files +(\d+) data files \(.*\) and (\d+) dead-letter files \(.*\), written by this run under (\S+)\n`)
	var data, dead int
	filepath.WalkDir(m[3], func(p string, d os.DirEntry, err error) error {
		switch {
		case err != nil || d.IsDir() || !strings.HasSuffix(p, ".parquet") && !strings.HasSuffix(p, sink.DeadLetterExt):
		case strings.Contains(p, string(filepath.Separator)+"_errors"+string(filepath.Separator)):
			dead++
		default:
			data++
		}
		return nil
	})
	if m[1] != strconv.Itoa(data) || m[2] != strconv.Itoa(dead) || data == 0 || dead == 0 {
		t.Errorf("the summary says %s data and %s dead-letter files; this run's folder %s holds %d and %d:\n%s", m[1], m[2], m[3], data, dead, stdout.String())
	}
}

// TestDemoReadsInItsZone: the demo printed "0 same-rack … (0.0 % local)"
// from one broker in rack "krack". Its three brokers are in three zones,
// one member reads in each, and each reads from its own zone.
func TestDemoReadsInItsZone(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := runMain([]string{"demo", "--records", "5000", "--output", filepath.Join(t.TempDir(), "demo")}, &stdout, &stderr); code != 0 {
		t.Fatalf("demo exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	var records int
	for _, zone := range []string{"az-a", "az-b", "az-c"} {
		m := demoSummaryLine(t, stdout.String(), `member `+zone+` +(\d+) records, \d+ rows; ([\d.]+) % of its fetched bytes from its own zone\n`)
		n, _ := strconv.Atoi(m[1])
		records += n
		if share, _ := strconv.ParseFloat(m[2], 64); n == 0 || share < 99 {
			t.Errorf("member %s read %d records, %s %% in its zone; want some, over 99 %%", zone, n, m[2])
		}
	}
	if records != 5000 {
		t.Errorf("the members read %d records together, want 5000", records)
	}
	if share, _ := strconv.ParseFloat(demoSummaryLine(t, stdout.String(), `local share +([\d.]+) %`)[1], 64); share < 99 {
		t.Errorf("local share %.1f %%, want over 99 %%:\n%s", share, stdout.String())
	}
}

// TestDemoStoppedIsToldOnce: Ctrl-C stopped the three members and the demo
// printed the job's "run again to continue" three times, which a demo
// (a new embedded Kafka each run) cannot do.
func TestDemoStoppedIsToldOnce(t *testing.T) {
	loc, _ := sink.ParseURL(t.TempDir())
	err := demoError([]error{pipeline.ErrStoppedEarly, pipeline.ErrStoppedEarly, nil}, loc)
	if !errors.Is(err, pipeline.ErrStoppedEarly) {
		t.Errorf("%v: a stopped demo must exit as a stopped run (3)", err)
	}
	if msg := err.Error(); strings.Count(msg, "stopped") != 1 || strings.Contains(msg, "run again to continue") || !strings.Contains(msg, "make demo") {
		t.Errorf("the stop is told as %q; want it once, with where the files are and how to start again", msg)
	}
	boom := errors.New("sink down")
	if err := demoError([]error{boom, boom, pipeline.ErrStoppedEarly}, loc); strings.Count(err.Error(), "sink down") != 1 {
		t.Errorf("the same failure of several members is told as %q; want it once", err)
	}
}
