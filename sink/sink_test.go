package sink

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/logstore/logstore/internal/confkey"
)

func TestNewBuildsAndChecksTheSinks(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := t.TempDir()
	deps := Deps{KafkaBrokers: c.ListenAddrs(), Schema: logSchema}
	cfg := Config{
		Files: &FilesConfig{URL: out, SpoolDir: t.TempDir(), PartitionBy: []PartitionColumn{{Name: "dt", Column: "event_time"}}},
		Kafka: &KafkaOutputConfig{Topic: "out", Key: "service"},
	}
	s, err := New(ctx, cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.All()) != 2 || s.Files == nil || s.Kafka == nil {
		t.Fatalf("New built %+v", s)
	}
	if err := s.Write(ctx, kafkaBatch()); err != nil {
		t.Fatal(err)
	}
	if got := listFiles(t, out); len(got) != 1 || got[0] != "dt=2026-11-29/in-7-100-160.parquet" {
		t.Errorf("files %v", got)
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}

	// Mistakes fail in New, naming what to fix.
	cfg.Kafka = &KafkaOutputConfig{Topic: "missing"}
	if _, err := New(ctx, cfg, deps); err == nil || !strings.Contains(err.Error(), `"missing"`) {
		t.Errorf("New with a missing topic = %v", err)
	}
	cfg.Kafka = &KafkaOutputConfig{Topic: "out", Key: "nope"}
	var ke *confkey.Error
	if _, err := New(ctx, cfg, deps); !errors.As(err, &ke) || ke.Key != "kafka.key" {
		t.Errorf("New with an unknown key column = %v", err)
	}
}
