package sink

import (
	"context"
	"path/filepath"
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
