//go:build integration

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/logstore/logstore/internal/testkit"
	"github.com/logstore/logstore/sink"
)

// s3Env points this test and the processes it starts at the local S3
// server (scripts/s3-server.sh) and returns a fresh bucket.
func s3Env(t *testing.T) string { return testkit.S3Env(t, "e2e") }

func s3Server(t *testing.T, verb string) {
	t.Helper()
	if out, err := exec.Command("bash", filepath.Join("..", "..", "scripts", "s3-server.sh"), verb).CombinedOutput(); err != nil {
		t.Fatalf("s3-server.sh %s: %v\n%s", verb, err, out)
	}
}

// committedTotal sums a group's committed offsets over a topic.
func committedTotal(t *testing.T, group, topic string, partitions int) int64 {
	t.Helper()
	var sum int64
	for _, p := range groupOffsets(t, group, topic, partitions) {
		sum += max(p.CommittedOffset, 0)
	}
	return sum
}

// TestE2ES3OutageHoldsCommits: the S3 server stops for 20 s in the middle
// of a run; the run retries, commits nothing while the uploads wait, and
// finishes with every record exactly once in the bucket.
func TestE2ES3OutageHoldsCommits(t *testing.T) {
	const n, partitions, badEvery = 60_000, 12, 100
	bucket := s3Env(t)
	topic := e2eTopic(t, partitions)
	produceLogs(t, topic, n, partitions, badEvery)
	group := topic + "-g"
	cfg := e2eConfig(t, topic, group, "/unused", 1000)
	text := strings.Replace(readFile(t, cfg), "url: file:///unused", "url: s3://"+bucket+"/raw", 1)
	text = strings.Replace(text, "  group: ", "  max_records_per_second: 4000\n  group: ", 1)
	text = strings.Replace(text, "max_age: 2s", "max_age: 1s", 1) // commits before the outage
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(logstoreBinary(t), "run", "-c", cfg, "--until", "now")
	cmd.Env = append(os.Environ(), "LOGSTORE_RACK=az-a")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); s3Server(t, "start") })
	for deadline := time.Now().Add(30 * time.Second); committedTotal(t, group, topic, partitions) == 0; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("nothing committed in 30 s:\n%s", tail(out.String(), 20))
		}
	}
	s3Server(t, "stop")
	stopped := time.Now()
	time.Sleep(3 * time.Second) // uploads already past the server finish their commits
	held := committedTotal(t, group, topic, partitions)
	time.Sleep(time.Until(stopped.Add(20 * time.Second)))
	if later := committedTotal(t, group, topic, partitions); later != held {
		t.Errorf("offsets moved from %d to %d while S3 was down: a batch was committed before its upload", held, later)
	}
	s3Server(t, "start")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the run did not survive the outage: %v\n%s", err, tail(out.String(), 30))
	}
	if held == 0 {
		t.Error("nothing was committed before the outage; the test proves nothing")
	}
	if !strings.Contains(out.String(), "retrying") {
		t.Errorf("the run never retried during the outage:\n%s", tail(out.String(), 20))
	}
	t.Logf("committed %d of %d before the outage ended; run summary:\n%s", held, n, summaryOf(out.String()))
	checkExactlyOnce(t, "s3://"+bucket+"/raw", n, partitions, badEvery)
}

// TestE2EKafkaOutputAndDeadLetterTopic: with a Kafka output topic and a
// dead-letter topic, every good record is produced with its source headers
// and every bad one lands in the dead-letter topic with its reason.
func TestE2EKafkaOutputAndDeadLetterTopic(t *testing.T) {
	const n, partitions, badEvery = 6_000, 6, 50
	topic := e2eTopic(t, partitions)
	out := e2eTopic(t, 3)
	dlq := e2eTopic(t, 1)
	produceLogs(t, topic, n, partitions, badEvery)
	dir := t.TempDir()
	cfg := e2eConfig(t, topic, topic+"-g", dir, 1000)
	text := strings.Replace(readFile(t, cfg), "dead_letter:\n  files: true\n",
		fmt.Sprintf("  kafka: {topic: %s, key: service}\ndead_letter:\n  files: true\n  topic: %s\n", out, dlq), 1)
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if st, log := runLogstore(t, cfg, "LOGSTORE_RACK=az-b"); !st.Success() {
		t.Fatalf("run: %v\n%s", st, tail(log, 30))
	}
	good := readTopic(t, out, 3, n-n/badEvery)
	seen := map[string]bool{}
	for _, m := range good {
		h := headers(m)
		if h[sink.HeaderSourceTopic] != topic {
			t.Fatalf("output record without its source headers: %v", h)
		}
		pos := h[sink.HeaderSourcePartition] + ":" + h[sink.HeaderSourceOffset]
		if seen[pos] {
			t.Errorf("source record %s produced twice in a run without failures", pos)
		}
		seen[pos] = true
		p, _ := strconv.Atoi(h[sink.HeaderSourcePartition])
		o, _ := strconv.Atoi(h[sink.HeaderSourceOffset])
		if i := o*partitions + p; i%badEvery == badEvery-1 {
			t.Errorf("bad record %s reached the output topic", pos)
		}
	}
	if len(seen) != n-n/badEvery {
		t.Errorf("%d distinct source records in the output topic, want %d", len(seen), n-n/badEvery)
	}
	for _, m := range readTopic(t, dlq, 1, n/badEvery) {
		h := headers(m)
		p, _ := strconv.Atoi(h["logstore.source.partition"])
		o, _ := strconv.Atoi(h["logstore.source.offset"])
		if i := o*partitions + p; i%badEvery != badEvery-1 || h["logstore.error"] == "" {
			t.Errorf("dead letter %d:%d (reason %q) is not one of the malformed records", p, o, h["logstore.error"])
		}
	}
}

func headers(m kafka.Message) map[string]string {
	h := map[string]string{}
	for _, x := range m.Headers {
		h[x.Key] = string(x.Value)
	}
	return h
}

// readTopic reads want records from every partition of topic.
func readTopic(t *testing.T, topic string, partitions, want int) []kafka.Message {
	t.Helper()
	var all []kafka.Message
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for p := 0; p < partitions; p++ {
		conn, err := kafka.DialLeader(ctx, "tcp", strings.Split(bootstrap, ",")[0], topic, p)
		if err != nil {
			t.Fatal(err)
		}
		last, err := conn.ReadLastOffset()
		if err != nil {
			t.Fatal(err)
		}
		conn.Close()
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: strings.Split(bootstrap, ","), Topic: topic, Partition: p, MaxWait: 200 * time.Millisecond})
		for off := int64(0); off < last; off++ {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				t.Fatalf("reading %s/%d: %v", topic, p, err)
			}
			all = append(all, m)
			off = m.Offset
		}
		r.Close()
	}
	if len(all) != want {
		t.Errorf("%s holds %d records, want %d", topic, len(all), want)
	}
	return all
}
