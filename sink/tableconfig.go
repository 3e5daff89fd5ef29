package sink

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/logstore/logstore/internal/confkey"
	"github.com/logstore/logstore/internal/secret"
)

// IcebergConfig is `sinks.iceberg`: the batch's Parquet files, written as
// the files sink writes them, below the table's location, then committed
// to an Apache Iceberg table (package sink/iceberg).
type IcebergConfig struct {
	// Table is namespace.name; a dotted namespace names a nested one.
	Table   string         `yaml:"table"`
	Catalog IcebergCatalog `yaml:"catalog"`
	// PartitionBy is the table's partition spec, used when the table is
	// created and checked against an existing one.
	PartitionBy []TablePartition `yaml:"partition_by"`
	// SortBy is the order of the rows within each data file, recorded as
	// the table's sort order; none leaves them in offset order.
	SortBy []TableSort `yaml:"sort_by"`
	// CommitInterval is how long a member's commit waits for more of its
	// partitions' batches to commit with, in one snapshot; 0 commits at
	// once what is waiting.
	CommitInterval time.Duration `yaml:"commit_interval"`
	// Upkeep is the table's snapshot expiry and orphan-file removal, done
	// by the job itself (one member at a time) or by `logstore table
	// upkeep` from a CronJob.
	Upkeep          TableUpkeep    `yaml:"upkeep"`
	TargetFileBytes int64          `yaml:"target_file_bytes"`
	MaxFileBytes    int64          `yaml:"max_file_bytes"`
	SpoolDir        string         `yaml:"spool_dir"`
	Parquet         *ParquetConfig `yaml:"parquet"`
	// S3 is for data files and, through the same endpoint and
	// credentials, for the table's metadata files.
	S3   *S3Config   `yaml:"s3"`
	File *FileConfig `yaml:"file"`
}

// TableUpkeep is `sinks.iceberg.upkeep`.
type TableUpkeep struct {
	// Interval is how often the job does it; 0 never (a CronJob runs
	// `logstore table upkeep` instead). Unset: 1h.
	Interval *time.Duration `yaml:"interval"`
	// SnapshotMaxAge: snapshots older are expired, and the files only
	// they reference deleted; RetainLast newest are kept whatever their
	// age.
	SnapshotMaxAge time.Duration `yaml:"snapshot_max_age"`
	RetainLast     int           `yaml:"retain_last"`
	// OrphanMinAge: files below the table's location that no snapshot
	// references and older than this are deleted (a killed write's data
	// files); 0 keeps them. Younger files may belong to a commit under way.
	// Unset: 24h.
	OrphanMinAge *time.Duration `yaml:"orphan_min_age"`
}

// IcebergCatalog is `sinks.iceberg.catalog`.
type IcebergCatalog struct {
	// Type is sql (a SQLite file), rest or glue.
	Type string `yaml:"type"`
	// Name is the catalog's name: the SQL catalog's catalog_name column,
	// which other readers of the same file must use too.
	Name string `yaml:"name"`
	// URI is the SQLite file (sql) or the endpoint (rest).
	URI string `yaml:"uri"`
	// Warehouse is where new tables go (sql: a URL such as
	// s3://bucket/warehouse; rest: what the server takes).
	Warehouse string `yaml:"warehouse"`
	// Credential is the REST catalog's OAuth2 client_id:client_secret;
	// Token a bearer token instead.
	Credential secret.Secret `yaml:"credential"`
	Token      secret.Secret `yaml:"token"`
	// Properties are passed to iceberg-go's catalog as they are (e.g.
	// rest.sigv4-enabled, glue.region).
	Properties map[string]string `yaml:"properties"`
}

// TablePartition is one field of the table's partition spec.
type TablePartition struct {
	Column string `yaml:"column"`
	// Transform is identity, year, month, day or hour (the last four on a
	// timestamp or date column).
	Transform string `yaml:"transform"`
}

// TableSort is one column of the table's sort order.
type TableSort struct {
	Column string `yaml:"column"`
	// Direction is asc or desc.
	Direction string `yaml:"direction"`
	// Nulls is first or last; unset, Iceberg's default for the direction
	// (first for asc, last for desc).
	Nulls string `yaml:"nulls"`
}

// The table's catalog kinds, partition transforms and sort settings.
var (
	CatalogTypes        = []string{"sql", "rest", "glue"}
	PartitionTransforms = []string{"identity", "year", "month", "day", "hour"}
	SortDirections      = []string{"asc", "desc"}
	SortNulls           = []string{"first", "last"}
)

// TableFolderFormats are the folder texts of the time transforms: each names
// exactly one value of its transform, so a file's folder gives its
// partition value back (ParseTablePartition).
var TableFolderFormats = map[string]string{"year": "2006", "month": "2006-01", "day": "2006-01-02", "hour": "2006-01-02-15"}

func (c *IcebergConfig) setDefaults() {
	confkey.Default(&c.Catalog.Type, "sql")
	confkey.Default(&c.Catalog.Name, "logstore")
	if c.Upkeep.Interval == nil {
		c.Upkeep.Interval = new(time.Hour)
	}
	confkey.Default(&c.Upkeep.SnapshotMaxAge, 6*time.Hour)
	confkey.Default(&c.Upkeep.RetainLast, 10)
	if c.Upkeep.OrphanMinAge == nil {
		c.Upkeep.OrphanMinAge = new(24 * time.Hour)
	}
	// A table's readers are engines with vectorized Parquet readers of
	// their own; Iceberg's read DELTA_LENGTH_BYTE_ARRAY only since 2026
	// (apache/iceberg#15362) and DELTA_BINARY_PACKED since 1.10
	// (apache/iceberg#13391), so a table's distinct text keeps its
	// dictionary and its sorted integers stay PLAIN unless asked
	// (sinks.iceberg.parquet.distinct_text, sorted_integers).
	if c.Parquet == nil {
		c.Parquet = &ParquetConfig{}
	}
	confkey.Default(&c.Parquet.DistinctText, DistinctTextDictionary)
	confkey.Default(&c.Parquet.SortedIntegers, SortedIntegersPlain)
	dataFileDefaults(&c.MaxFileBytes, &c.TargetFileBytes, &c.SpoolDir, &c.Parquet, &c.S3, &c.File)
	for i := range c.PartitionBy {
		confkey.Default(&c.PartitionBy[i].Transform, "identity")
	}
	for i := range c.SortBy {
		s := &c.SortBy[i]
		confkey.Default(&s.Direction, "asc")
		confkey.Default(&s.Nulls, map[string]string{"desc": "last"}[s.Direction])
		confkey.Default(&s.Nulls, "first")
	}
}

var tableIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$`)

func (c *IcebergConfig) validate() error {
	if !tableIdent.MatchString(c.Table) {
		return confkey.Errorf("iceberg.table", "%q is not namespace.name (letters, digits and _, e.g. logs.raw)", c.Table)
	}
	if err := confkey.OneOf("iceberg.catalog.type", c.Catalog.Type, CatalogTypes...); err != nil {
		return err
	}
	switch c.Catalog.Type {
	case "sql":
		if c.Catalog.URI == "" {
			return confkey.Errorf("iceberg.catalog.uri", "required for the sql catalog: the SQLite file, e.g. /var/lib/logstore/catalog.db")
		}
		if c.Catalog.Warehouse == "" {
			return confkey.Errorf("iceberg.catalog.warehouse", "required for the sql catalog: where tables go, e.g. s3://bucket/warehouse")
		}
		if _, err := ParseURL(c.Catalog.Warehouse); err != nil {
			return confkey.Errorf("iceberg.catalog.warehouse", "%v", err)
		}
	case "rest":
		if !strings.HasPrefix(c.Catalog.URI, "http://") && !strings.HasPrefix(c.Catalog.URI, "https://") {
			return confkey.Errorf("iceberg.catalog.uri", "%q: the rest catalog needs its http(s):// endpoint", c.Catalog.URI)
		}
	}
	if c.Catalog.Type != "rest" && (c.Catalog.Credential != "" || c.Catalog.Token != "") {
		return confkey.Errorf("iceberg.catalog.credential", "credential and token are for the rest catalog; the %s catalog takes the AWS chain or properties", c.Catalog.Type)
	}
	if c.CommitInterval < 0 || c.CommitInterval > time.Minute {
		return confkey.Errorf("iceberg.commit_interval", "%s is outside 0s..1m", c.CommitInterval)
	}
	u := c.Upkeep
	switch every := *u.Interval; {
	case every < 0:
		return confkey.Errorf("iceberg.upkeep.interval", "%s is negative; 0s turns the job's upkeep off", every)
	case every > 0 && every < time.Minute:
		return confkey.Errorf("iceberg.upkeep.interval", "%s is under 1m: each upkeep reads every manifest and lists the table's files; use 1m or more, or 0s for none", every)
	case u.SnapshotMaxAge < 0:
		return confkey.Errorf("iceberg.upkeep.snapshot_max_age", "%s is negative", u.SnapshotMaxAge)
	case u.RetainLast < 1:
		return confkey.Errorf("iceberg.upkeep.retain_last", "%d: at least 1 (the current snapshot)", u.RetainLast)
	case *u.OrphanMinAge < 0 || (*u.OrphanMinAge > 0 && *u.OrphanMinAge < time.Hour):
		return confkey.Errorf("iceberg.upkeep.orphan_min_age", "%s: 0s (keep orphans) or 1h or more, so that a commit under way never loses its files", *u.OrphanMinAge)
	}
	seen := map[string]bool{}
	for i, p := range c.PartitionBy {
		key := fmt.Sprintf("iceberg.partition_by[%d]", i)
		if p.Column == "" {
			return confkey.Errorf(key+".column", "required: the output column to partition by")
		}
		if err := confkey.OneOf(key+".transform", p.Transform, PartitionTransforms...); err != nil {
			return err
		}
		if seen[p.Column+"/"+p.Transform] {
			return confkey.Errorf(key, "%s(%s) appears twice", p.Transform, p.Column)
		}
		seen[p.Column+"/"+p.Transform] = true
	}
	sorted := map[string]bool{}
	for i, s := range c.SortBy {
		key := fmt.Sprintf("iceberg.sort_by[%d]", i)
		if s.Column == "" {
			return confkey.Errorf(key+".column", "required: the output column to sort each data file's rows by")
		}
		if err := confkey.OneOf(key+".direction", s.Direction, SortDirections...); err != nil {
			return err
		}
		if err := confkey.OneOf(key+".nulls", s.Nulls, SortNulls...); err != nil {
			return err
		}
		if sorted[s.Column] {
			return confkey.Errorf(key+".column", "%q appears twice; a column sorts once", s.Column)
		}
		sorted[s.Column] = true
	}
	// The data files' own knobs are the files sink's, checked as they are.
	files := c.FilesConfig("s3://bucket/table/data")
	if err := files.validate(); err != nil {
		var ke *confkey.Error
		if errors.As(err, &ke) && strings.HasPrefix(ke.Key, "files.") {
			return confkey.Errorf("iceberg."+strings.TrimPrefix(ke.Key, "files."), "%s", ke.Msg)
		}
		return err
	}
	return nil
}

// FilesConfig is the files sink that writes the table's data files below
// url: a folder per partition, named so that the folder gives the
// partition's value back.
func (c *IcebergConfig) FilesConfig(url string) *FilesConfig {
	return &FilesConfig{
		URL: url, PartitionBy: c.folders(), MaxFileBytes: c.MaxFileBytes, TargetFileBytes: c.TargetFileBytes,
		SpoolDir: c.SpoolDir, Parquet: c.Parquet, S3: c.S3, File: c.File, SortBy: c.sortKeys(),
		KeepPartitionColumns: true, table: true,
	}
}

func (c *IcebergConfig) sortKeys() []SortKey {
	var keys []SortKey
	for _, s := range c.SortBy {
		keys = append(keys, SortKey{Column: s.Column, Descending: s.Direction == "desc", NullsFirst: s.Nulls == "first"})
	}
	return keys
}

func (c *IcebergConfig) folders() []PartitionColumn {
	var by []PartitionColumn
	for _, p := range c.PartitionBy {
		if p.Transform == "identity" {
			by = append(by, PartitionColumn{Name: p.Column, Column: p.Column})
			continue
		}
		by = append(by, PartitionColumn{Name: p.Column + "_" + p.Transform, Column: p.Column, Format: TableFolderFormats[p.Transform]})
	}
	return by
}

// checkSchema checks partition_by and sort_by against the output columns.
func (c *IcebergConfig) checkSchema(s *Schema) error {
	for i, o := range c.SortBy {
		key := fmt.Sprintf("iceberg.sort_by[%d].column", i)
		j := s.Index(o.Column)
		if j < 0 {
			return confkey.Errorf(key, "%q is not an output column", o.Column)
		}
		if t := s.Fields[j].Type; t == StringMap {
			return confkey.Errorf(key, "column %q is a %s, which has no order; sort by a string, number, bool, timestamp or date column", o.Column, t)
		}
	}
	for i, p := range c.PartitionBy {
		key := fmt.Sprintf("iceberg.partition_by[%d]", i)
		j := s.Index(p.Column)
		if j < 0 {
			return confkey.Errorf(key+".column", "%q is not an output column", p.Column)
		}
		t := s.Fields[j].Type
		switch {
		case p.Transform != "identity" && t != Timestamp && t != Date:
			return confkey.Errorf(key+".transform", "%s needs a timestamp or date column; %q is %s (use identity)", p.Transform, p.Column, t)
		case p.Transform == "hour" && t == Date:
			return confkey.Errorf(key+".transform", "hour needs a timestamp column; %q is a date", p.Column)
		case p.Transform == "identity" && !slices.Contains([]Type{String, Int32, Int64, Bool, Date}, t):
			return confkey.Errorf(key+".column", "column %q is %s; identity partitions take string, integer, bool or date columns", p.Column, t)
		}
	}
	return nil
}
