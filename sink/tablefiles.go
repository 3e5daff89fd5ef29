package sink

import (
	"bufio"
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go/format"
)

// WrittenFile is one Parquet file a batch stored: what a table needs to
// register it without reading it back.
type WrittenFile struct {
	Key    string // in the store, below its bucket or folder
	Folder string // the partition folders, e.g. "event_time_day=2026-11-29"; "" without
	Rows   int64
	Bytes  int64
	// Footer is the file's Parquet metadata as the writer made it: each
	// column chunk's value and null counts and min/max, which a table
	// turns into its column metrics.
	Footer *format.FileMetaData
	// Joined is how many sealed files were joined into this one
	// (StoreJoined); 0 for a file stored alone. A joined file's rows are
	// in order within each part, not across them.
	Joined int
}

// URL is where the file is, in the scheme of the files sink's URL:
// s3://bucket/key or file:///path.
func (f *Files) URL(w WrittenFile) string {
	loc, err := ParseURL(f.cfg.URL)
	if err != nil {
		return w.Key // newFiles parsed it already
	}
	if loc.Scheme == "s3" {
		return "s3://" + loc.Bucket + "/" + w.Key
	}
	return "file://" + strings.TrimSuffix(filepath.ToSlash(loc.Dir), "/") + "/" + w.Key
}

// NewTableFiles is the files sink a table writes its data files through.
// cfg must have had SetDefaults.
func NewTableFiles(ctx context.Context, cfg *FilesConfig) (*Files, error) {
	return newFiles(ctx, cfg)
}

// SealedFile is one data file of a batch, closed in the spool and not
// stored yet: a table stores the files of all the batches of one commit
// cycle together (StoreJoined), one file per folder rather than one per
// batch and folder.
type SealedFile struct {
	Folder string
	Rows   int64
	key    string // where the file is stored when it is stored alone
	spool  *SpoolFile
	schema *Schema
	footer *format.FileMetaData
}

// SealFiles is WriteFiles up to the upload: the batch's rows are in and
// its files closed in the spool, and the files are the caller's now (it
// stores them with StoreJoined and removes them with RemoveSealed); the
// partition's next batch stages afresh.
func (f *Files) SealFiles(ctx context.Context, b *Batch) ([]SealedFile, error) {
	st, err := f.open(b)
	if err != nil {
		return nil, err
	}
	if err := f.seal(ctx, st, b); err != nil {
		return nil, err
	}
	sealed := f.sealedFiles(st, b)
	for _, fo := range st.folders {
		fo.parts = nil // the caller's now: Discard must not remove them
	}
	f.Discard(b.Topic, b.Partition, b.Prefix)
	return sealed, nil
}

// RemoveSealed removes sealed files from the spool, once stored (or given
// up).
func RemoveSealed(files []SealedFile) {
	for _, s := range files {
		s.spool.Remove()
	}
}

// StoreJoined stores the sealed files of several batches: per folder, the
// row groups of its files joined byte for byte into one file
// (concatParquet), up to max_file_bytes a file, named name-1.parquet,
// name-2.parquet, … in the folder. A folder with one file stores it
// alone under its batch's name, as WriteFiles would; files that cannot be
// joined (a part concatParquet cannot move, a spool that cannot take the
// joined copy) are stored alone too. The sealed files stay in the spool (a
// commit that fails stores them again).
func (f *Files) StoreJoined(ctx context.Context, files []SealedFile, name string) ([]WrittenFile, error) {
	type group struct {
		folder string
		schema *Schema
	}
	var order []group
	groups := map[group][]SealedFile{}
	for _, s := range files {
		g := group{s.Folder, s.schema}
		if groups[g] == nil {
			order = append(order, g)
		}
		groups[g] = append(groups[g], s)
	}
	var stored []WrittenFile
	n := 0
	for _, g := range order {
		parts := groups[g]
		for len(parts) > 0 {
			// As many of the folder's files as fit in max_file_bytes, at
			// least one.
			k, size := 1, parts[0].spool.Size()
			for k < len(parts) && size+parts[k].spool.Size() <= f.cfg.MaxFileBytes {
				size += parts[k].spool.Size()
				k++
			}
			alone := parts[:k]
			if k > 1 {
				n++
				key := joinKey(f.prefix, g.folder, name+"-"+strconv.Itoa(n)+".parquet")
				w, err := f.storeJoined(ctx, key, parts[:k])
				var joining *joinError
				switch {
				case errors.As(err, &joining):
					// Joined or alone, the rows are the same: a spool that
					// cannot take the joined copy (a full disk) or a part
					// the join cannot move costs files, not the batches.
				case err != nil:
					return nil, err
				default:
					stored = append(stored, w)
					alone = nil
				}
			}
			for _, s := range alone {
				w, err := f.storeSealed(ctx, s)
				if err != nil {
					return nil, err
				}
				stored = append(stored, w)
			}
			parts = parts[k:]
		}
	}
	return stored, nil
}

// storeSealed stores one sealed file as it is.
func (f *Files) storeSealed(ctx context.Context, s SealedFile) (WrittenFile, error) {
	if err := f.store.Put(ctx, s.key, s.spool, s.spool.Size()); err != nil {
		return WrittenFile{}, err
	}
	Failpoint(ctx, FailFileSaved)
	return WrittenFile{Key: s.key, Folder: s.Folder, Rows: s.Rows, Bytes: s.spool.Size(), Footer: s.footer}, nil
}

// joinError is a join that did not make its file (the spool, or a part
// concatParquet cannot move): the parts are stored alone instead.
type joinError struct{ err error }

func (e *joinError) Error() string { return "joining data files: " + e.err.Error() }
func (e *joinError) Unwrap() error { return e.err }

// storeJoined joins parts into one spool file and stores it under key; a
// join that fails before the upload is a *joinError.
func (f *Files) storeJoined(ctx context.Context, key string, parts []SealedFile) (WrittenFile, error) {
	in := make([]concatPart, len(parts))
	var rows int64
	for i, s := range parts {
		in[i] = concatPart{r: s.spool, size: s.spool.Size()}
		rows += s.Rows
	}
	sf, err := f.spool.Create()
	if err != nil {
		return WrittenFile{}, &joinError{err}
	}
	defer sf.Remove()
	bw := bufio.NewWriterSize(sf, 64<<10)
	footer, size, err := concatParquet(bw, in)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return WrittenFile{}, &joinError{err}
	}
	if err := f.store.Put(ctx, key, sf, size); err != nil {
		return WrittenFile{}, err
	}
	Failpoint(ctx, FailFileSaved)
	return WrittenFile{Key: key, Folder: parts[0].Folder, Rows: rows, Bytes: size, Footer: footer, Joined: len(parts)}, nil
}
