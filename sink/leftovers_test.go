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

// TestStartRemovesLeftovers: a start removes the temporary and spool files
// crashed writers left, and nothing a living writer holds, nothing too
// fresh to judge and nothing that is not logstore's.
func TestStartRemovesLeftovers(t *testing.T) {
	out, spool := t.TempDir(), t.TempDir()
	gone := []string{
		leftover(t, out, "dt=2026-11-29/.logs-0-0-99.parquet.tmp-123", 10*time.Minute, false),
		leftover(t, out, ".logs-1-0-99.parquet.tmp-456", 2*time.Minute, false),
		leftover(t, out, "_errors/.logs-1-0-99.deadletter.tmp-789", 7*time.Hour, false),
		leftover(t, out, ".logstore-preflight-42", time.Hour, false),
		leftover(t, out, "_logstore/resume/logs/.11.json.tmp-77", 2*time.Minute, false),
		leftover(t, spool, "logstore-1.parquet.spool", 10*time.Minute, false),
	}
	kept := []string{
		leftover(t, out, "dt=2026-11-29/.logs-2-0-99.parquet.tmp-1", 10*time.Minute, true), // a living writer's
		leftover(t, out, ".logs-3-0-99.parquet.tmp-2", 5*time.Second, false),               // too fresh to judge
		leftover(t, out, "dt=2026-11-29/logs-0-0-99.parquet", 10*time.Hour, false),
		leftover(t, out, ".hidden-by-someone-else", 10*time.Hour, false),
		leftover(t, out, ".settings.json.tmp-5", 10*time.Hour, false), // not below _logstore/: not logstore's
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

// TestPartitionOwnerRemovesYoungLeftovers: a kill moments before a start
// leaves temporary files too young for the start's sweep; the member that
// takes their partition removes them (data files, dead letters, the
// resume record), and nothing of another partition or topic, nothing a
// living writer holds and nothing written after the start.
func TestPartitionOwnerRemovesYoungLeftovers(t *testing.T) {
	out := t.TempDir()
	young := 5 * time.Second
	gone := []string{
		leftover(t, out, "dt=2026-11-29/.logs-1-0-99.parquet.tmp-1", young, false),
		leftover(t, out, "dt=2026-11-29/.logs-1-0-99-2.parquet.tmp-2", young, false), // a later part
		leftover(t, out, "_errors/.logs-1-8065-8367.deadletter.tmp-3", young, false),
		leftover(t, out, "_logstore/resume/logs/.1.json.tmp-4", young, false),
	}
	kept := []string{
		leftover(t, out, "dt=2026-11-29/.logs-2-0-99.parquet.tmp-5", young, false),    // another partition's
		leftover(t, out, "dt=2026-11-29/.logs-10-0-99.parquet.tmp-6", young, false),   // partition 10's
		leftover(t, out, "_logstore/resume/logs/.11.json.tmp-7", young, false),        // partition 11's
		leftover(t, out, "_logstore/resume/other/.1.json.tmp-8", young, false),        // another topic's
		leftover(t, out, "dt=2026-11-29/.other-1-0-99.parquet.tmp-9", young, false),   // another topic's
		leftover(t, out, "dt=2026-11-29/.logs-1-100-199.parquet.tmp-10", young, true), // a living writer's
		leftover(t, out, ".settings.json.tmp-11", young, false),                       // not logstore's
	}
	f, err := newFiles(t.Context(), testFilesConfig(t, "file://"+out))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append(gone, kept...) {
		if !exists(p) {
			t.Fatalf("the start removed %s, too young to judge", p)
		}
	}
	after := leftover(t, out, "_logstore/resume/logs/.1.json.tmp-12", young, false) // written after the start
	if n := f.RemoveLeftovers(t.Context(), "logs", 1); n != len(gone) {
		t.Errorf("the owner of logs/1 removed %d files, want %d", n, len(gone))
	}
	for _, p := range gone {
		if exists(p) {
			t.Errorf("%s is still there", p)
		}
	}
	for _, p := range append(kept, after) {
		if !exists(p) {
			t.Errorf("%s was removed", p)
		}
	}
}

// TestPartitionKey: which final names are a partition's.
func TestPartitionKey(t *testing.T) {
	for _, c := range []struct {
		key  string
		want bool
	}{
		{"logs-1-0-99.parquet", true},
		{"pre/fix/dt=x/logs-1-0-99-3.parquet", true},
		{"_errors/logs-1-5-9.deadletter", true},
		{"_logstore/resume/logs/1.json", true},
		{"out/_logstore/resume/logs/1.json", true},
		{"_logstore/resume/logs/11.json", false},
		{"_logstore/resume/xlogs/1.json", false},
		{"resume/logs/1.json", false},
		{"logs-10-0-99.parquet", false},
		{"logs-1-0.parquet", false},
		{"logs-1-0-99-3-4.parquet", false},
		{"logs-1-a-99.parquet", false},
		{"logs-1-0-99.json", false},
		{"blogs-1-0-99.parquet", false},
	} {
		if got := partitionKey(c.key, "logs", 1); got != c.want {
			t.Errorf("partitionKey(%q, logs, 1) = %v, want %v", c.key, got, c.want)
		}
	}
}

// TestStoringPoint: a Put passes the failpoint of the kind of file it
// stores.
func TestStoringPoint(t *testing.T) {
	for key, want := range map[string]string{
		"dt=x/logs-1-0-99.parquet":             FailStoringData,
		"pre/_errors/logs-1-0-99.deadletter":   FailStoringDeadLetters,
		"_errors/logs-1-0-99.deadletter":       FailStoringDeadLetters,
		"_logstore/resume/logs/1.json":         FailStoringMeta,
		"out/_logstore/backfill/manifest.json": FailStoringMeta,
	} {
		if got := storingPoint(key); got != want {
			t.Errorf("storingPoint(%q) = %q, want %q", key, got, want)
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
