package sink

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestFileStorePutReplacesWhole(t *testing.T) {
	dir := t.TempDir()
	s := newFileStore(dir, true)
	if err := s.Preflight(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	key := "dt=2026-11-29/logs-0-0-9.parquet"
	for _, body := range []string{"first version", "second"} {
		if err := s.Put(ctx, key, bytes.NewReader([]byte(body)), int64(len(body))); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, "dt=2026-11-29", "logs-0-0-9.parquet"))
		if err != nil || string(got) != body {
			t.Fatalf("read %q, %v; want %q", got, err, body)
		}
	}
	// A failed write leaves the old file and no temporary one.
	err := s.Put(ctx, key, failingReader{}, 100)
	if err == nil {
		t.Fatal("Put with a failing body succeeded")
	}
	got, _ := os.ReadFile(s.Path(key))
	if string(got) != "second" {
		t.Errorf("after a failed Put the file holds %q", got)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "dt=2026-11-29"))
	if len(entries) != 1 {
		t.Errorf("folder holds %d entries, want only the file: %v", len(entries), entries)
	}
	if err := s.Put(ctx, "../escape", bytes.NewReader(nil), 0); err == nil {
		t.Error("Put took a key outside the folder")
	}
}

func TestFileStorePreflightFailsOnAFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o644)
	if err := newFileStore(f, true).Preflight(context.Background()); err == nil {
		t.Error("preflight took a regular file as the output folder")
	}
}

type failingReader struct{}

func (failingReader) ReadAt([]byte, int64) (int, error) { return 0, errors.New("disk on fire") }

// A sealed spool file on the output's filesystem is stored as a second name
// of the same file, not copied: the output reads the spool's bytes, keeps
// them once the spool file is removed, and the temporary name it passed
// through never looked like a leftover (the spool file's lock is on it).
func TestFileStorePutLinksASpoolFile(t *testing.T) {
	dir := t.TempDir()
	spool, err := newSpool(filepath.Join(dir, "spool"))
	if err != nil {
		t.Fatal(err)
	}
	s := newFileStore(filepath.Join(dir, "out"), true)
	ctx := context.Background()
	body := bytes.Repeat([]byte("a row group "), 1000)
	sf, err := spool.Create()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sf.Write(body); err != nil {
		t.Fatal(err)
	}
	key := "dt=2026-12-07/logs-0-0-9.parquet"
	if err := s.Put(ctx, key, sf, sf.Size()); err != nil {
		t.Fatal(err)
	}
	spooled, err1 := os.Stat(sf.Name())
	stored, err2 := os.Stat(s.Path(key))
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if !os.SameFile(spooled, stored) {
		t.Errorf("the stored file is a copy of the spool file, not a link to it")
	}
	if stored.Mode().Perm() != 0o644 {
		t.Errorf("the stored file's mode is %v, want 0644 (readable by the table's readers)", stored.Mode().Perm())
	}
	if unlocked(s.Path(key)) {
		t.Errorf("the stored name is not locked while its spool file is open: a starting process would take a temporary name of it for a leftover")
	}
	sf.Remove()
	if got, err := os.ReadFile(s.Path(key)); err != nil || !bytes.Equal(got, body) {
		t.Fatalf("after the spool file's removal the output reads %d bytes (%v), want %d", len(got), err, len(body))
	}
	entries, _ := os.ReadDir(filepath.Dir(s.Path(key)))
	if len(entries) != 1 {
		t.Errorf("folder holds %v, want only the file", entries)
	}

	// Where no link can be made (the spool on another filesystem), the
	// bytes are copied.
	defer func(l func(string, string) error) { linkFile = l }(linkFile)
	linkFile = func(string, string) error { return &os.LinkError{Op: "link", Err: syscall.EXDEV} }
	sf, err = spool.Create()
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Remove()
	sf.Write(body[:100])
	if err := s.Put(ctx, key, sf, sf.Size()); err != nil {
		t.Fatal(err)
	}
	spooled, _ = os.Stat(sf.Name())
	stored, _ = os.Stat(s.Path(key))
	if os.SameFile(spooled, stored) {
		t.Error("a link was made where linking failed")
	}
	if got, _ := os.ReadFile(s.Path(key)); !bytes.Equal(got, body[:100]) {
		t.Errorf("the copied file holds %q", got)
	}
}
