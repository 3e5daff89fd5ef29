package sink

import (
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// A crash (SIGKILL, OOM, a lost node) leaves the files a process was
// writing: hidden .NAME.parquet.tmp-* files in the output folders and
// spool files. Nothing else removes them, so a start does, safely while
// other members run: a process holds an exclusive lock (flock) on every
// such file while it writes it, and the kernel drops the lock when the
// process dies. A leftover is a file with logstore's name pattern, older
// than leftoverGrace (a file is locked within microseconds of being
// created), whose lock a start can take. Where locks are not available, or
// as a backstop, a file older than leftoverMaxAge is a leftover too. No
// pending cut needs a spool or temp file: a re-cut writes its files again
// from the records.
const (
	leftoverGrace  = time.Minute
	leftoverMaxAge = 6 * time.Hour
)

// isLeftover reports whether the file at path, of the given age, was left
// by a process that no longer writes it.
func isLeftover(path string, age time.Duration) bool {
	return age >= leftoverMaxAge || age >= leftoverGrace && unlocked(path)
}

// isTempName reports whether name is one of the FileStore's temporary
// files: a Put's .NAME.tmp-* or a preflight's probe.
func isTempName(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, ".parquet.tmp-") ||
		strings.HasPrefix(name, ".logstore-preflight-")
}

// RemoveLeftovers deletes the temporary files crashed writers left below
// the store's folder and returns how many it removed. The walk reads every
// folder of the output once; it runs at start.
func (s *FileStore) RemoveLeftovers() int {
	now := time.Now()
	removed := 0
	_ = filepath.WalkDir(s.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !isTempName(d.Name()) {
			return nil // an unreadable folder is skipped, not fatal
		}
		info, err := d.Info()
		if err == nil && isLeftover(path, now.Sub(info.ModTime())) && os.Remove(path) == nil {
			removed++
		}
		return nil
	})
	if removed > 0 {
		slog.Info("file store: removed temporary files left by crashed writers", "folder", s.dir, "files", removed)
	}
	return removed
}
