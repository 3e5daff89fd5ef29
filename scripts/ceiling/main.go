// Command ceiling is the benchmark's raw-consume ceiling: a plain franz-go
// consumer that reads every record of a topic from the start, with
// client.rack set (KIP-392: from the nearest replica, as logstore reads),
// and throws the records away. No decoding, no Parquet, no commits: what is
// left is what the brokers, the network and the Kafka client cost, the
// most records per second any consumer on the same machine can reach.
// scripts/bench runs it beside logstore and Spark.
//
//	go run ./scripts/ceiling --brokers 127.0.0.1:19092 --topic T --records 1000000 --rack az-a
//
// It prints one JSON line: records, wall_s and first_record_s (process start
// to the first record).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

var started = time.Now()

func main() {
	brokers := flag.String("brokers", "127.0.0.1:19092", "bootstrap servers, comma-separated")
	topic := flag.String("topic", "", "the topic to read (required)")
	records := flag.Int64("records", 0, "stop after this many records (required: the topic's size)")
	rack := flag.String("rack", "", "client.rack: fetch from the replica in this rack")
	timeout := flag.Duration("timeout", 10*time.Minute, "give up after this long")
	flag.Parse()
	if *topic == "" || *records <= 0 {
		fmt.Fprintln(os.Stderr, "ceiling: --topic and --records are required")
		os.Exit(2)
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(strings.Split(*brokers, ",")...),
		kgo.ConsumeTopics(*topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	}
	if *rack != "" {
		opts = append(opts, kgo.Rack(*rack))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ceiling:", err)
		os.Exit(1)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	var n int64
	var first time.Time
	for n < *records {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			fmt.Fprintf(os.Stderr, "ceiling: %d of %d records after %s: %v\n", n, *records, time.Since(started), err)
			os.Exit(1)
		}
		fs.EachError(func(t string, p int32, err error) {
			fmt.Fprintf(os.Stderr, "ceiling: %s[%d]: %v\n", t, p, err)
		})
		c := int64(fs.NumRecords())
		if c > 0 && first.IsZero() {
			first = time.Now()
		}
		n += c
	}
	out, _ := json.Marshal(map[string]any{
		"records":        n,
		"wall_s":         time.Since(started).Seconds(),
		"first_record_s": first.Sub(started).Seconds(),
	})
	fmt.Println(string(out))
}
