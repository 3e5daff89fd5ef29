package sink

import (
	"context"
	"fmt"
	"io"
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
type Files struct {
	store  Store
	prefix string // key prefix inside the store, from the URL
	cfg    *FilesConfig
	spool  *Spool
}

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
	if fs, ok := store.(*FileStore); ok {
		fs.RemoveLeftovers()
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
	return &Files{store: store, prefix: prefix, cfg: cfg, spool: spool}, nil
}

// Store is where the files go.
func (f *Files) Store() Store { return f.store }

// Write writes one file per folder of the batch (more when a folder's file
// reaches max_file_bytes) and returns once every file is stored. A batch
// without rows writes nothing.
func (f *Files) Write(ctx context.Context, b *Batch) error {
	if len(b.Rows) == 0 {
		return nil
	}
	layout, err := newLayout(f.cfg.PartitionBy, b.Schema)
	if err != nil {
		return err
	}
	for _, g := range layout.Group(b.Rows) {
		if err := f.writeFolder(ctx, b, g.Folder, g.Rows); err != nil {
			return err
		}
	}
	return nil
}

// Close has nothing to release: every Write finishes its uploads.
func (f *Files) Close() error { return nil }

func (f *Files) writeFolder(ctx context.Context, b *Batch, folder string, rows []int) error {
	for part := 0; len(rows) > 0; part++ {
		key := objectKey(f.prefix, folder, b, part)
		n, err := f.writeFile(ctx, key, b, rows)
		if err != nil {
			return err
		}
		Failpoint(FailFileSaved)
		rows = rows[n:]
	}
	return nil
}

// writeFile spools rows until the file reaches max_file_bytes, uploads it,
// and returns how many rows it took.
func (f *Files) writeFile(ctx context.Context, key string, b *Batch, rows []int) (int, error) {
	sf, err := f.spool.Create()
	if err != nil {
		return 0, err
	}
	defer sf.Remove()
	pw, err := newParquetWriter(sf, b.Schema, f.cfg.Parquet)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, i := range rows {
		if n > 0 && pw.Size() >= f.cfg.MaxFileBytes {
			break
		}
		if n%4096 == 0 && ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if err := pw.WriteRow(b.Rows[i]); err != nil {
			return 0, &RowError{Topic: b.Topic, Partition: b.Partition, Index: i, Offset: sourceOffset(b, i), Err: err}
		}
		n++
	}
	if err := pw.Close(); err != nil {
		return 0, fmt.Errorf("%s: %w", key, err)
	}
	if err := f.store.Put(ctx, key, sf, sf.Size()); err != nil {
		return 0, err
	}
	return n, nil
}

// RowError is a row the Parquet writer refused: a value whose Go type does
// not match its column, or a null in a required column. Retrying cannot
// help; the row's record belongs in the dead letters.
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
