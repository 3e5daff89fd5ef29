package main

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/logstore/logstore/internal/loggen"
	"github.com/logstore/logstore/pipeline"
	"github.com/logstore/logstore/sink"
)

func init() {
	register("demo", "zero setup: embedded Kafka, realistic logs, the real pipeline → ./logstore-demo/", runDemo)
}

//go:embed demo.yaml
var demoConfig []byte

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("demo", "[--records N] [--output URL]", stderr)
	records := fs.Int("records", 300_000, "log records to produce")
	partitions := fs.Int("partitions", 6, "partitions of the demo topic")
	output := fs.String("output", "logstore-demo", "where the Parquet goes: a folder, file:///path or s3://bucket/prefix (endpoint from AWS_ENDPOINT_URL_S3)")
	badEvery := fs.Int("bad-every", 100, "make every N-th record malformed (0: none)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	loc, err := sink.ParseURL(*output)
	if err != nil {
		return usageError{err.Error()}
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(int32(*partitions), "logs"))
	if err != nil {
		return fmt.Errorf("starting the embedded Kafka: %w", err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	fmt.Fprintf(stdout, "demo: embedded Kafka at %s; producing %d logs (1 in %d malformed)…\n", strings.Join(brokers, ","), *records, *badEvery)
	start := time.Now()
	if err := produceDemoLogs(ctx, brokers, *records, *badEvery); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "demo: produced in %s; running the pipeline with --until now into %s\n", time.Since(start).Round(time.Millisecond), loc)
	fmt.Fprintln(stdout, "demo: the embedded Kafka has no zones, so this run reads rack-blind; scripts/kafka-cluster.sh runs three brokers in three racks to see zone-local reads")

	os.Setenv("LOGSTORE_DEMO_BROKERS", strings.Join(brokers, ","))
	os.Setenv("LOGSTORE_DEMO_OUTPUT", loc.String())
	cfg, err := pipeline.Parse("demo.yaml (embedded)", demoConfig)
	if err != nil {
		return err
	}
	log := newLogger(cfg.Log, stderr)
	if err := runJob(ctx, cfg, pipeline.Mode{UntilNow: true}, pipeline.Deps{Log: log}, stdout, stderr); err != nil {
		return err
	}
	if loc.Scheme == "file" {
		n, size := countFiles(loc.Dir)
		fmt.Fprintf(stdout, "  files            %d Parquet files, %.1f MiB, under %s\n", n, float64(size)/(1<<20), loc.Dir)
	}
	return nil
}

// produceDemoLogs writes realistic logs, some malformed, spread by key.
func produceDemoLogs(ctx context.Context, brokers []string, n, badEvery int) error {
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: "logs", Balancer: &kafka.Hash{}, BatchSize: 5000, BatchTimeout: 5 * time.Millisecond, RequiredAcks: kafka.RequireAll}
	defer w.Close()
	gen := loggen.New(42, time.Now().Add(-2*time.Hour), 2*time.Hour/time.Duration(max(n, 1)))
	gen.BadEvery = badEvery
	batch := make([]kafka.Message, 0, 5000)
	for i := 0; i < n; i++ {
		key, value, at := gen.Next()
		batch = append(batch, kafka.Message{Key: append([]byte(nil), key...), Value: append([]byte(nil), value...), Time: at})
		if len(batch) == cap(batch) || i == n-1 {
			if err := w.WriteMessages(ctx, batch...); err != nil {
				return fmt.Errorf("producing demo logs: %w", err)
			}
			batch = batch[:0]
		}
	}
	return nil
}

func countFiles(dir string) (n int, size int64) {
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".parquet") {
			if info, err := d.Info(); err == nil {
				n++
				size += info.Size()
			}
		}
		return nil
	})
	return n, size
}
