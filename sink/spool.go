package sink

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Spool files are named so a sweep finds them and nothing else.
const (
	spoolPrefix = "logstore-"
	spoolSuffix = ".parquet.spool"
)

// Spool is the local folder a file is written to before it is uploaded, so
// memory holds one row group per open file, not the whole file.
type Spool struct {
	dir string
	// fault, when set, is asked before every write to the folder's files
	// (spool files and spilled pages) and fails the write with its error:
	// the disk-full tests stand in for a full or failing disk with it.
	fault func(n int) error
}

// newSpool makes dir if needed and deletes spool files a crashed run left
// behind (see leftovers.go), also while other processes use the folder.
func newSpool(dir string) (*Spool, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("spool folder %s: %w", dir, err)
	}
	s := &Spool{dir: dir}
	s.sweep(time.Now())
	return s, nil
}

func (s *Spool) sweep(now time.Time) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, spoolPrefix) || !strings.HasSuffix(name, spoolSuffix) {
			continue
		}
		path := filepath.Join(s.dir, name)
		if info, err := e.Info(); err == nil && isLeftover(path, now.Sub(info.ModTime())) {
			os.Remove(path)
		}
	}
}

// Create opens a new, empty spool file.
func (s *Spool) Create() (*SpoolFile, error) {
	f, err := os.CreateTemp(s.dir, spoolPrefix+"*"+spoolSuffix)
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("spool: locking %s: %w", f.Name(), err)
	}
	return &SpoolFile{f: f, spool: s}, nil
}

// check is the fault a test put in place of the disk, if any.
func (s *Spool) check(n int) error {
	if s.fault == nil {
		return nil
	}
	return s.fault(n)
}

// SpoolFile is written once, then read by the upload, then removed.
type SpoolFile struct {
	f     *os.File
	spool *Spool
	size  int64
}

func (s *SpoolFile) Write(p []byte) (int, error) {
	if err := s.spool.check(len(p)); err != nil {
		return 0, fmt.Errorf("spool %s: %w", s.f.Name(), err)
	}
	n, err := s.f.Write(p)
	s.size += int64(n)
	if err != nil {
		return n, fmt.Errorf("spool %s: %w", s.f.Name(), err)
	}
	return n, nil
}

// ReadAt reads what was written; uploads read parts in parallel through it.
func (s *SpoolFile) ReadAt(p []byte, off int64) (int, error) { return s.f.ReadAt(p, off) }

// Size is the number of bytes written.
func (s *SpoolFile) Size() int64 { return s.size }

// linkPath is the file's path for a FileStore's link while it is open
// and holds size bytes: a spool file is not written again once stored.
func (s *SpoolFile) linkPath(size int64) (string, bool) {
	if s.f == nil || s.size != size {
		return "", false
	}
	return s.f.Name(), true
}

// Name is the file's path, for messages.
func (s *SpoolFile) Name() string { return s.f.Name() }

// Remove closes and deletes the file; it is safe to call more than once.
func (s *SpoolFile) Remove() {
	if s.f == nil {
		return
	}
	s.f.Close()
	os.Remove(s.f.Name())
	s.f = nil
}

var _ interface {
	io.Writer
	io.ReaderAt
} = (*SpoolFile)(nil)
