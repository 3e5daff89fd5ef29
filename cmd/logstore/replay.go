package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/logstore/logstore/pipeline"
)

func init() {
	register("replay", "produce a captured JSONL file of records into a cluster, keeping partitions and timestamps", runReplay)
}

func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("replay", "-c FILE --input records.jsonl [--topic T]", stdout, stderr)
	path := fs.String("c", "", "config file: its kafka section says which cluster")
	input := fs.String("input", "", `captured records, one JSON object a line: {"key", "value", "timestamp", "headers", "partition"}; - for stdin`)
	topic := fs.String("topic", "", "topic to produce to (default: the config's first kafka.topics)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *path == "" || *input == "" {
		return usageError{"replay needs -c FILE and --input FILE"}
	}
	cfg, err := pipeline.Load(*path)
	if err != nil {
		return err
	}
	if *topic == "" {
		*topic = cfg.Kafka.Topics[0]
	}
	in := io.Reader(os.Stdin)
	if *input != "-" {
		f, err := os.Open(*input)
		if err != nil {
			return usageError{fmt.Sprintf("--input: %v", err)}
		}
		defer f.Close()
		in = f
	}
	conn, err := pipeline.NewClients(ctx, cfg.Kafka)
	if err != nil {
		return err
	}
	defer conn.Close()
	n, err := pipeline.ReplayFile(ctx, conn, *topic, in, newLogger(cfg.Log, stderr))
	fmt.Fprintf(stdout, "replayed %d records into %s\n", n, *topic)
	return err
}
