package sink

import (
	"errors"
	"testing"
	"time"

	"github.com/logstore/logstore/internal/confkey"
)

func TestConfigDefaults(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	t.Setenv("AWS_ENDPOINT_URL", "")
	c := Config{Files: &FilesConfig{URL: "s3://b/p", PartitionBy: []PartitionColumn{{Column: "dt"}}}, Kafka: &KafkaOutputConfig{Topic: "out"}}
	c.SetDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	f := c.Files
	if f.Parquet.Compression != "zstd" || f.S3.PartBytes != 16<<20 || *f.S3.PathStyle || !*f.S3.Preflight || f.SpoolDir != DefaultSpoolDir() || f.PartitionBy[0].Name != "dt" {
		t.Errorf("files defaults: %+v %+v %+v", f, f.Parquet, f.S3)
	}
	if c.Kafka.BatchTimeout != 50*time.Millisecond || c.Kafka.Value != "json" {
		t.Errorf("kafka defaults: %+v", c.Kafka)
	}

	// Path-style addressing follows an endpoint, from config or environment.
	c = Config{Files: &FilesConfig{URL: "s3://b", S3: &S3Config{Endpoint: "http://127.0.0.1:7070"}}}
	c.SetDefaults()
	if !*c.Files.S3.PathStyle {
		t.Error("path_style is off with an endpoint set")
	}
	t.Setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:7070")
	c = Config{Files: &FilesConfig{URL: "s3://b"}}
	c.SetDefaults()
	if !*c.Files.S3.PathStyle {
		t.Error("path_style is off with AWS_ENDPOINT_URL_S3 set")
	}
}

func TestConfigValidateNamesTheKey(t *testing.T) {
	for _, tc := range []struct {
		key string
		set func(*Config)
	}{
		{"files", func(c *Config) { c.Files, c.Kafka = nil, nil }},
		{"files.url", func(c *Config) { c.Files.URL = "gs://x" }},
		{"files.partition_by[0].column", func(c *Config) { c.Files.PartitionBy = []PartitionColumn{{Name: "dt"}} }},
		{"files.partition_by[1].name", func(c *Config) {
			c.Files.PartitionBy = []PartitionColumn{{Name: "dt", Column: "a"}, {Name: "d-t", Column: "a"}}
		}},
		{"files.parquet.compression", func(c *Config) { c.Files.Parquet.Compression = "lzo" }},
		{"files.parquet.compression_level", func(c *Config) { c.Files.Parquet.CompressionLevel = 23 }},
		{"files.parquet.compression_level", func(c *Config) { c.Files.Parquet.Compression = "snappy" }},
		{"files.parquet.compression_level", func(c *Config) { c.Files.Parquet.Compression, c.Files.Parquet.CompressionLevel = "gzip", 10 }},
		{"files.parquet.data_page_version", func(c *Config) { c.Files.Parquet.DataPageVersion = 3 }},
		{"files.parquet.distinct_text", func(c *Config) { c.Files.Parquet.DistinctText = "delta" }},
		{"files.parquet.sorted_integers", func(c *Config) { c.Files.Parquet.SortedIntegers = "delta_binary_packed" }},
		{"files.s3.part_bytes", func(c *Config) { c.Files.S3.PartBytes = 1 << 20 }},
		{"files.s3.checksum", func(c *Config) { c.Files.S3.Checksum = "md5" }},
		{"files.s3.sse", func(c *Config) { c.Files.S3.SSE = "kms" }},
		{"files.s3.kms_key_id", func(c *Config) { c.Files.S3.KMSKeyID = "k" }},
		{"kafka.topic", func(c *Config) { c.Kafka.Topic = "" }},
		{"kafka.value", func(c *Config) { c.Kafka.Value = "avro" }},
		{"kafka.compression", func(c *Config) { c.Kafka.Compression = "brotli" }},
		{"kafka.partitioner", func(c *Config) { c.Kafka.Partitioner = "round-robin" }},
		{"kafka.metadata_max_age", func(c *Config) { c.Kafka.MetadataMaxAge = time.Millisecond }},
		{"kafka.delivery", func(c *Config) { c.Kafka.Delivery = "exactly-once" }},
		// Transactions cannot span clusters: the group's offsets are on the input's.
		{"kafka.brokers", func(c *Config) { c.Kafka.Delivery = DeliveryExactlyOnce; c.Kafka.Brokers = []string{"other:9092"} }},
		{"kafka.transaction_timeout", func(c *Config) { c.Kafka.TransactionTimeout = 16 * time.Minute }},
		{"kafka.transaction_timeout", func(c *Config) { c.Kafka.TransactionTimeout = time.Millisecond }},
	} {
		c := Config{Files: &FilesConfig{URL: "file:///tmp/x"}, Kafka: &KafkaOutputConfig{Topic: "t"}}
		c.SetDefaults()
		tc.set(&c)
		err := c.Validate()
		var ke *confkey.Error
		if !errors.As(err, &ke) || ke.Key != tc.key {
			t.Errorf("%s: Validate() = %v", tc.key, err)
		}
	}
}

func TestConfigCheckSchema(t *testing.T) {
	c := Config{Files: &FilesConfig{URL: "file:///x", PartitionBy: []PartitionColumn{{Name: "s", Column: "service", Format: "2006"}}}}
	err := c.CheckSchema(layoutSchema)
	var ke *confkey.Error
	if !errors.As(err, &ke) || ke.Key != "files.partition_by[0].format" {
		t.Errorf("CheckSchema = %v", err)
	}
	c.Files.PartitionBy[0].Format = ""
	if err := c.CheckSchema(layoutSchema); err != nil {
		t.Error(err)
	}
	c.Kafka = &KafkaOutputConfig{Topic: "t", Key: "nope"}
	if err := c.CheckSchema(layoutSchema); !errors.As(err, &ke) || ke.Key != "kafka.key" {
		t.Errorf("CheckSchema = %v", err)
	}
}
