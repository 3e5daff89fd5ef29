package sink

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A crash (SIGKILL, OOM, a lost node) leaves the files a process was
// writing: hidden .NAME.tmp-* files in the output folders (data files,
// dead letters, resume records), spool files, and on S3 unfinished
// multipart uploads, which are billed until aborted. Nothing else removes
// them, so a start does, safely while other members run: a process holds
// an exclusive lock (flock) on every such file while it writes it, and the
// kernel drops the lock when the process dies. A leftover is a file with
// logstore's name pattern, older than leftoverGrace (a file is locked
// within microseconds of being created), whose lock a start can take.
// Where locks are not available, or as a backstop, a file or upload older
// than leftoverMaxAge is a leftover too. No pending cut needs a spool or
// temp file: a re-cut writes its files again from the records.
//
// A kill shortly before a start (a pod restarted at once, the clean run
// after a crash) leaves files younger than leftoverGrace. The start keeps
// them in mind, and once the member owns a partition, every one named
// after that partition is removed unless a living writer holds its lock
// (Files.RemoveLeftovers): its owner is the only writer the partition has,
// so the others were left by a dead one.
const (
	leftoverGrace  = time.Minute
	leftoverMaxAge = 6 * time.Hour
)

// leftoverStore is a store whose writes can leave temporary state behind.
type leftoverStore interface {
	// sweepLeftovers removes, below prefix, what dead writers surely left
	// (see isLeftover), keeps the rest in mind for removeLeftoversOf, and
	// returns how many it removed. It runs once, at start.
	sweepLeftovers(ctx context.Context, prefix string) int
	// removeLeftoversOf removes what sweepLeftovers kept in mind whose
	// final key owned reports true for, unless a living writer holds it.
	removeLeftoversOf(ctx context.Context, owned func(key string) bool) int
}

// isLeftover reports whether the file at path, of the given age, was left
// by a process that no longer writes it.
func isLeftover(path string, age time.Duration) bool {
	return age >= leftoverMaxAge || age >= leftoverGrace && unlocked(path)
}

// isTempName reports whether the file at rel (slash-separated, below the
// store's folder) is one of the FileStore's temporary files: a Put's
// .NAME.tmp-* or a preflight's probe.
func isTempName(rel string) bool {
	_, ok := tempFinal(rel)
	return ok || strings.HasPrefix(path.Base(rel), ".logstore-preflight-")
}

// tempFinal is the key a Put's temporary file at rel was to be renamed to:
// a .parquet file anywhere, or a .json one below _logstore/ (the resume
// records). Other hidden files are not logstore's.
func tempFinal(rel string) (string, bool) {
	dir, name := path.Split(rel)
	name, ok := strings.CutPrefix(name, ".")
	if !ok {
		return "", false
	}
	i := strings.LastIndex(name, ".tmp-")
	if i < 0 || !digits(name[i+len(".tmp-"):]) {
		return "", false
	}
	final := dir + name[:i]
	if outputFile(final) || strings.HasSuffix(final, ".json") && underMeta(dir) {
		return final, true
	}
	return "", false
}

// underMeta reports whether a folder is _logstore/ or below it, where
// PutMeta's objects go.
func underMeta(dir string) bool {
	return strings.HasPrefix(dir, metaFolder+"/") || strings.Contains(dir, "/"+metaFolder+"/")
}

const metaFolder = "_logstore"

func digits(s string) bool {
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// partitionKey reports whether key is one of the partition's files: its
// data and dead-letter files, {topic}-{partition}-{first}-{last}[-{n}].parquet
// (objectKey), and its resume record, _logstore/resume/{topic}/{partition}.json
// (the pipeline's resumeName). A topic whose name is another's followed by
// -{digits} can claim that one's names; what is removed is then another
// partition's leftover, no living writer's (see removeLeftoversOf).
func partitionKey(key, topic string, partition int) bool {
	dir, name := path.Split(key)
	p := strconv.Itoa(partition)
	if name == p+".json" {
		resume := metaFolder + "/resume/" + topic + "/"
		return dir == resume || strings.HasSuffix(dir, "/"+resume)
	}
	rest, ok := strings.CutPrefix(name, topic+"-"+p+"-")
	if !ok {
		return false
	}
	rest, ok = strings.CutSuffix(rest, ".parquet")
	if !ok {
		if rest, ok = strings.CutSuffix(rest, DeadLetterExt); !ok {
			return false
		}
	}
	offsets := strings.Split(rest, "-") // first, last and maybe the part
	if len(offsets) < 2 || len(offsets) > 3 {
		return false
	}
	for _, o := range offsets {
		if !digits(o) {
			return false
		}
	}
	return true
}

// RemoveLeftovers removes the temporary files and unfinished uploads that
// dead writers left for a partition this member now owns, and returns how
// many. The job calls it when a partition starts, before its worker
// writes: what it removes was found at start (see leftovers.go), so a
// file the member itself writes later is never a candidate.
func (f *Files) RemoveLeftovers(ctx context.Context, topic string, partition int) int {
	ls, ok := f.store.(leftoverStore)
	if !ok {
		return 0
	}
	n := ls.removeLeftoversOf(ctx, func(key string) bool { return partitionKey(key, topic, partition) })
	if n > 0 {
		slog.Info("files: removed what a dead writer left for the partition", "store", f.store.String(), "topic", topic, "partition", partition, "files", n)
	}
	return n
}

// leftoverList is what a store's start found and could not judge yet:
// temporary files' paths, unfinished uploads.
type leftoverList[T any] struct {
	mu    sync.Mutex
	items []T
}

func (l *leftoverList[T]) keep(items []T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.items = items
}

// sift removes the leftovers owned reports true for and returns how many
// it removed. One remove could not (an error other than fs.ErrNotExist)
// stays for a later try.
func (l *leftoverList[T]) sift(owned func(T) bool, remove func(T) error) (removed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	kept := l.items[:0]
	for _, item := range l.items {
		if !owned(item) {
			kept = append(kept, item)
			continue
		}
		switch err := remove(item); {
		case err == nil:
			removed++
		case !errors.Is(err, fs.ErrNotExist):
			kept = append(kept, item)
		}
	}
	l.items = kept
	return removed
}

// sweepLeftovers deletes the temporary files crashed writers left below
// the store's folder and returns how many it removed. The walk reads every
// folder of the output once; it runs at start. The store's folder is its
// root: prefix is "".
func (s *FileStore) sweepLeftovers(_ context.Context, _ string) int {
	now := time.Now()
	removed := 0
	var young []string
	_ = filepath.WalkDir(s.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil // an unreadable folder is skipped, not fatal
		}
		rel, err := filepath.Rel(s.dir, path)
		if err != nil || !isTempName(filepath.ToSlash(rel)) {
			return nil
		}
		info, err := d.Info()
		switch {
		case err != nil:
		case isLeftover(path, now.Sub(info.ModTime())) && os.Remove(path) == nil:
			removed++
		default:
			young = append(young, path)
		}
		return nil
	})
	s.leftovers.keep(young)
	if removed > 0 {
		slog.Info("file store: removed temporary files left by crashed writers", "folder", s.dir, "files", removed)
	}
	return removed
}

func (s *FileStore) removeLeftoversOf(_ context.Context, owned func(key string) bool) int {
	return s.leftovers.sift(func(p string) bool {
		rel, err := filepath.Rel(s.dir, p)
		final, ok := tempFinal(filepath.ToSlash(rel))
		return err == nil && ok && owned(final)
	}, func(p string) error {
		switch {
		case !exists(p): // renamed into place by its writer, or removed
			return fs.ErrNotExist
		case !unlocked(p):
			// A living writer's (or, without flock, unknown): the sweep
			// of a later start judges it by age.
			return errHeld
		}
		return os.Remove(p)
	})
}

var errHeld = errors.New("held by a living writer")

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
