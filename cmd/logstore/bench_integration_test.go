//go:build integration

package main

import (
	"bufio"
	"encoding/json"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/logstore/logstore/internal/loggen"
)

// TestBenchCapture writes the end-to-end benchmark's input for scripts/bench:
// a capture file for `logstore replay` holding LOGSTORE_BENCH_RECORDS
// generated logs (no malformed ones, so logstore and Spark must write the
// same rows), record i in partition i % LOGSTORE_BENCH_PARTITIONS, event
// times spread over two hours from 2026-11-29T06:00Z. It does nothing
// unless LOGSTORE_BENCH_CAPTURE names the file to write.
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
	start := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
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
		if err := enc.Encode(record{string(key), string(value), at.UnixMilli(), i % partitions}); err != nil {
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
