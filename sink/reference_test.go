package sink

import (
	"os"
	"reflect"
	"testing"

	"github.com/goccy/go-yaml"
)

// TestReferenceYAMLIsTheDefaults keeps reference-sinks.yaml true: it parses
// strictly (every key exists), and its values are what SetDefaults fills.
func TestReferenceYAMLIsTheDefaults(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	t.Setenv("AWS_ENDPOINT_URL", "")
	text, err := os.ReadFile("reference-sinks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Sinks Config `yaml:"sinks"`
	}
	if err := yaml.UnmarshalWithOptions(text, &doc, yaml.Strict()); err != nil {
		t.Fatal(yaml.FormatError(err, false, true))
	}
	ref := doc.Sinks
	if ref.Files == nil || ref.Kafka == nil || ref.Files.Parquet == nil || ref.Files.S3 == nil || ref.Files.File == nil {
		t.Fatalf("the reference leaves out a section: %+v", ref)
	}
	// The reference shows the URL, topic and spool folder empty and the
	// lists as []; fill and clear them as a user and the defaults do.
	ref.Files.URL, ref.Kafka.Topic, ref.Files.SpoolDir = "s3://b", "t", DefaultSpoolDir()
	if len(ref.Files.PartitionBy) == 0 && len(ref.Kafka.Brokers) == 0 {
		ref.Files.PartitionBy, ref.Kafka.Brokers = nil, nil
	}
	if ref.Iceberg == nil {
		t.Fatal("the reference leaves out sinks.iceberg")
	}
	ref.Iceberg.SpoolDir = DefaultSpoolDir()
	if len(ref.Iceberg.PartitionBy) == 0 && len(ref.Iceberg.Catalog.Properties) == 0 && len(ref.Iceberg.SortBy) == 0 {
		ref.Iceberg.PartitionBy, ref.Iceberg.Catalog.Properties, ref.Iceberg.SortBy = nil, nil, nil
	}
	ref.SetDefaults()
	def := Config{Files: &FilesConfig{URL: "s3://b"}, Kafka: &KafkaOutputConfig{Topic: "t"}, Iceberg: &IcebergConfig{}}
	def.SetDefaults()
	for _, pair := range [][2]any{
		{ref.Files.Parquet, def.Files.Parquet}, {ref.Files.S3, def.Files.S3}, {ref.Files.File, def.Files.File},
		{ref.Kafka, def.Kafka}, {ref.Iceberg, def.Iceberg}, {ref.Files.MaxFileBytes, def.Files.MaxFileBytes}, {ref.Files.TargetFileBytes, def.Files.TargetFileBytes}, {ref.Files.PartitionBy, def.Files.PartitionBy},
	} {
		if !reflect.DeepEqual(pair[0], pair[1]) {
			t.Errorf("reference-sinks.yaml says %+v, SetDefaults gives %+v", pair[0], pair[1])
		}
	}
}
