package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/logstore/logstore/sink"
)

// TestFilesAdviceAtHundredsOfPartitions: a job over 600 partitions with
// the default max_age (5m) writes up to 7,200 files an hour; it is told,
// with the max_age that keeps it at one a second (10m). 12 partitions, a
// job without files, or one with a table alone, hear nothing.
func TestFilesAdviceAtHundredsOfPartitions(t *testing.T) {
	files := &Config{Sinks: sink.Config{Files: &sink.FilesConfig{}}, Batch: BatchConfig{MaxAge: 5 * time.Minute}}
	got := FilesAdvice(600, files)
	for _, want := range []string{"600 input partitions", "up to 7200 Parquet files an hour", "batch.max_age: 10m"} {
		if !strings.Contains(got, want) {
			t.Errorf("advice %q lacks %q", got, want)
		}
	}
	if got := FilesAdvice(12, files); got != "" {
		t.Errorf("12 partitions at 5m: %q; want no advice", got)
	}
	if got := FilesAdvice(5000, files); !strings.Contains(got, "batch.max_age: 1h24m") {
		t.Errorf("5,000 partitions: %q; want 1h24m advised", got)
	}
	kafkaOnly := &Config{Sinks: sink.Config{Kafka: &sink.KafkaOutputConfig{}}, Batch: BatchConfig{MaxAge: 5 * time.Minute}}
	if got := FilesAdvice(600, kafkaOnly); got != "" {
		t.Errorf("a job without files: %q; want no advice", got)
	}
	// A table's cycle stores one data file per table partition, whatever
	// the Kafka partitions: the table alone is not advised about.
	tableOnly := &Config{Sinks: sink.Config{Iceberg: &sink.IcebergConfig{}}, Batch: BatchConfig{MaxAge: 10 * time.Second}}
	if got := FilesAdvice(600, tableOnly); got != "" {
		t.Errorf("a job with the table alone: %q; want no advice", got)
	}
}

// TestJobSaysWhatHundredsOfPartitionsCostInFiles: a job whose input has
// 600 partitions logs at start how many files its layout writes at most
// and the max_age that keeps it at one a second; one over 12 does not.
func TestJobSaysWhatHundredsOfPartitionsCostInFiles(t *testing.T) {
	for partitions, want := range map[int32]bool{600: true, 12: false} {
		c, err := kfake.NewCluster(kfake.SeedTopics(partitions, "logs"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		cfg, err := Parse("test.yaml", []byte(fmt.Sprintf(`kafka: {brokers: [%q], topics: [logs], group: g}
rack: {providers: [static], static: az-a}
schema: {columns: [{name: n, type: int64, required: true}]}
sinks: {files: {url: %q}}
dead_letter: {on_error: skip}
`, c.ListenAddrs()[0], "file://"+t.TempDir())))
		if err != nil {
			t.Fatal(err)
		}
		var logs strings.Builder
		j, err := NewJob(context.Background(), cfg, Deps{Log: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		j.Close()
		said := strings.Contains(logs.String(), "level=WARN") && strings.Contains(logs.String(), "batch.max_age: 10m")
		if said != want {
			t.Errorf("%d partitions: advice logged %v, want %v; log:\n%s", partitions, said, want, logs.String())
		}
	}
}
