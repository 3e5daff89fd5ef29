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
	Parquet      ParquetConfig     `json:"parquet"`
}

// Layout is the sink's layout as compact JSON, the same text for the same
// settings.
func (f *Files) Layout() string {
	l := FileLayout{PartitionBy: f.cfg.PartitionBy, MaxFileBytes: f.cfg.MaxFileBytes}
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
	g := *f
	g.cfg = &cfg
	return &g, nil
}
