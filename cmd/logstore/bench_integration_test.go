//go:build integration

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/internal/loggen"
	"github.com/logstore/logstore/internal/testkit"
)

// TestBenchCapture writes the end-to-end benchmark's input for scripts/bench:
// a capture file for `logstore replay` holding LOGSTORE_BENCH_RECORDS
// generated logs (no malformed ones, so logstore and Spark must write the
// same rows), record i in partition i % LOGSTORE_BENCH_PARTITIONS
// (LOGSTORE_BENCH_FILL=even, the default) or in runs of a batch over a
// third of them (sticky: as a producer with Kafka's default partitioner,
// loggen.StickyFill), event times spread over the two hours before now
// (LOGSTORE_BENCH_START, RFC 3339, fixes the start instead: fixed dates are
// deleted by the brokers' 7-day retention a week later). With
// LOGSTORE_BENCH_PAYLOADS it also writes the first 10,000 values there, one
// a line (ProducerPerformance's --payload-file). It does nothing unless
// LOGSTORE_BENCH_CAPTURE names the file to write.
func TestBenchCapture(t *testing.T) {
	path := os.Getenv("LOGSTORE_BENCH_CAPTURE")
	if path == "" {
		t.Skip("LOGSTORE_BENCH_CAPTURE not set; scripts/bench sets it")
	}
	n := benchEnvInt(t, "LOGSTORE_BENCH_RECORDS", 1_000_000)
	partitions := benchEnvInt(t, "LOGSTORE_BENCH_PARTITIONS", 12)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	start := loggen.BenchStart(time.Now(), 2*time.Hour)
	if s := os.Getenv("LOGSTORE_BENCH_START"); s != "" {
		if start, err = time.Parse(time.RFC3339, s); err != nil {
			t.Fatalf("LOGSTORE_BENCH_START=%q: want an RFC 3339 time (2026-11-29T06:00:00Z)", s)
		}
	}
	var fill loggen.Fill = loggen.EvenFill(partitions)
	switch s := os.Getenv("LOGSTORE_BENCH_FILL"); s {
	case "", "even":
	case "sticky":
		// Batches of 16 KiB (the Java producer's batch.size) of ~310-byte values.
		if fill, err = loggen.NewStickyFill(5, partitions, 1.0/3, 16384/310); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("LOGSTORE_BENCH_FILL=%q: want even or sticky", s)
	}
	var payloads *bufio.Writer
	if p := os.Getenv("LOGSTORE_BENCH_PAYLOADS"); p != "" {
		pf, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer pf.Close()
		payloads = bufio.NewWriter(pf)
		defer func() {
			if err := payloads.Flush(); err != nil {
				t.Error(err)
			}
		}()
	}
	gen := loggen.New(11, start, 2*time.Hour/time.Duration(n))
	enc := json.NewEncoder(w)
	type record struct {
		Key       string `json:"key"`
		Value     string `json:"value"`
		Timestamp int64  `json:"timestamp"`
		Partition int    `json:"partition"`
	}
	for i := 0; i < n; i++ {
		key, value, at := gen.Next()
		if payloads != nil && i < 10_000 {
			payloads.Write(value)
			payloads.WriteByte('\n')
		}
		if err := enc.Encode(record{string(key), string(value), at.UnixMilli(), fill.Partition(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func benchEnvInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return v
}

// TestBenchTopicHoldsWhatAReaderGets: scripts/bench says how many records its
// topic holds and every system must write that many. It summed the
// partitions' end offsets; once the brokers' retention deleted a partition's
// first segments (the bench's logs carried a date a week old), the readers
// got 960,000 of the 1,000,000 it claimed and scripts/ceiling waited ten
// minutes for records that no longer existed. The count is what a reader
// gets: from each partition's start offset to its end.
func TestBenchTopicHoldsWhatAReaderGets(t *testing.T) {
	client := testkit.RequireCluster(t)
	topic := testkit.CreateTopic(t, client, []int{1, 2, 3}, []int{2, 3, 1})
	cl := testkit.Producer(t, topic)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 100 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: int32(i % 2), Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// What retention does to a partition's first segments.
	req := kmsg.NewPtrDeleteRecordsRequest()
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = 0, 10
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 10_000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode); err != nil {
		t.Fatalf("delete records: %v", err)
	}
	cmd := exec.Command("bash", "-c", `LOGSTORE_TOOL=test; source scripts/lib.sh; source scripts/bench-lib.sh; topic_holds "$0" "$1"`,
		strings.Join(testkit.Brokers, ","), topic)
	cmd.Dir = testkit.RepoRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("topic_holds: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != "90" {
		t.Fatalf("topic_holds says the topic holds %s records; a reader gets 90 (partition 0 starts at offset 10)", got)
	}
}
