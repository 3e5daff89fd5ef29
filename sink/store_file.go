package sink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
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
	if src, ok := body.(linkSource); ok {
		if from, ok := src.linkPath(size); ok {
			if linked, err := s.putLink(ctx, key, path, from); linked || err != nil {
				return err
			}
		}
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

// linkSource is a body Put may store as a second name of its file rather
// than a copy: a sealed spool file.
type linkSource interface {
	// linkPath is the file's path when it holds exactly size bytes that
	// no one writes again.
	linkPath(size int64) (string, bool)
}

// linkFile makes a second name for a file; a test puts a failing one in
// its place to stand in for a spool on another filesystem.
var linkFile = os.Link

// putLink stores the file at from under path as a hard link: a hidden
// temporary name in the final folder, flushed, renamed into place — the
// steps of a copy's Put without the copy. A spool on the output's
// filesystem (the default spool folder and a file:// output on one disk)
// so costs no data written twice, and no file created and deleted for
// every file stored (on ext4 without a journal, each create searched past
// the inodes deleted in the last seconds: at 600 partitions that was 1.6
// of 12 CPU-seconds). The temporary name needs no lock of its own: the
// spool file's lock is on the same inode, so a starting process does not
// take it for a leftover while the spool file is open. linked is false,
// with no error, when no link could be made (another filesystem, links
// not allowed): the caller copies.
func (s *FileStore) putLink(ctx context.Context, key, path, from string) (linked bool, err error) {
	dir, base := filepath.Dir(path), filepath.Base(path)
	var tmp string
	for try := 0; ; try++ {
		tmp = filepath.Join(dir, "."+base+".tmp-"+strconv.FormatUint(uint64(rand.Uint32()), 10))
		err := linkFile(from, tmp)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || try == 10 {
			return false, nil
		}
	}
	done := false
	defer func() {
		if !done {
			os.Remove(tmp)
		}
	}()
	if s.fsync {
		if err := syncFile(tmp); err != nil {
			return true, fmt.Errorf("file store: fsync %s: %w", path, err)
		}
	}
	failpointStoring(ctx, key)
	if err := os.Chmod(tmp, 0o644); err != nil {
		return true, fmt.Errorf("file store: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return true, fmt.Errorf("file store: %w", err)
	}
	done = true
	if s.fsync {
		if err := syncDir(dir); err != nil {
			return true, fmt.Errorf("file store: fsync %s: %w", dir, err)
		}
	}
	return true, nil
}

// syncFile flushes the file (or folder) at path to the disk.
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// syncDir makes dir's entries durable.
func syncDir(dir string) error { return syncFile(dir) }

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
