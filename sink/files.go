package sink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"

	"github.com/parquet-go/parquet-go/format"
)

// Store keeps whole files under keys; the Files sink writes through one.
type Store interface {
	// Put stores size bytes of body under key, replacing what was there in
	// one step: a reader sees the old file or the new one, never a part.
	Put(ctx context.Context, key string, body io.ReaderAt, size int64) error
	// Preflight checks that Put can work, so a wrong bucket, folder or
	// credential fails at start rather than at the first flush.
	Preflight(ctx context.Context) error
	// String names the store for messages, e.g. s3://bucket/prefix.
	String() string
}

// Files writes each batch as Parquet files under names made from the batch
// (topic, partition, first and last offset); writing a batch again
// overwrites the same files, so the output holds every batch exactly once.
//
// A batch's rows are encoded as they arrive (Stage), into one spool file
// per folder, so a file of any size costs the memory of its open pages, not
// of its rows; at the cut, Write adds the last rows, closes the files and
// uploads them under the batch's names. The same rows in the same order
// make the same bytes however they were staged, so a re-cut at the same
// offsets writes the same files.
type Files struct {
	store  Store
	prefix string // key prefix inside the store, from the URL
	cfg    *FilesConfig
	spool  *Spool
	pages  *pageSpill

	mu     sync.Mutex
	staged map[stageKey]*stagedBatch
}

// stageKey names a partition's open batch; a replay (its own prefix) and
// the group's run never share one.
type stageKey struct {
	topic     string
	partition int
	prefix    string
}

// stagedBatch is an open batch's files: per folder, the files closed at
// max_file_bytes and the one being written.
type stagedBatch struct {
	first   int64
	schema  *Schema       // the data files' (Layout.FileSchema)
	layout  rowFolders    // where each row goes: a *Layout, or dead letters' one folder
	cols    *Layout       // which of a row's columns a file holds (Layout.fileRow); nil: all
	row     Row           // scratch for a row's file columns
	name    []byte        // the last row's folder
	last    *stagedFolder // and its files; nil after a refused row, whose folder it would be
	spare   []byte        // scratch for the next row's folder
	folders map[string]*stagedFolder
	rows    int    // rows taken so far
	sealed  bool   // the cut's rows are in and every file is closed
	ext     string // the files' extension; "": .parquet
}

// rowFolders names a row's folder (AppendFolder) and tells, without
// naming them, that two rows share one (SameFolder; false says nothing).
type rowFolders interface {
	AppendFolder(dst []byte, r Row) []byte
	SameFolder(a, b Row) bool
}

// oneFolder is a batch whose rows all go to the same folder.
type oneFolder string

func (f oneFolder) AppendFolder(dst []byte, _ Row) []byte { return append(dst, f...) }
func (f oneFolder) SameFolder(_, _ Row) bool              { return true }

type stagedFolder struct {
	parts    []*SpoolFile
	partRows []int64 // rows of each of parts
	footers  []*format.FileMetaData
	open     *SpoolFile
	pw       *ParquetWriter
	rows     int // rows in the open file
}

// pageSpillAfter is how much of one column chunk's encoded pages a file
// keeps in memory before the rest goes to the spool folder (pageSpill).
const pageSpillAfter = 64 << 10

// newFiles opens the store the URL names and runs its preflight check
// unless files.s3.preflight is off. cfg must have had SetDefaults.
func newFiles(ctx context.Context, cfg *FilesConfig) (*Files, error) {
	loc, err := ParseURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	var store Store
	prefix := ""
	preflight := true
	switch loc.Scheme {
	case "s3":
		s3, err := NewS3Store(ctx, loc.Bucket, cfg.S3)
		if err != nil {
			return nil, err
		}
		store, prefix, preflight = s3, loc.Prefix, *cfg.S3.Preflight
		s3.probeKey = joinKey(prefix, "_logstore_preflight")
	default:
		store = newFileStore(loc.Dir, *cfg.File.Fsync)
	}
	f, err := newFilesOn(store, prefix, cfg)
	if err != nil {
		return nil, err
	}
	if preflight {
		if err := store.Preflight(ctx); err != nil {
			return nil, err
		}
	}
	if ls, ok := store.(leftoverStore); ok {
		ls.sweepLeftovers(ctx, prefix)
	}
	return f, nil
}

// newFilesOn writes to a given store below prefix; newFiles uses it, and
// tests use it with stores of their own.
func newFilesOn(store Store, prefix string, cfg *FilesConfig) (*Files, error) {
	spool, err := newSpool(cfg.SpoolDir)
	if err != nil {
		return nil, err
	}
	return &Files{
		store: store, prefix: prefix, cfg: cfg, spool: spool,
		pages:  newPageSpill(spool, pageSpillAfter),
		staged: map[stageKey]*stagedBatch{},
	}, nil
}

// Store is where the files go.
func (f *Files) Store() Store { return f.store }

// Stage encodes rows of the open batch that starts at b.First into its
// spool files. full reports that one of the batch's files reached
// target_file_bytes: the batch should be cut.
func (f *Files) Stage(ctx context.Context, b *Batch) (full bool, err error) {
	st, err := f.open(b)
	if err != nil {
		return false, err
	}
	if st.sealed {
		return false, fmt.Errorf("files: %s/%d: batch from %d is already cut", b.Topic, b.Partition, b.First)
	}
	if err := f.append(ctx, st, b); err != nil {
		return false, err
	}
	for _, fo := range st.folders {
		if fo.pw != nil && fo.pw.Size() >= f.cfg.TargetFileBytes {
			return true, nil
		}
	}
	return false, nil
}

// Write adds b's rows to what was staged for the batch, closes its files
// and uploads them; it returns once every file is stored. Called again
// after an error (a failed upload), it uploads the same files again. A
// batch without rows writes nothing.
func (f *Files) Write(ctx context.Context, b *Batch) error {
	_, err := f.WriteFiles(ctx, b)
	return err
}

// WriteFiles is Write that also lists the files it stored, for a sink that
// registers them (a table).
func (f *Files) WriteFiles(ctx context.Context, b *Batch) ([]WrittenFile, error) {
	st, err := f.open(b)
	if err != nil {
		return nil, err
	}
	if err := f.seal(ctx, st, b); err != nil {
		return nil, err
	}
	stored, err := f.upload(ctx, st, b)
	if err != nil {
		return nil, err
	}
	f.Discard(b.Topic, b.Partition, b.Prefix)
	return stored, nil
}

// HeldBytes is what the partition's open batch holds in its sorted files'
// runs (MemoryHolder): its other staged rows are encoded in the spool.
func (f *Files) HeldBytes(topic string, partition int, prefix string) int64 {
	f.mu.Lock()
	st := f.staged[stageKey{topic, partition, prefix}]
	f.mu.Unlock()
	if st == nil {
		return 0
	}
	var n int64
	for _, fo := range st.folders {
		if fo.pw != nil {
			n += fo.pw.runHeldBytes()
		}
	}
	return n
}

// Discard drops what was staged for the partition's open batch and never
// written: the worker gave the batch up, and whoever reads it again stages
// it again.
func (f *Files) Discard(topic string, partition int, prefix string) {
	k := stageKey{topic, partition, prefix}
	f.mu.Lock()
	st := f.staged[k]
	delete(f.staged, k)
	f.mu.Unlock()
	if st != nil {
		st.remove()
	}
}

// Close drops every staged batch; Write finishes its uploads before it
// returns, so nothing stored is lost.
func (f *Files) Close() error {
	f.mu.Lock()
	staged := f.staged
	f.staged = map[stageKey]*stagedBatch{}
	f.mu.Unlock()
	for _, st := range staged {
		st.remove()
	}
	return nil
}

// open returns the staged batch b belongs to, starting one when there is
// none, or when the one there began at another offset (a batch given up
// without Discard).
func (f *Files) open(b *Batch) (*stagedBatch, error) {
	k := stageKey{b.Topic, b.Partition, b.Prefix}
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.staged[k]
	if st != nil && st.first == b.First {
		return st, nil
	}
	if st != nil {
		st.remove()
	}
	layout, err := f.newLayout(b.Schema)
	if err != nil {
		return nil, err
	}
	st = &stagedBatch{first: b.First, schema: layout.FileSchema(b.Schema), layout: layout, cols: layout, folders: map[string]*stagedFolder{}}
	f.staged[k] = st
	return st, nil
}

// append writes b's rows into their folders' open files, starting the next
// part of a folder once its file reaches max_file_bytes.
func (f *Files) append(ctx context.Context, st *stagedBatch, b *Batch) error {
	if b.Staged > st.rows {
		// Rows staged before are not here: the spool lost them, or the
		// batch was given up (Discard).
		return &RestageError{Topic: b.Topic, Partition: b.Partition, First: b.First,
			Err: fmt.Errorf("files: %s/%d: batch from %d: %d rows staged, the spool has %d", b.Topic, b.Partition, b.First, b.Staged, st.rows)}
	}
	for i := st.rows - b.Staged; i < len(b.Rows); i++ {
		r := b.Rows[i]
		if i%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		// Rows mostly share their neighbour's folder: the last row's is
		// looked up again only when the name differs, and the name is made
		// only when the layout cannot tell the folder is the same.
		fo := st.last
		if fo == nil || i == 0 || !st.layout.SameFolder(b.Rows[i-1], r) {
			name := st.layout.AppendFolder(st.spare[:0], r)
			if fo == nil || string(name) != string(st.name) {
				if fo = st.folders[string(name)]; fo == nil {
					fo = &stagedFolder{}
					st.folders[string(name)] = fo
				}
				st.last = fo
				st.name, name = name, st.name
			}
			st.spare = name
		}
		if fo.pw != nil && fo.rows > 0 && fo.pw.Size() >= f.cfg.MaxFileBytes {
			if err := f.closeFile(fo, st.schema); err != nil {
				return f.lost(st, b, err)
			}
		}
		if fo.pw == nil {
			sf, err := f.spool.Create()
			if err != nil {
				return err
			}
			pw, err := f.newWriter(sf, st.schema)
			if err != nil {
				sf.Remove()
				return err
			}
			fo.open, fo.pw, fo.rows = sf, pw, 0
		}
		if err := fo.pw.writeRow(st.fileRow(r), b.ValidText); err != nil {
			if !errors.As(err, new(*valueError)) {
				return f.lost(st, b, err)
			}
			// The next row is placed afresh: it is compared with this one
			// (SameFolder), and this one's folder holds none of it.
			st.last = nil
			return &RowError{Topic: b.Topic, Partition: b.Partition, Index: i, Offset: sourceOffset(b, i), Err: err}
		}
		fo.rows++
		st.rows++
	}
	return nil
}

// seal adds the cut's rows and closes every file, once.
func (f *Files) seal(ctx context.Context, st *stagedBatch, b *Batch) error {
	if st.sealed {
		return nil
	}
	if err := f.append(ctx, st, b); err != nil {
		return err
	}
	for _, fo := range st.folders {
		if err := f.closeFile(fo, st.schema); err != nil {
			return f.lost(st, b, err)
		}
	}
	st.sealed = true
	return nil
}

// upload stores every file of a sealed batch under the batch's names
// (sealedFiles).
func (f *Files) upload(ctx context.Context, st *stagedBatch, b *Batch) ([]WrittenFile, error) {
	var stored []WrittenFile
	for _, s := range f.sealedFiles(st, b) {
		w, err := f.storeSealed(ctx, s)
		if err != nil {
			return nil, err
		}
		stored = append(stored, w)
	}
	return stored, nil
}

// sealedFiles lists a sealed batch's files under the batch's names:
// {folder}/{name}.parquet, then {name}-1.parquet, … for a folder's later
// parts.
func (f *Files) sealedFiles(st *stagedBatch, b *Batch) []SealedFile {
	var sealed []SealedFile
	for _, name := range slices.Sorted(maps.Keys(st.folders)) {
		fo := st.folders[name]
		for part, sf := range fo.parts {
			key := objectKey(f.prefix, name, b, part)
			if st.ext != "" {
				key = fileKey(f.prefix, name, b, part, st.ext)
			}
			sealed = append(sealed, SealedFile{Folder: name, Rows: fo.partRows[part], key: key, spool: sf, schema: st.schema, footer: fo.footers[part]})
		}
	}
	return sealed
}

// newWriter starts a file of the folder's, in sinks' row order.
func (f *Files) newWriter(sf *SpoolFile, s *Schema) (*ParquetWriter, error) {
	pw, err := newParquetWriter(sf, s, f.cfg.Parquet, f.pages)
	if err != nil || len(f.cfg.SortBy) == 0 {
		return pw, err
	}
	if pw.order, err = newRowOrder(pw.cols, f.cfg.SortBy, int(min(sortRunBytes, f.cfg.Parquet.RowGroupBytes))); err != nil {
		return nil, err
	}
	return pw, nil
}

// closeFile finishes the folder's open file, in its row order.
func (f *Files) closeFile(fo *stagedFolder, s *Schema) error {
	if fo.pw == nil || fo.rows == 0 || fo.pw.order == nil {
		return fo.close()
	}
	if err := fo.close(); err != nil {
		return err
	}
	last := len(fo.parts) - 1
	sf, pw, err := f.sortFile(fo.parts[last], fo.footers[last], s)
	if err != nil {
		fo.parts[last].Remove()
		fo.parts, fo.partRows, fo.footers = fo.parts[:last], fo.partRows[:last], fo.footers[:last]
		return err
	}
	if pw != nil {
		fo.parts[last], fo.footers[last] = sf, pw.Footer()
	}
	return nil
}

// close finishes the open file (its last row group and footer) and keeps it
// as the folder's next part. A file that cannot be finished is removed:
// its rows are lost with it (Files.lost).
func (fo *stagedFolder) close() error {
	if fo.pw == nil {
		return nil
	}
	pw, sf := fo.pw, fo.open
	fo.pw, fo.open = nil, nil
	if fo.rows == 0 { // only refused rows came here
		pw.abandon()
		sf.Remove()
		return nil
	}
	if err := pw.Close(); err != nil {
		name := sf.Name()
		pw.abandon()
		sf.Remove()
		return fmt.Errorf("closing %s: %w", name, err)
	}
	fo.parts = append(fo.parts, sf)
	fo.partRows = append(fo.partRows, int64(fo.rows))
	fo.footers = append(fo.footers, pw.Footer())
	return nil
}

// lost drops the staged batch st after its spool failed: a half-written
// file can be neither finished nor trusted, and every file of the batch
// goes with it. A call that holds all of the batch's rows (nothing was
// staged before it) rebuilds it when it is retried; otherwise the rows
// staged earlier are gone and the caller must read the batch again
// (RestageError).
func (f *Files) lost(st *stagedBatch, b *Batch, err error) error {
	k := stageKey{b.Topic, b.Partition, b.Prefix}
	f.mu.Lock()
	if f.staged[k] == st {
		delete(f.staged, k)
	}
	f.mu.Unlock()
	st.remove()
	err = fmt.Errorf("files: %s/%d: batch from %d: the spool folder could not be written (free space in sinks.files.spool_dir): %w", b.Topic, b.Partition, b.First, err)
	if b.Staged == 0 {
		return err
	}
	return &RestageError{Topic: b.Topic, Partition: b.Partition, First: b.First, Err: err}
}

func (st *stagedBatch) remove() {
	for _, fo := range st.folders {
		if fo.pw != nil {
			fo.pw.abandon()
			fo.pw = nil
		}
		if fo.open != nil {
			fo.open.Remove()
		}
		for _, sf := range fo.parts {
			sf.Remove()
		}
	}
	st.folders = nil
}

// RowError is a row the Parquet writer refused: a value whose Go type does
// not match its column, a null in a required column, a time outside
// MinTime..MaxTime. Retrying cannot help; the row's record belongs in the
// dead letters. A spool that cannot be written is never a RowError.
type RowError struct {
	Topic     string
	Partition int
	Index     int   // in Batch.Rows
	Offset    int64 // the record's offset; -1 when the batch has no Sources
	Err       error
}

func (e *RowError) Error() string {
	return fmt.Sprintf("%s[%d] offset %d: %v", e.Topic, e.Partition, e.Offset, e.Err)
}

func (e *RowError) Unwrap() error { return e.Err }

func sourceOffset(b *Batch, i int) int64 {
	if i < len(b.Sources) {
		return b.Sources[i].Offset
	}
	return -1
}
