package sink

import (
	"encoding/json"
	"fmt"
)

// FileLayout is what decides a batch's file names and folders: the
// partition folders, and where a folder's rows split into parts (the file
// size cap, and the Parquet settings that make a file the size it is).
// The pipeline records it with each cut, so that a batch cut under one
// layout and re-cut after a config change gets the same names.
type FileLayout struct {
	PartitionBy  []PartitionColumn `json:"partition_by,omitempty"`
	MaxFileBytes int64             `json:"max_file_bytes"`
	// TargetFileBytes is where a batch is cut when a file grows to it. A
	// re-cut ends at its mark whatever it says, so it decides no name of a
	// pending cut; it is recorded so the fingerprint changes with every
	// setting that shapes files. 0 (a mark of an older version): the
	// current setting.
	TargetFileBytes int64         `json:"target_file_bytes,omitempty"`
	Parquet         ParquetConfig `json:"parquet"`
	// DropPartitionColumns leaves the columns the folders hold whole out
	// of the data files (not keep_partition_columns). false, in a layout
	// an older version recorded, keeps them, so a re-cut writes the bytes
	// the first cut did; only recorded with partition_by.
	DropPartitionColumns bool `json:"drop_partition_columns,omitempty"`
}

// Layout is the sink's layout as compact JSON, the same text for the same
// settings.
func (f *Files) Layout() string {
	l := FileLayout{PartitionBy: f.cfg.PartitionBy, MaxFileBytes: f.cfg.MaxFileBytes, TargetFileBytes: f.cfg.TargetFileBytes,
		DropPartitionColumns: len(f.cfg.PartitionBy) > 0 && !f.cfg.KeepPartitionColumns && !f.cfg.table}
	if f.cfg.Parquet != nil {
		l.Parquet = *f.cfg.Parquet
	}
	b, err := json.Marshal(l)
	if err != nil {
		panic(err) // plain fields: cannot fail
	}
	return string(b)
}

// WithLayout is the same sink (store, prefix, spool) writing under a
// layout from Layout, possibly another configuration's.
func (f *Files) WithLayout(layout string) (*Files, error) {
	var l FileLayout
	if err := json.Unmarshal([]byte(layout), &l); err != nil {
		return nil, fmt.Errorf("files: a recorded layout %q: %w", layout, err)
	}
	cfg := *f.cfg
	cfg.PartitionBy, cfg.MaxFileBytes, cfg.Parquet = l.PartitionBy, l.MaxFileBytes, &l.Parquet
	cfg.KeepPartitionColumns = cfg.table || !l.DropPartitionColumns
	if l.TargetFileBytes > 0 {
		cfg.TargetFileBytes = l.TargetFileBytes
	}
	// Its own staged batches: the worker stages into and writes through
	// the same instance.
	return &Files{store: f.store, prefix: f.prefix, cfg: &cfg, spool: f.spool, pages: f.pages, staged: map[stageKey]*stagedBatch{}}, nil
}
