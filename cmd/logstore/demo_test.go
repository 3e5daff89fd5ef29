package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
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
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".parquet") {
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
