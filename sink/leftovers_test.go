package sink

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// leftover makes a file of the given age below dir; locked keeps it locked
// as a living writer would, until the test ends.
func leftover(t *testing.T, dir, name string, age time.Duration, locked bool) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-age)
	if err := os.Chtimes(path, at, at); err != nil {
		t.Fatal(err)
	}
	if locked {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		if err := lockFile(f); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestStartRemovesLeftovers: a start removes the temporary and spool files
// crashed writers left, and nothing a living writer holds, nothing too
// fresh to judge and nothing that is not logstore's.
func TestStartRemovesLeftovers(t *testing.T) {
	out, spool := t.TempDir(), t.TempDir()
	gone := []string{
		leftover(t, out, "dt=2026-11-29/.logs-0-0-99.parquet.tmp-123", 10*time.Minute, false),
		leftover(t, out, ".logs-1-0-99.parquet.tmp-456", 2*time.Minute, false),
		leftover(t, out, "_errors/.logs-1-0-99.parquet.tmp-789", 7*time.Hour, false),
		leftover(t, out, ".logstore-preflight-42", time.Hour, false),
		leftover(t, spool, "logstore-1.parquet.spool", 10*time.Minute, false),
	}
	kept := []string{
		leftover(t, out, "dt=2026-11-29/.logs-2-0-99.parquet.tmp-1", 10*time.Minute, true), // a living writer's
		leftover(t, out, ".logs-3-0-99.parquet.tmp-2", 5*time.Second, false),               // too fresh to judge
		leftover(t, out, "dt=2026-11-29/logs-0-0-99.parquet", 10*time.Hour, false),
		leftover(t, out, ".hidden-by-someone-else", 10*time.Hour, false),
		leftover(t, spool, "logstore-2.parquet.spool", 10*time.Minute, true),
		leftover(t, spool, "logstore-3.parquet.spool", 5*time.Second, false),
		leftover(t, spool, "other.parquet", 10*time.Hour, false),
	}
	cfg := &Config{Files: &FilesConfig{URL: "file://" + out, SpoolDir: spool}}
	cfg.SetDefaults()
	if _, err := newFiles(t.Context(), cfg.Files); err != nil {
		t.Fatal(err)
	}
	for _, p := range gone {
		if exists(p) {
			t.Errorf("%s is still there", p)
		}
	}
	for _, p := range kept {
		if !exists(p) {
			t.Errorf("%s was removed", p)
		}
	}
}

// TestFileStoreLocksWhileWriting: a file being written is locked, so a
// concurrent start leaves it alone.
func TestFileStoreLocksWhileWriting(t *testing.T) {
	dir := t.TempDir()
	s := newFileStore(dir, false)
	var tmp string
	body := readerAtFunc(func(p []byte, off int64) (int, error) {
		if tmp == "" {
			matches, _ := filepath.Glob(filepath.Join(dir, ".k.parquet.tmp-*"))
			if len(matches) != 1 {
				t.Fatalf("temporary files %v", matches)
			}
			tmp = matches[0]
			if unlocked(tmp) {
				t.Errorf("%s is not locked while it is written", tmp)
			}
		}
		return copy(p, "data"[off:]), nil
	})
	if err := s.Put(t.Context(), "k.parquet", body, 4); err != nil {
		t.Fatal(err)
	}
	if tmp == "" || exists(tmp) {
		t.Errorf("temporary file %q not seen or left behind", tmp)
	}
	sp, err := newSpool(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f, err := sp.Create()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Remove()
	if unlocked(f.Name()) {
		t.Errorf("spool file %s is not locked", f.Name())
	}
}

type readerAtFunc func(p []byte, off int64) (int, error)

func (f readerAtFunc) ReadAt(p []byte, off int64) (int, error) { return f(p, off) }
