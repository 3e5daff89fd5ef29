// Command ceiling is the benchmark's raw-consume ceiling: a plain franz-go
// consumer that reads every record of a topic from the start, with
// client.rack set (KIP-392: from the nearest replica, as logstore reads),
// and throws the records away. No decoding, no Parquet, no commits: what is
// left is what the brokers, the network and the Kafka client cost, the
// most records per second any consumer on the same machine can reach.
// scripts/bench runs it beside logstore, Spark and Flink.
//
//	go run ./scripts/ceiling --brokers 127.0.0.1:19092 --topic T --records 1000000 --rack az-a
//
// It prints one JSON line: records, wall_s and first_record_s (process start
// to the first record). It gives up when no record came for --idle (records
// the topic no longer holds never come).
//
// With --read-back it is the bench's check of an output topic instead: it
// reads the topic with isolation.level=read_committed until no record came
// for --idle, and prints records, distinct (source partition, offset) pairs
// of the rows (their kafka_partition and kafka_offset fields) and value
// bytes; --sample FILE writes the first 10,000 values there, one a line
// (ProducerPerformance's --payload-file).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

var started = time.Now()

func main() {
	brokers := flag.String("brokers", "127.0.0.1:19092", "bootstrap servers, comma-separated")
	topic := flag.String("topic", "", "the topic to read (required)")
	records := flag.Int64("records", 0, "stop after this many records (required without --read-back: what the topic holds)")
	rack := flag.String("rack", "", "client.rack: fetch from the replica in this rack")
	timeout := flag.Duration("timeout", 10*time.Minute, "give up after this long")
	idle := flag.Duration("idle", 30*time.Second, "give up (--read-back: stop) when no record came for this long")
	readBack := flag.Bool("read-back", false, "count an output topic's committed rows until --idle passes with none")
	sample := flag.String("sample", "", "with --read-back: write the first 10,000 values to this file")
	flag.Parse()
	if *topic == "" || (*records <= 0 && !*readBack) {
		fmt.Fprintln(os.Stderr, "ceiling: --topic and --records (or --read-back) are required")
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
	if *readBack {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ceiling:", err)
		os.Exit(1)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	var (
		n, valueBytes     int64
		first, last       time.Time
		positions         map[int64]struct{}
		unparsed, sampled int64
		samples           *bufio.Writer
	)
	if *readBack {
		positions = map[int64]struct{}{}
		if *sample != "" {
			f, err := os.Create(*sample)
			if err != nil {
				fmt.Fprintln(os.Stderr, "ceiling:", err)
				os.Exit(1)
			}
			defer f.Close()
			samples = bufio.NewWriter(f)
		}
	}
	last = time.Now()
	for *readBack || n < *records {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		pcancel()
		if err := ctx.Err(); err != nil {
			fmt.Fprintf(os.Stderr, "ceiling: %d of %d records after %s: %v\n", n, *records, time.Since(started), err)
			os.Exit(1)
		}
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				fmt.Fprintf(os.Stderr, "ceiling: %s[%d]: %v\n", t, p, err)
			}
		})
		c := int64(fs.NumRecords())
		if c == 0 {
			if time.Since(last) < *idle {
				continue
			}
			if *readBack {
				break
			}
			fmt.Fprintf(os.Stderr, "ceiling: %d of %d records, then none for %s: the topic holds fewer than --records\n", n, *records, *idle)
			os.Exit(1)
		}
		last = time.Now()
		if first.IsZero() {
			first = last
		}
		n += c
		if *readBack {
			fs.EachRecord(func(r *kgo.Record) {
				valueBytes += int64(len(r.Value))
				if p, o, ok := position(r.Value); ok {
					positions[p<<40|o] = struct{}{}
				} else {
					unparsed++
				}
				if samples != nil && sampled < 10_000 {
					sampled++
					samples.Write(r.Value)
					samples.WriteByte('\n')
				}
			})
		}
	}
	rec := map[string]any{
		"records":        n,
		"wall_s":         time.Since(started).Seconds(),
		"first_record_s": first.Sub(started).Seconds(),
	}
	if *readBack {
		rec["distinct"] = len(positions)
		rec["unparsed"] = unparsed
		rec["value_bytes"] = valueBytes
		if samples != nil {
			if err := samples.Flush(); err != nil {
				fmt.Fprintln(os.Stderr, "ceiling:", err)
				os.Exit(1)
			}
		}
	}
	out, _ := json.Marshal(rec)
	fmt.Println(string(out))
}

// position finds a row's "kafka_partition" and "kafka_offset" numbers in its
// JSON value, without decoding the rest.
func position(v []byte) (p, o int64, ok bool) {
	p, ok1 := number(v, `"kafka_partition"`)
	o, ok2 := number(v, `"kafka_offset"`)
	return p, o, ok1 && ok2
}

func number(v []byte, key string) (int64, bool) {
	i := bytes.Index(v, []byte(key))
	if i < 0 {
		return 0, false
	}
	rest := bytes.TrimLeft(v[i+len(key):], " \t:")
	j := 0
	for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
		j++
	}
	x, err := strconv.ParseInt(string(rest[:j]), 10, 64)
	return x, err == nil
}
