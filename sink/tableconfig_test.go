package sink

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/logstore/logstore/internal/confkey"
)

// TestTableUpkeepValidateNamesTheKey: an upkeep that could not work, or
// could delete a commit's files under way, stops the start at its key.
func TestTableUpkeepValidateNamesTheKey(t *testing.T) {
	for _, tc := range []struct {
		key string
		set func(*TableUpkeep)
	}{
		{"iceberg.upkeep.interval", func(u *TableUpkeep) { u.Interval = new(10 * time.Second) }},
		{"iceberg.upkeep.interval", func(u *TableUpkeep) { u.Interval = new(-time.Second) }},
		{"iceberg.upkeep.retain_last", func(u *TableUpkeep) { u.RetainLast = -1 }},
		{"iceberg.upkeep.snapshot_max_age", func(u *TableUpkeep) { u.SnapshotMaxAge = -time.Hour }},
		{"iceberg.upkeep.orphan_min_age", func(u *TableUpkeep) { u.OrphanMinAge = new(10 * time.Minute) }},
	} {
		c := Config{Iceberg: &IcebergConfig{Table: "logs.raw", Catalog: IcebergCatalog{URI: "/tmp/c.db", Warehouse: "file:///tmp/w"}}}
		c.SetDefaults()
		tc.set(&c.Iceberg.Upkeep)
		err := c.Validate()
		var ke *confkey.Error
		if !errors.As(err, &ke) || ke.Key != tc.key {
			t.Errorf("%s: Validate() = %v", tc.key, err)
		}
	}
	// Off is allowed: a CronJob runs `logstore table upkeep`.
	c := Config{Iceberg: &IcebergConfig{Table: "logs.raw", Catalog: IcebergCatalog{URI: "/tmp/c.db", Warehouse: "file:///tmp/w"}, Upkeep: TableUpkeep{Interval: new(time.Duration(0))}}}
	c.SetDefaults()
	if err := c.Validate(); err != nil || *c.Iceberg.Upkeep.Interval != 0 || *c.Iceberg.Upkeep.OrphanMinAge != 24*time.Hour {
		t.Errorf("interval 0s: %v, %+v", err, c.Iceberg.Upkeep)
	}
}

// TestTableSortByNamesAnOrderedColumn: sort_by names an output column
// with an order; anything else stops the start at its key.
func TestTableSortByNamesAnOrderedColumn(t *testing.T) {
	s := &Schema{Fields: []Field{{Name: "service", Type: String}, {Name: "labels", Type: StringMap}}}
	for _, tc := range []struct {
		column, msg string
	}{
		{"svc", `"svc" is not an output column`},
		{"labels", "has no order"},
	} {
		c := Config{Iceberg: &IcebergConfig{Table: "logs.raw", Catalog: IcebergCatalog{URI: "/tmp/c.db", Warehouse: "file:///tmp/w"}, SortBy: []TableSort{{Column: tc.column}}}}
		c.SetDefaults()
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		err := c.CheckSchema(s)
		var ke *confkey.Error
		if !errors.As(err, &ke) || ke.Key != "iceberg.sort_by[0].column" || !strings.Contains(ke.Msg, tc.msg) {
			t.Errorf("%s: CheckSchema() = %v", tc.column, err)
		}
	}
	c := Config{Iceberg: &IcebergConfig{Table: "logs.raw", Catalog: IcebergCatalog{URI: "/tmp/c.db", Warehouse: "file:///tmp/w"},
		SortBy: []TableSort{{Column: "service", Direction: "desc"}}}}
	c.SetDefaults()
	if err := c.CheckSchema(s); err != nil {
		t.Fatal(err)
	}
	if keys := c.Iceberg.FilesConfig("file:///t").SortBy; len(keys) != 1 || !keys[0].Descending || keys[0].NullsFirst {
		t.Errorf("the data files sort by %+v, want service desc nulls last", keys)
	}
}

// TestTableKeepsEncodingsOlderReadersTake: the files sink writes nearly
// distinct text DELTA_LENGTH_BYTE_ARRAY and sorted integers
// DELTA_BINARY_PACKED by default; a table keeps the dictionary and PLAIN
// its engines' vectorized readers take (Iceberg's read the first only
// since 2026, the second since 1.10); either is the user's to choose.
func TestTableKeepsEncodingsOlderReadersTake(t *testing.T) {
	for _, k := range []struct {
		key          string
		of           func(*ParquetConfig) *string
		files, table string
	}{
		{"distinct_text", func(p *ParquetConfig) *string { return &p.DistinctText }, DistinctTextDeltaLength, DistinctTextDictionary},
		{"sorted_integers", func(p *ParquetConfig) *string { return &p.SortedIntegers }, SortedIntegersDelta, SortedIntegersPlain},
	} {
		files := Config{Files: &FilesConfig{URL: "file:///x"}, Iceberg: &IcebergConfig{Table: "logs.raw"}}
		files.SetDefaults()
		if got := *k.of(files.Files.Parquet); got != k.files {
			t.Errorf("sinks.files.parquet.%s defaults to %q, want %q", k.key, got, k.files)
		}
		if got := *k.of(files.Iceberg.Parquet); got != k.table {
			t.Errorf("sinks.iceberg.parquet.%s defaults to %q, want %q", k.key, got, k.table)
		}
		asked := Config{Iceberg: &IcebergConfig{Table: "logs.raw", Parquet: &ParquetConfig{}}}
		*k.of(asked.Iceberg.Parquet) = k.files
		asked.SetDefaults()
		if got := *k.of(asked.Iceberg.Parquet); got != k.files {
			t.Errorf("sinks.iceberg.parquet.%s: %s became %q", k.key, k.files, got)
		}
	}
}
