package sink

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
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
