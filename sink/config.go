package sink

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/logstore/logstore/internal/confkey"
	"github.com/logstore/logstore/internal/secret"
)

// Config is the `sinks` section. At least one sink must be set.
type Config struct {
	// Files writes Parquet to an object store or a folder, by URL.
	Files *FilesConfig `yaml:"files"`
	// Kafka produces each output row to a topic.
	Kafka *KafkaOutputConfig `yaml:"kafka"`
	// Iceberg commits each batch's files to an Apache Iceberg table.
	Iceberg *IcebergConfig `yaml:"iceberg"`
	// CommitInterval is how long a member's commit cycle waits for more
	// of its partitions' batches: one table snapshot and one Kafka
	// transaction (exactly_once) per cycle. sinks.iceberg.commit_interval
	// is its older name.
	CommitInterval time.Duration `yaml:"commit_interval"`
}

// FilesConfig is `sinks.files`.
type FilesConfig struct {
	// URL is s3://bucket/prefix, file:///path or a plain path (a folder).
	URL string `yaml:"url"`
	// PartitionBy names the Hive-style folders, outermost first.
	PartitionBy []PartitionColumn `yaml:"partition_by"`
	// KeepPartitionColumns writes a column a folder holds whole (a level
	// named after its own column: FolderColumn) into the data files too,
	// as versions before it did; by default the folder alone holds it, as
	// Spark, Flink and Hive write, so readers of Hive-style folders read
	// the files with their defaults.
	KeepPartitionColumns bool `yaml:"keep_partition_columns"`
	// MaxFileBytes caps one file (and so one spool file); a folder's rows
	// beyond it go to {name}-1.parquet, {name}-2.parquet, …
	MaxFileBytes int64 `yaml:"max_file_bytes"`
	// TargetFileBytes cuts a batch once one of its files reaches it, so
	// files come out about this size whatever the memory budget.
	TargetFileBytes int64 `yaml:"target_file_bytes"`
	// SpoolDir holds files while they are written and uploaded.
	SpoolDir string         `yaml:"spool_dir"`
	Parquet  *ParquetConfig `yaml:"parquet"`
	S3       *S3Config      `yaml:"s3"`
	File     *FileConfig    `yaml:"file"`
	// SortBy orders the rows within each file (a table's sort_by); set by
	// the table, not by a files sink's config.
	SortBy []SortKey `yaml:"-"`
	// table: the data files of an Iceberg table (IcebergConfig.FilesConfig),
	// which hold every column (Iceberg's readers take a partition's source
	// column from the file) and name an empty string's folder name=, its
	// own partition value.
	table bool
}

// PartitionColumn is one Hive-style folder level: {Name}={value of Column}.
type PartitionColumn struct {
	Name   string `yaml:"name"`
	Column string `yaml:"column"`
	// Format is a Go time layout for timestamp and date columns (UTC);
	// other column types are written as their plain value.
	Format string `yaml:"format"`
}

// ParquetConfig is `sinks.files.parquet`.
type ParquetConfig struct {
	Compression string `yaml:"compression"`
	// CompressionLevel is zstd's level (1-22; 3, what Spark and parquet-mr
	// write, by default) or gzip's (1-9; 6 by default); snappy and none
	// have none.
	CompressionLevel int `yaml:"compression_level"`
	// RowGroupRows and RowGroupBytes close a row group at whichever comes
	// first. A row group is what a writer holds in memory.
	RowGroupRows  int64 `yaml:"row_group_rows"`
	RowGroupBytes int64 `yaml:"row_group_bytes"`
	PageBytes     int   `yaml:"page_bytes"`
	// Dictionary encodes string, json and map columns with a dictionary,
	// and integer columns of a few values (FewIntegers); a column whose
	// dictionary outgrows DictionaryMaxBytes falls back to
	// plain encoding for the rest of the row group.
	Dictionary         *bool `yaml:"dictionary"`
	DictionaryMaxBytes int64 `yaml:"dictionary_max_bytes"`
	// DistinctText is how a dictionary writer encodes a string or json
	// column whose first values are nearly all distinct (distinctText):
	// "delta_length" (DELTA_LENGTH_BYTE_ARRAY, no dictionary) or
	// "dictionary" (a dictionary, then PLAIN once it is full: for readers
	// before Spark 3.3). Empty, in a layout recorded by an older version,
	// is "dictionary", so a re-cut writes the bytes the first cut did.
	DistinctText string `yaml:"distinct_text" json:",omitempty"`
	// FewIntegers has a dictionary writer encode an int32 or int64 column
	// whose first values repeat (fewIntegers: a status code, the Kafka
	// partition) with a dictionary, as parquet-mr encodes every column.
	// Not a setting: true once defaulted, and false in a layout an older
	// version recorded, so a re-cut writes the bytes the first cut did.
	FewIntegers bool `yaml:"-" json:",omitempty"`
	// SortedIntegers is how a writer encodes an int32, int64, timestamp or
	// date column without a dictionary whose first values step by small
	// differences (smallSteps: times, offsets): "delta"
	// (DELTA_BINARY_PACKED) or "plain" (for readers without that
	// encoding, as Iceberg's vectorized readers before 1.10). Empty, in a
	// layout recorded by an older version, is "plain", so a re-cut writes
	// the bytes the first cut did.
	SortedIntegers string `yaml:"sorted_integers" json:",omitempty"`
	// DataPageVersion 1 is what parquet-mr, pyarrow and Spark write by
	// default, so every reader takes it.
	DataPageVersion int `yaml:"data_page_version"`
}

// S3Config is `sinks.files.s3`.
type S3Config struct {
	// Region; empty takes the SDK's chain (AWS_REGION, profile).
	Region string `yaml:"region"`
	// Endpoint for S3-compatible servers; empty takes AWS_ENDPOINT_URL_S3
	// or AWS_ENDPOINT_URL, else AWS.
	Endpoint string `yaml:"endpoint"`
	// PathStyle addresses bucket/key instead of bucket.host/key; on by
	// default when an endpoint is set.
	PathStyle *bool `yaml:"path_style"`
	// PartBytes is the multipart part size; files up to it go in one PUT.
	PartBytes int64 `yaml:"part_bytes"`
	// PartConcurrency is how many parts of one file upload at once.
	PartConcurrency int `yaml:"part_concurrency"`
	// Checksum the server verifies on every PUT and part.
	Checksum string `yaml:"checksum"`
	// SSE is none, aes256 (SSE-S3) or aws:kms (SSE-KMS).
	SSE          string `yaml:"sse"`
	KMSKeyID     string `yaml:"kms_key_id"`
	StorageClass string `yaml:"storage_class"`
	// MaxAttempts and MaxBackoff shape retries on throttling, 5xx and
	// connection errors: delays double from 1s up to MaxBackoff.
	MaxAttempts int           `yaml:"max_attempts"`
	MaxBackoff  time.Duration `yaml:"max_backoff"`
	// Preflight checks at start that the bucket exists and takes writes.
	Preflight *bool `yaml:"preflight"`
	// AccessKeyID and SecretAccessKey are static credentials, for
	// S3-compatible servers outside AWS; empty takes the SDK's chain. The
	// secret is redacted wherever the config is printed or logged.
	AccessKeyID     string        `yaml:"access_key_id"`
	SecretAccessKey secret.Secret `yaml:"secret_access_key"`
	// SessionToken goes with temporary credentials a REST catalog vends
	// for a table (s3.session-token); there is no key for it in the file.
	SessionToken secret.Secret `yaml:"-"`
	// PreflightTimeout is how long the preflight check rides out an S3
	// that does not answer (connection errors, 5xx, throttling) before the
	// start fails; a missing bucket or bad credentials fail at once.
	PreflightTimeout time.Duration `yaml:"preflight_timeout"`
}

// FileConfig is `sinks.files.file`, for file:// URLs.
type FileConfig struct {
	// Fsync flushes each file and its folder before the batch counts as
	// written; off only for tests and demos.
	Fsync *bool `yaml:"fsync"`
}

// KafkaOutputConfig is `sinks.kafka`.
type KafkaOutputConfig struct {
	Topic string `yaml:"topic"`
	// Brokers of the output cluster; empty means the input cluster.
	Brokers []string `yaml:"brokers"`
	// Key is the column whose value keys each record; empty sends no key.
	Key string `yaml:"key"`
	// Value is json (the output row) or original (the input record's bytes).
	Value       string `yaml:"value"`
	Compression string `yaml:"compression"`
	// BatchSize, BatchBytes and BatchTimeout close a produce request per
	// partition at whichever comes first.
	BatchSize    int           `yaml:"batch_size"`
	BatchBytes   int64         `yaml:"batch_bytes"`
	BatchTimeout time.Duration `yaml:"batch_timeout"`
	MaxAttempts  int           `yaml:"max_attempts"`
	WriteTimeout time.Duration `yaml:"write_timeout"`
	// Partitioner places rows without a key: rack-aware (a partition led
	// in the member's zone, KIP-1123) or sticky (any partition, KIP-794).
	// Empty: rack-aware when the member's zone matched a broker rack.
	Partitioner string `yaml:"partitioner"`
	// MetadataMaxAge is how often the producer asks for leaders without
	// an error to make it: how soon a leader back in this zone is used.
	MetadataMaxAge time.Duration `yaml:"metadata_max_age"`
	// Delivery is at_least_once (no transactions) or exactly_once (each
	// batch's rows, dead letters and next offset in one transaction).
	Delivery string `yaml:"delivery"`
	// TransactionTimeout is how long the brokers let an exactly_once
	// transaction stay open before aborting it: the longest a
	// read_committed consumer of the output, and the member taking over
	// the partitions, wait when a member dies mid-transaction.
	TransactionTimeout time.Duration `yaml:"transaction_timeout"`
	// PositionsTopic is where exactly_once keeps its own record of each
	// input partition's next offset, written in the same transactions as
	// the rows and the group's offsets: a compacted topic, so the record
	// outlives group offsets that expire or are deleted. Default
	// "<topic>.logstore-positions".
	PositionsTopic string `yaml:"positions_topic"`
	// AdoptPositionsOf is a group whose records in the positions topic
	// the job takes as its own where its group has none: the group the
	// job ran under before kafka.group was renamed. A record of another
	// group is another job's, never taken otherwise.
	AdoptPositionsOf string `yaml:"adopt_positions_of"`
}

// The allowed values of enumerated keys, in the order the docs give them.
var (
	ParquetCompressions = []string{"zstd", "snappy", "gzip", "none"}
	// The values of files.parquet.distinct_text.
	DistinctTextDeltaLength, DistinctTextDictionary = "delta_length", "dictionary"
	// The values of files.parquet.sorted_integers.
	SortedIntegersDelta, SortedIntegersPlain = "delta", "plain"
	// The compressions with levels: their default and their highest.
	defaultCompressionLevels = map[string]int{"zstd": 3, "gzip": 6}
	maxCompressionLevels     = map[string]int{"zstd": 22, "gzip": 9}
	S3Checksums              = []string{"crc32", "crc32c", "sha256", "none"}
	S3SSEModes               = []string{"none", "aes256", "aws:kms"}
	KafkaValues              = []string{"json", "original"}
	KafkaCompressions        = []string{"none", "gzip", "snappy", "lz4", "zstd"}
	KafkaPartitioners        = []string{PartitionerRackAware, PartitionerSticky}
	KafkaDeliveries          = []string{DeliveryAtLeastOnce, DeliveryExactlyOnce}
)

// The Kafka sink's guarantees (sinks.kafka.delivery).
const (
	DeliveryAtLeastOnce = "at_least_once"
	DeliveryExactlyOnce = "exactly_once"
)

// The Kafka sink's partitioners (sinks.kafka.partitioner).
const (
	PartitionerRackAware = "rack-aware"
	PartitionerSticky    = "sticky"
)

const (
	mib = 1 << 20
	// S3 refuses parts below 5 MiB except the last, and more than 10000 parts.
	minPartBytes = 5 * mib
	maxParts     = 10000
)

// DefaultSpoolDir is where files are spooled when spool_dir is not set.
func DefaultSpoolDir() string { return filepath.Join(os.TempDir(), "logstore-spool") }

// dataFileDefaults fills the data files' knobs, which the files sink and
// the table sink share.
func dataFileDefaults(maxFile, target *int64, spool *string, parquet **ParquetConfig, s3 **S3Config, file **FileConfig) {
	confkey.Default(maxFile, 512*mib)
	confkey.Default(target, 128*mib)
	confkey.Default(spool, DefaultSpoolDir())
	if *parquet == nil {
		*parquet = &ParquetConfig{}
	}
	(*parquet).setDefaults()
	if *s3 == nil {
		*s3 = &S3Config{}
	}
	(*s3).setDefaults()
	if *file == nil {
		*file = &FileConfig{}
	}
	if (*file).Fsync == nil {
		(*file).Fsync = ptr(true)
	}
}

// SetDefaults fills the zero fields.
func (c *Config) SetDefaults() {
	if f := c.Files; f != nil {
		dataFileDefaults(&f.MaxFileBytes, &f.TargetFileBytes, &f.SpoolDir, &f.Parquet, &f.S3, &f.File)
		for i := range f.PartitionBy {
			if f.PartitionBy[i].Name == "" {
				f.PartitionBy[i].Name = f.PartitionBy[i].Column
			}
		}
	}
	if k := c.Kafka; k != nil {
		k.setDefaults()
	}
	if t := c.Iceberg; t != nil {
		t.setDefaults()
		// One interval for the cycle: the table's older key sets it too.
		if c.CommitInterval == 0 {
			c.CommitInterval = t.CommitInterval
		} else if t.CommitInterval == 0 {
			t.CommitInterval = c.CommitInterval
		}
	}
}

func (p *ParquetConfig) setDefaults() {
	confkey.Default(&p.Compression, "zstd")
	confkey.Default(&p.CompressionLevel, defaultCompressionLevels[p.Compression])
	confkey.Default(&p.RowGroupRows, 1_000_000)
	confkey.Default(&p.RowGroupBytes, 64*mib)
	confkey.Default(&p.PageBytes, 128<<10)
	if p.Dictionary == nil {
		p.Dictionary = ptr(true)
	}
	confkey.Default(&p.DictionaryMaxBytes, 16<<10)
	confkey.Default(&p.DistinctText, DistinctTextDeltaLength)
	p.FewIntegers = true
	confkey.Default(&p.SortedIntegers, SortedIntegersDelta)
	confkey.Default(&p.DataPageVersion, 1)
}

func (s *S3Config) setDefaults() {
	if s.PathStyle == nil {
		s.PathStyle = ptr(s.Endpoint != "" || envEndpoint() != "")
	}
	confkey.Default(&s.PartBytes, 16*mib)
	confkey.Default(&s.PartConcurrency, 4)
	confkey.Default(&s.Checksum, "crc32")
	confkey.Default(&s.SSE, "none")
	confkey.Default(&s.StorageClass, "STANDARD")
	confkey.Default(&s.MaxAttempts, 10)
	confkey.Default(&s.MaxBackoff, 20*time.Second)
	if s.Preflight == nil {
		s.Preflight = ptr(true)
	}
	confkey.Default(&s.PreflightTimeout, 5*time.Minute)
}

func (k *KafkaOutputConfig) setDefaults() {
	confkey.Default(&k.Value, "json")
	confkey.Default(&k.Compression, "lz4")
	confkey.Default(&k.BatchSize, 10000)
	confkey.Default(&k.BatchBytes, 1*mib)
	confkey.Default(&k.BatchTimeout, 50*time.Millisecond)
	confkey.Default(&k.MaxAttempts, 10)
	confkey.Default(&k.WriteTimeout, 10*time.Second)
	confkey.Default(&k.MetadataMaxAge, 2*time.Second)
	confkey.Default(&k.Delivery, DeliveryAtLeastOnce)
	confkey.Default(&k.TransactionTimeout, time.Minute)
	if k.Topic != "" {
		confkey.Default(&k.PositionsTopic, k.Topic+".logstore-positions")
	}
}

// envEndpoint is the S3 endpoint the SDK takes from the environment.
func envEndpoint() string {
	if v := os.Getenv("AWS_ENDPOINT_URL_S3"); v != "" {
		return v
	}
	return os.Getenv("AWS_ENDPOINT_URL")
}

var topicName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,249}$`)

var partitionName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate checks the section after SetDefaults; errors name the key below
// `sinks`.
func (c *Config) Validate() error {
	if c.Files == nil && c.Kafka == nil && c.Iceberg == nil {
		return confkey.Errorf("files", "no sink configured; set sinks.files.url, sinks.kafka.topic and/or sinks.iceberg.table")
	}
	if c.CommitInterval < 0 || c.CommitInterval > time.Minute {
		return confkey.Errorf("commit_interval", "%s is outside 0s..1m", c.CommitInterval)
	}
	if t := c.Iceberg; t != nil && t.CommitInterval != c.CommitInterval {
		return confkey.Errorf("iceberg.commit_interval", "%s, and sinks.commit_interval %s: the table and the Kafka output commit in one cycle; set sinks.commit_interval alone", t.CommitInterval, c.CommitInterval)
	}
	if f := c.Files; f != nil {
		if err := f.validate(); err != nil {
			return err
		}
	}
	if k := c.Kafka; k != nil {
		if err := k.validate(); err != nil {
			return err
		}
	}
	if t := c.Iceberg; t != nil {
		if err := t.validate(); err != nil {
			return err
		}
	}
	return nil
}

func (f *FilesConfig) validate() error {
	if f.URL == "" {
		return confkey.Errorf("files.url", "required: s3://bucket/prefix, file:///path or a folder path")
	}
	if _, err := ParseURL(f.URL); err != nil {
		return confkey.Errorf("files.url", "%v", err)
	}
	seen := map[string]bool{}
	for i, p := range f.PartitionBy {
		key := fmt.Sprintf("files.partition_by[%d]", i)
		if p.Column == "" {
			return confkey.Errorf(key+".column", "required: the output column whose value names the folder")
		}
		if !partitionName.MatchString(p.Name) {
			return confkey.Errorf(key+".name", "%q is not a folder name: use letters, digits and _", p.Name)
		}
		if seen[p.Name] {
			return confkey.Errorf(key+".name", "%q appears twice", p.Name)
		}
		seen[p.Name] = true
		if p.Format != "" && strings.Contains(p.Format, "/") {
			return confkey.Errorf(key+".format", "%q would add a folder level; use one partition_by entry per level", p.Format)
		}
	}
	if f.MaxFileBytes < mib {
		return confkey.Errorf("files.max_file_bytes", "%d is below the minimum of 1 MiB (1048576)", f.MaxFileBytes)
	}
	if f.TargetFileBytes < mib || f.TargetFileBytes > f.MaxFileBytes {
		return confkey.Errorf("files.target_file_bytes", "%d must be between 1 MiB (1048576) and max_file_bytes (%d)", f.TargetFileBytes, f.MaxFileBytes)
	}
	if err := f.Parquet.validate(); err != nil {
		return err
	}
	if err := f.S3.validate(); err != nil {
		return err
	}
	return nil
}

func (p *ParquetConfig) validate() error {
	if !slices.Contains(ParquetCompressions, p.Compression) {
		return confkey.Errorf("files.parquet.compression", "%q is not one of %s", p.Compression, strings.Join(ParquetCompressions, ", "))
	}
	if top, ok := maxCompressionLevels[p.Compression]; !ok && p.CompressionLevel != 0 {
		return confkey.Errorf("files.parquet.compression_level", "%s has no levels: leave it out", p.Compression)
	} else if ok && (p.CompressionLevel < 1 || p.CompressionLevel > top) {
		return confkey.Errorf("files.parquet.compression_level", "%d is not a %s level (1-%d)", p.CompressionLevel, p.Compression, top)
	}
	if p.RowGroupRows < 1 {
		return confkey.Errorf("files.parquet.row_group_rows", "must be at least 1")
	}
	if p.RowGroupBytes < mib {
		return confkey.Errorf("files.parquet.row_group_bytes", "%d is below the minimum of 1 MiB (1048576)", p.RowGroupBytes)
	}
	if p.PageBytes < 4096 || int64(p.PageBytes) > p.RowGroupBytes {
		return confkey.Errorf("files.parquet.page_bytes", "%d must be between 4096 and row_group_bytes (%d)", p.PageBytes, p.RowGroupBytes)
	}
	if p.DictionaryMaxBytes < 0 {
		return confkey.Errorf("files.parquet.dictionary_max_bytes", "must not be negative")
	}
	if p.DistinctText != DistinctTextDeltaLength && p.DistinctText != DistinctTextDictionary {
		return confkey.Errorf("files.parquet.distinct_text", "%q is not one of %s, %s", p.DistinctText, DistinctTextDeltaLength, DistinctTextDictionary)
	}
	if p.SortedIntegers != SortedIntegersDelta && p.SortedIntegers != SortedIntegersPlain {
		return confkey.Errorf("files.parquet.sorted_integers", "%q is not one of %s, %s", p.SortedIntegers, SortedIntegersDelta, SortedIntegersPlain)
	}
	if p.DataPageVersion != 1 && p.DataPageVersion != 2 {
		return confkey.Errorf("files.parquet.data_page_version", "%d is not one of 1, 2", p.DataPageVersion)
	}
	return nil
}

func (s *S3Config) validate() error {
	if s.PartBytes < minPartBytes {
		return confkey.Errorf("files.s3.part_bytes", "%d is below S3's minimum part size of 5 MiB (5242880)", s.PartBytes)
	}
	if s.PartBytes > 5<<30 {
		return confkey.Errorf("files.s3.part_bytes", "%d is above S3's maximum part size of 5 GiB", s.PartBytes)
	}
	if s.PartConcurrency < 1 {
		return confkey.Errorf("files.s3.part_concurrency", "must be at least 1")
	}
	if !slices.Contains(S3Checksums, s.Checksum) {
		return confkey.Errorf("files.s3.checksum", "%q is not one of %s", s.Checksum, strings.Join(S3Checksums, ", "))
	}
	if !slices.Contains(S3SSEModes, s.SSE) {
		return confkey.Errorf("files.s3.sse", "%q is not one of %s", s.SSE, strings.Join(S3SSEModes, ", "))
	}
	if s.KMSKeyID != "" && s.SSE != "aws:kms" {
		return confkey.Errorf("files.s3.kms_key_id", "set only with sse: aws:kms")
	}
	if s.MaxAttempts < 1 {
		return confkey.Errorf("files.s3.max_attempts", "must be at least 1")
	}
	if s.MaxBackoff < time.Second {
		return confkey.Errorf("files.s3.max_backoff", "%s is below the minimum of 1s", s.MaxBackoff)
	}
	if (s.AccessKeyID == "") != (s.SecretAccessKey == "") {
		return confkey.Errorf("files.s3.secret_access_key", "set access_key_id and secret_access_key together (e.g. secret_access_key: ${file:/run/secrets/s3-secret-key}), or neither to use the AWS SDK's credential chain")
	}
	if s.PreflightTimeout < 0 {
		return confkey.Errorf("files.s3.preflight_timeout", "%s is negative", s.PreflightTimeout)
	}
	return nil
}

func (k *KafkaOutputConfig) validate() error {
	if k.Topic == "" {
		return confkey.Errorf("kafka.topic", "required: the topic to produce to")
	}
	if !slices.Contains(KafkaValues, k.Value) {
		return confkey.Errorf("kafka.value", "%q is not one of %s", k.Value, strings.Join(KafkaValues, ", "))
	}
	if !slices.Contains(KafkaCompressions, k.Compression) {
		return confkey.Errorf("kafka.compression", "%q is not one of %s", k.Compression, strings.Join(KafkaCompressions, ", "))
	}
	if k.BatchSize < 1 {
		return confkey.Errorf("kafka.batch_size", "must be at least 1")
	}
	if k.BatchBytes < 1024 {
		return confkey.Errorf("kafka.batch_bytes", "%d is below the minimum of 1024", k.BatchBytes)
	}
	if k.BatchTimeout < time.Millisecond {
		return confkey.Errorf("kafka.batch_timeout", "%s is below the minimum of 1ms", k.BatchTimeout)
	}
	if k.MaxAttempts < 1 {
		return confkey.Errorf("kafka.max_attempts", "must be at least 1")
	}
	if k.WriteTimeout < time.Second {
		return confkey.Errorf("kafka.write_timeout", "%s is below the minimum of 1s", k.WriteTimeout)
	}
	if k.Partitioner != "" && !slices.Contains(KafkaPartitioners, k.Partitioner) {
		return confkey.Errorf("kafka.partitioner", "%q is not one of %s", k.Partitioner, strings.Join(KafkaPartitioners, ", "))
	}
	if k.MetadataMaxAge < 100*time.Millisecond {
		return confkey.Errorf("kafka.metadata_max_age", "%s is below the minimum of 100ms", k.MetadataMaxAge)
	}
	if !slices.Contains(KafkaDeliveries, k.Delivery) {
		return confkey.Errorf("kafka.delivery", "%q is not one of %s", k.Delivery, strings.Join(KafkaDeliveries, ", "))
	}
	if k.Delivery == DeliveryExactlyOnce && len(k.Brokers) > 0 {
		return confkey.Errorf("kafka.brokers", "exactly_once commits the group's offsets in the output's transactions, so the output must be the input cluster: "+
			"leave sinks.kafka.brokers empty, or set sinks.kafka.delivery: at_least_once")
	}
	// The brokers' transaction.max.timeout.ms is 15 minutes by default; a
	// transaction must outlast one produce with its retries.
	if k.TransactionTimeout < time.Second || k.TransactionTimeout > 15*time.Minute {
		return confkey.Errorf("kafka.transaction_timeout", "%s is outside 1s to 15m (the brokers' transaction.max.timeout.ms by default)", k.TransactionTimeout)
	}
	if k.PositionsTopic != "" && !topicName.MatchString(k.PositionsTopic) {
		return confkey.Errorf("kafka.positions_topic", "%q is not a Kafka topic name (at most 249 of the characters a-z A-Z 0-9 . _ -)", k.PositionsTopic)
	}
	if k.PositionsTopic == k.Topic {
		return confkey.Errorf("kafka.positions_topic", "%q is the output topic itself: name another topic", k.PositionsTopic)
	}
	if k.AdoptPositionsOf != "" && k.Delivery != DeliveryExactlyOnce {
		return confkey.Errorf("kafka.adopt_positions_of", "the positions topic is exactly_once's: set sinks.kafka.delivery: exactly_once, or remove the key")
	}
	return nil
}

// CheckSchema checks the keys that name output columns against the schema
// the pipeline writes; the loader calls it once both sections are known.
func (c *Config) CheckSchema(s *Schema) error {
	if f := c.Files; f != nil {
		for i, p := range f.PartitionBy {
			key := fmt.Sprintf("files.partition_by[%d]", i)
			j := s.Index(p.Column)
			if j < 0 {
				return confkey.Errorf(key+".column", "%q is not an output column", p.Column)
			}
			switch t := s.Fields[j].Type; t {
			case Timestamp, Date:
			case String, Int32, Int64, Bool:
				if p.Format != "" {
					return confkey.Errorf(key+".format", "column %q is %s; format applies to timestamp and date columns only", p.Column, t)
				}
			default:
				return confkey.Errorf(key+".column", "column %q is %s; partition by a string, integer, bool, timestamp or date column", p.Column, t)
			}
		}
		if err := CheckFolderNames("files.partition_by", f.PartitionBy, s, f.KeepPartitionColumns); err != nil {
			return err
		}
	}
	if k := c.Kafka; k != nil && k.Key != "" {
		if s.Index(k.Key) < 0 {
			return confkey.Errorf("kafka.key", "%q is not an output column", k.Key)
		}
	}
	if t := c.Iceberg; t != nil {
		return t.checkSchema(s)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }
