package sink

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// FileStore keeps files under a folder (file:// URLs). Each file is written
// under a hidden temporary name in its final folder, flushed, and renamed
// into place, so a reader sees the old file or the new one and a crash
// leaves at most a hidden .tmp file, which Spark, Hive and Trino skip.
type FileStore struct {
	dir       string
	fsync     bool
	leftovers leftoverList[string] // temporary files found at start, for the partitions' owners
}

// newFileStore writes below dir; fsync makes each file and its folder
// durable before Put returns.
func newFileStore(dir string, fsync bool) *FileStore {
	return &FileStore{dir: dir, fsync: fsync}
}

func (s *FileStore) String() string { return "file://" + filepath.ToSlash(s.dir) }

// Path is where key lands.
func (s *FileStore) Path(key string) string {
	return filepath.Join(s.dir, filepath.FromSlash(key))
}

func (s *FileStore) Put(ctx context.Context, key string, body io.ReaderAt, size int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if key == "" || strings.Contains("/"+key+"/", "/../") {
		return fmt.Errorf("file store: key %q leaves %s", key, s.dir)
	}
	path := s.Path(key)
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("file store: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("file store: %w", err)
	}
	// The lock, on a second descriptor so that it outlives tmp's Close until
	// the rename, tells a starting process the file is not a leftover.
	lock, err := os.Open(tmp.Name())
	if err == nil {
		defer lock.Close()
		err = lockFile(lock)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err != nil {
		return fmt.Errorf("file store: locking %s: %w", tmp.Name(), err)
	}
	if _, err := io.Copy(tmp, io.NewSectionReader(body, 0, size)); err != nil {
		return fmt.Errorf("file store: writing %s: %w", path, err)
	}
	if s.fsync {
		if err := tmp.Sync(); err != nil {
			return fmt.Errorf("file store: fsync %s: %w", path, err)
		}
	}
	failpointStoring(ctx, key)
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("file store: writing %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("file store: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("file store: %w", err)
	}
	done = true
	if s.fsync {
		// The rename is durable only once the folder entry is.
		if err := syncDir(dir); err != nil {
			return fmt.Errorf("file store: fsync %s: %w", dir, err)
		}
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Preflight makes the folder and checks that a file can be created in it.
func (s *FileStore) Preflight(ctx context.Context) error {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return fmt.Errorf("output folder %s: %w", s.dir, err)
	}
	f, err := os.CreateTemp(s.dir, ".logstore-preflight-*")
	if err != nil {
		return fmt.Errorf("output folder %s is not writable: %w", s.dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}
