//go:build integration

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/logstore/logstore/internal/loggen"
	"github.com/logstore/logstore/internal/testkit"
	"github.com/logstore/logstore/pipeline"
)

// The end-to-end tests run the logstore binary, as a user does, against the
// real three-rack cluster (scripts/kafka-cluster.sh), and check the output
// with pyarrow (scripts/verify_dataset.py), an independent reader.

var bootstrap = strings.Join(testkit.Brokers, ",")

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// logstoreBinary builds the CLI once per test run.
func logstoreBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "logstore-e2e")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "logstore")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// e2eTopic creates a fresh topic with RF 3 on the real cluster.
func e2eTopic(t *testing.T, partitions int) string {
	t.Helper()
	client := &kafka.Client{Addr: kafka.TCP(strings.Split(bootstrap, ",")...), Timeout: 30 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := client.Metadata(ctx, &kafka.MetadataRequest{}); err != nil {
		t.Fatalf("the three-rack cluster is not reachable at %s (start it with scripts/kafka-cluster.sh start): %v", bootstrap, err)
	}
	topic := fmt.Sprintf("e2e-%s-%d", strings.ToLower(t.Name()), time.Now().UnixNano())
	topic = strings.NewReplacer("/", "-", "_", "-").Replace(topic)
	resp, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: topic, NumPartitions: partitions, ReplicationFactor: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := resp.Errors[topic]; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = client.DeleteTopics(context.Background(), &kafka.DeleteTopicsRequest{Topics: []string{topic}})
	})
	testkit.WaitForTopic(t, topic, partitions)
	return topic
}

// produceLogs writes n generated logs, record i to partition i%partitions,
// so record i lands at offset i/partitions and its content can be made again.
func produceLogs(t *testing.T, topic string, n, partitions, badEvery int) {
	t.Helper()
	w := &kafka.Writer{
		Addr: kafka.TCP(strings.Split(bootstrap, ",")...), Topic: topic, RequiredAcks: kafka.RequireAll,
		BatchSize: 10000, BatchBytes: 16 << 20, BatchTimeout: 5 * time.Millisecond, Compression: kafka.Lz4,
		Balancer: kafka.BalancerFunc(func(m kafka.Message, _ ...int) int {
			i, _ := strconv.Atoi(string(m.Headers[0].Value))
			return i % partitions
		}),
	}
	defer w.Close()
	gen := loggen.New(7, e2eStart, time.Millisecond)
	gen.BadEvery = badEvery
	const chunk = 10000
	batch := make([]kafka.Message, 0, chunk)
	start := time.Now()
	for i := 0; i < n; i++ {
		key, value, at := gen.Next()
		batch = append(batch, kafka.Message{Key: append([]byte(nil), key...), Value: append([]byte(nil), value...), Time: at,
			Headers: []kafka.Header{{Key: "i", Value: []byte(strconv.Itoa(i))}}})
		if len(batch) == chunk || i == n-1 {
			if err := w.WriteMessages(context.Background(), batch...); err != nil {
				t.Fatalf("producing: %v", err)
			}
			batch = batch[:0]
		}
	}
	t.Logf("produced %d records in %s", n, time.Since(start).Round(time.Millisecond))
}

// e2eStart is when the tests' generated logs begin: a fixed date, so
// their paths and partition values are the same every run. The test
// cluster keeps logs of any age (TestTestTopicsKeepLogsOfAnyAge).
var e2eStart = time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)

// TestTestTopicsKeepLogsOfAnyAge: a topic of the test cluster has no time
// retention. The tests' logs are stamped from e2eStart on; with Kafka's
// default of 7 days a broker deletes them at its next retention check
// (every 5 minutes) once that date is a week old, and records vanish in
// the middle of a test — exactly-once tests then see dead letters or rows
// missing, or a partition that "starts at earliest" at its end.
func TestTestTopicsKeepLogsOfAnyAge(t *testing.T) {
	topic := e2eTopic(t, 1)
	client := &kafka.Client{Addr: kafka.TCP(strings.Split(bootstrap, ",")...), Timeout: 30 * time.Second}
	resp, err := client.DescribeConfigs(context.Background(), &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{
		{ResourceType: kafka.ResourceTypeTopic, ResourceName: topic, ConfigNames: []string{"retention.ms"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp.Resources {
		if r.Error != nil {
			t.Fatal(r.Error)
		}
		for _, e := range r.ConfigEntries {
			if ms, _ := strconv.ParseInt(e.ConfigValue, 10, 64); ms >= 0 && time.Since(e2eStart) > time.Duration(ms)*time.Millisecond-time.Hour {
				t.Fatalf("a new topic keeps logs %s (retention.ms %s) and the tests' logs are stamped from %s: the brokers delete them mid-test; "+
					"start the cluster with scripts/kafka-cluster.sh (log.retention.ms=-1)", time.Duration(ms)*time.Millisecond, e.ConfigValue, e2eStart.Format(time.DateOnly))
			}
			return
		}
	}
	t.Fatalf("the brokers did not describe retention.ms of %s", topic)
}

// e2eConfig is a job over topic into dir, with every decoded field kept.
func e2eConfig(t *testing.T, topic, group, dir string, maxRows int) string {
	t.Helper()
	cfg := fmt.Sprintf(`kafka:
  brokers: [%s]
  topics: [%s]
  group: %s
  session_timeout: 10s
  heartbeat_interval: 1s
  fetch: {max_wait: 200ms, max_bytes: 1048576}
rack:
  providers: [env]
schema:
  columns:
    - {name: ts, type: timestamp, unit: ms, required: true}
    - {name: level, type: string, required: true}
    - {name: service, type: string, required: true}
    - {name: status, type: int32, source: http.status}
    - {name: latency_ms, type: float64, source: http.latency_ms}
    - {name: labels, type: "map<string,string>"}
    - {name: trace_id, type: string}
    - {name: kafka_partition, type: int32, source: kafka.partition}
    - {name: kafka_offset, type: int64, source: kafka.offset}
batch:
  max_rows: %d
  max_age: 2s
sinks:
  files:
    url: file://%s
    partition_by: [{name: dt, column: ts, format: "2006-01-02"}, {name: hour, column: ts, format: "15"}]
dead_letter:
  files: true
log:
  level: info
  format: json
`, bootstrap, topic, group, maxRows, dir)
	path := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runLogstore runs `logstore run -c cfg --until now` with extra env and
// returns how it ended.
func runLogstore(t *testing.T, cfg string, env ...string) (*os.ProcessState, string) {
	t.Helper()
	cmd := exec.Command(logstoreBinary(t), "run", "-c", cfg, "--until", "now")
	cmd.Env = append(os.Environ(), env...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan struct{})
	timer := time.AfterFunc(4*time.Minute, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	_ = cmd.Run()
	close(done)
	return cmd.ProcessState, out.String()
}

type partStats struct {
	Count, Distinct, Min, Max int
	Sum                       int64
}

type verified struct {
	Rows        int                  `json:"rows"`
	Schema      map[string]string    `json:"schema"`
	Partitions  map[string]partStats `json:"partitions"`
	DeadLetters int                  `json:"dead_letters"`
	DLParts     map[string]partStats `json:"dead_letter_partitions"`
	Reasons     []string             `json:"dead_letter_reasons"`
	Sample      []map[string]any     `json:"sample"`
}

// verifyWithPyarrow reads dir with scripts/verify_dataset.py.
func verifyWithPyarrow(t *testing.T, dir string, sample []string) verified {
	t.Helper()
	script := filepath.Join("..", "..", "scripts", "verify_dataset.py")
	args := []string{script, dir}
	if len(sample) > 0 {
		args = append(args, "--sample", strings.Join(sample, ","))
	}
	out, err := exec.Command("python3", args...).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("pyarrow could not read the output (is pyarrow installed? scripts/setup.sh does it): %v\n%s", err, msg)
	}
	var v verified
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// expect computes, from the generator's rule, what every partition must hold.
func expect(n, partitions, badEvery int) (good, bad map[string]partStats) {
	good, bad = map[string]partStats{}, map[string]partStats{}
	for i := 0; i < n; i++ {
		p, o := strconv.Itoa(i%partitions), i/partitions
		m := good
		if badEvery > 0 && i%badEvery == badEvery-1 {
			m = bad
		}
		s, ok := m[p]
		if !ok {
			s.Min = o
		}
		s.Count++
		s.Distinct++
		s.Sum += int64(o)
		s.Max = o
		m[p] = s
	}
	return good, bad
}

// checkExactlyOnce compares the pyarrow view with the produced records.
func checkExactlyOnce(t *testing.T, dir string, n, partitions, badEvery int) verified {
	t.Helper()
	var sample []string
	for i := 0; i < n; i += n / 50 {
		if i%badEvery != badEvery-1 {
			sample = append(sample, fmt.Sprintf("%d:%d", i%partitions, i/partitions))
		}
	}
	v := verifyWithPyarrow(t, dir, sample)
	good, bad := expect(n, partitions, badEvery)
	checkCounts(t, v, good, bad)
	checkSampleValues(t, v.Sample, n, partitions, badEvery)
	return v
}

// checkCounts compares what pyarrow read with the rows and dead letters
// every partition must hold, and the columns' types.
func checkCounts(t *testing.T, v verified, good, bad map[string]partStats) {
	t.Helper()
	for p, want := range good {
		if got := v.Partitions[p]; got != want {
			t.Errorf("partition %s rows: got %+v, want %+v (count ≠ distinct means duplicates; a lower count, missing rows)", p, got, want)
		}
	}
	for p, want := range bad {
		if got := v.DLParts[p]; got != want {
			t.Errorf("partition %s dead letters: got %+v, want %+v", p, got, want)
		}
	}
	for col, typ := range map[string]string{"ts": "timestamp[ms, tz=UTC]", "status": "int32", "latency_ms": "double", "kafka_offset": "int64", "labels": "map<string, string ('labels')>"} {
		if v.Schema[col] != typ {
			t.Errorf("column %s has type %q, want %q", col, v.Schema[col], typ)
		}
	}
}

// checkSampleValues regenerates the sampled records and compares values.
func checkSampleValues(t *testing.T, rows []map[string]any, n, partitions, badEvery int) {
	t.Helper()
	byPos := map[int]map[string]any{}
	for _, r := range rows {
		byPos[int(r["kafka_partition"].(float64))+partitions*int(r["kafka_offset"].(float64))] = r
	}
	gen := loggen.New(7, e2eStart, time.Millisecond)
	gen.BadEvery = badEvery
	checked := 0
	for i := 0; i < n; i++ {
		_, value, at := gen.Next()
		r, ok := byPos[i]
		if !ok {
			continue
		}
		var src struct {
			Level, Service string
			HTTP           struct {
				Status  int32   `json:"status"`
				Latency float64 `json:"latency_ms"`
			} `json:"http"`
			TraceID string `json:"trace_id"`
		}
		if err := json.Unmarshal(value, &src); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if r["ts"].(float64) != float64(at.UnixMilli()) || r["level"] != src.Level || r["service"] != src.Service ||
			int32(r["status"].(float64)) != src.HTTP.Status || r["latency_ms"].(float64) != src.HTTP.Latency || r["trace_id"] != src.TraceID {
			t.Errorf("record %d read back as %v; source %s", i, r, value)
		}
		checked++
	}
	if checked < 40 {
		t.Errorf("only %d sampled rows found", checked)
	}
}

// TestE2EMillionRecordsTwoMembersExactlyOnce: 1,000,000 records over 12
// partitions, 1 % malformed, read by two members with --until now.
func TestE2EMillionRecordsTwoMembersExactlyOnce(t *testing.T) {
	const n, partitions, badEvery = 1_000_000, 12, 100
	topic := e2eTopic(t, partitions)
	produceLogs(t, topic, n, partitions, badEvery)
	dir := t.TempDir()
	cfg := e2eConfig(t, topic, topic+"-g", dir, 20000)
	start := time.Now()
	var wg sync.WaitGroup
	for _, rack := range []string{"az-a", "az-b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, out := runLogstore(t, cfg, "LOGSTORE_RACK="+rack)
			if !st.Success() {
				t.Errorf("member %s: %v\n%s", rack, st, tail(out, 40))
			}
			t.Logf("member %s:\n%s", rack, summaryOf(out))
		}()
	}
	wg.Wait()
	t.Logf("two members read %d records in %s", n, time.Since(start).Round(time.Millisecond))
	v := checkExactlyOnce(t, dir, n, partitions, badEvery)
	if v.Rows != n-n/badEvery || v.DeadLetters != n/badEvery {
		t.Errorf("rows %d, dead letters %d; want %d and %d", v.Rows, v.DeadLetters, n-n/badEvery, n/badEvery)
	}
	t.Logf("dead-letter reasons: %v", v.Reasons)
}

// TestE2ECrashSafety kills the job with SIGKILL at each point of the commit
// protocol, restarts it, and checks that the output holds every good record
// exactly once.
func TestE2ECrashSafety(t *testing.T) {
	const n, partitions, badEvery = 120_000, 12, 100
	topic := e2eTopic(t, partitions)
	produceLogs(t, topic, n, partitions, badEvery)
	dir := t.TempDir()
	cfg := e2eConfig(t, topic, topic+"-g", dir, 2000)
	// One static member, as a StatefulSet's pod: each run takes over the
	// killed one's partitions at once instead of waiting out its session.
	static := strings.Replace(readFile(t, cfg), "  group: ", "  group_instance_id: crash\n  group: ", 1)
	if err := os.WriteFile(cfg, []byte(static), 0o644); err != nil {
		t.Fatal(err)
	}
	// Each run gets further than the last: 12 partitions of 10,000
	// records, batches of 2,000 rows, about one file per batch.
	for _, fp := range []string{"fetched:5", "marked:3", "file-written:5", "delivered:4", "marked:15", "file-written:20", "delivered:10"} {
		st, out := runLogstore(t, cfg, "LOGSTORE_RACK=az-c", "LOGSTORE_FAILPOINT="+fp)
		ws, _ := st.Sys().(syscall.WaitStatus)
		if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("failpoint %s: the run was not killed (%v):\n%s", fp, st, tail(out, 20))
		}
		t.Logf("killed at %s", fp)
	}
	st, out := runLogstore(t, cfg, "LOGSTORE_RACK=az-c")
	if !st.Success() {
		t.Fatalf("final run: %v\n%s", st, tail(out, 40))
	}
	if !strings.Contains(out, "re-cutting") {
		t.Log("note: the final run found no pending cut to redo")
	}
	checkExactlyOnce(t, dir, n, partitions, badEvery)
}

func tail(s string, lines int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(ls[max(0, len(ls)-lines):], "\n")
}

func summaryOf(out string) string {
	if i := strings.Index(out, "logstore run summary"); i >= 0 {
		return out[i:]
	}
	return tail(out, 10)
}

// TestE2EGracefulStop: SIGTERM flushes, commits and leaves the group; a
// later run finishes the topic with every record exactly once.
func TestE2EGracefulStop(t *testing.T) {
	const n, partitions, badEvery = 240_000, 12, 100
	topic := e2eTopic(t, partitions)
	produceLogs(t, topic, n, partitions, badEvery)
	dir := t.TempDir()
	group := topic + "-g"
	cfg := e2eConfig(t, topic, group, dir, 5000)
	// Slow the reader down so SIGTERM lands mid-topic.
	slow := strings.Replace(readFile(t, cfg), "  group: ", "  max_records_per_second: 40000\n  group: ", 1)
	if err := os.WriteFile(cfg, []byte(slow), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(logstoreBinary(t), "run", "-c", cfg)
	cmd.Env = append(os.Environ(), "LOGSTORE_RACK=az-b")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Stop once the first batches are committed, well before the end.
	for deadline := time.Now().Add(30 * time.Second); committedTotal(t, group, topic, partitions) == 0; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("nothing committed in 30 s:\n%s", tail(out.String(), 20))
		}
	}
	time.Sleep(time.Second)
	stopAt := time.Now()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	took := time.Since(stopAt)
	if err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, tail(out.String(), 30))
	}
	if took > 25*time.Second {
		t.Errorf("stopping took %s, more than run.shutdown_timeout", took)
	}
	t.Logf("stopped %s after SIGTERM:\n%s", took.Round(time.Millisecond), summaryOf(out.String()))

	var committed int64
	for _, p := range groupOffsets(t, group, topic, partitions) {
		// A commit of next carries its time ("at:…"); a cut mark is a batch
		// in flight.
		if strings.HasPrefix(p.Metadata, "cut:") {
			t.Errorf("partition %d was left with a pending cut %q: the stop did not finish its batch", p.Partition, p.Metadata)
		}
		committed += max(p.CommittedOffset, 0)
	}
	v := verifyWithPyarrow(t, dir, nil)
	if int64(v.Rows+v.DeadLetters) != committed {
		t.Errorf("after the stop the files hold %d rows + %d dead letters, but %d offsets are committed", v.Rows, v.DeadLetters, committed)
	}
	if committed == 0 || committed == n {
		t.Errorf("committed %d of %d: the stop should land mid-topic", committed, n)
	}
	client := &kafka.Client{Addr: kafka.TCP(strings.Split(bootstrap, ",")...), Timeout: 30 * time.Second}
	groups, err := client.DescribeGroups(context.Background(), &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
	if err != nil {
		t.Fatal(err)
	}
	if len(groups.Groups) == 1 && len(groups.Groups[0].Members) != 0 {
		t.Errorf("the member did not leave the group: %d members, state %s", len(groups.Groups[0].Members), groups.Groups[0].GroupState)
	}
	if st, out := runLogstore(t, cfg, "LOGSTORE_RACK=az-b"); !st.Success() {
		t.Fatalf("finishing run: %v\n%s", st, tail(out, 30))
	}
	checkExactlyOnce(t, dir, n, partitions, badEvery)
}

// TestE2EReplayCaptureAndTimeRange: `logstore replay` keeps partitions and
// timestamps; `run --from --to` reads just that range into its own prefix
// and leaves the group's offsets alone.
func TestE2EReplayCaptureAndTimeRange(t *testing.T) {
	const n, partitions = 1200, 3
	topic := e2eTopic(t, partitions)
	capture := filepath.Join(t.TempDir(), "capture.jsonl")
	f, err := os.Create(capture)
	if err != nil {
		t.Fatal(err)
	}
	gen := loggen.New(7, e2eStart, 3*time.Second)
	enc := json.NewEncoder(f)
	for i := 0; i < n; i++ {
		key, value, at := gen.Next()
		_ = enc.Encode(map[string]any{"key": string(key), "value": string(value), "timestamp": at.Format(time.RFC3339Nano),
			"headers": map[string]string{"i": strconv.Itoa(i)}, "partition": i % partitions})
	}
	f.Close()
	dir := t.TempDir()
	group := topic + "-g"
	cfg := e2eConfig(t, topic, group, dir, 5000)
	out, err := exec.Command(logstoreBinary(t), "replay", "-c", cfg, "--input", capture).CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("replayed %d records", n)) {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	from, to := e2eStart.Add(10*time.Minute), e2eStart.Add(20*time.Minute)
	cmd := exec.Command(logstoreBinary(t), "run", "-c", cfg, "--from", from.Format(time.RFC3339), "--to", to.Format(time.RFC3339))
	cmd.Env = append(os.Environ(), "LOGSTORE_RACK=az-a")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run --from --to: %v\n%s", err, tail(string(out), 30))
	}
	prefix := filepath.Join(dir, pipeline.BackfillPrefix(from, to))
	v := verifyWithPyarrow(t, prefix, nil)
	// A re-run of the same range overwrites the same files.
	before := countFilesIn(t, prefix)
	cmd = exec.Command(logstoreBinary(t), "run", "-c", cfg, "--from", from.Format(time.RFC3339), "--to", to.Format(time.RFC3339))
	cmd.Env = append(os.Environ(), "LOGSTORE_RACK=az-a")
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "re-running from its manifest") {
		t.Fatalf("re-run of the backfill: %v\n%s", err, tail(string(out), 30))
	}
	if after := countFilesIn(t, prefix); after != before {
		t.Errorf("the re-run left %d files where the first left %d", after, before)
	}
	if again := verifyWithPyarrow(t, prefix, nil); again.Rows != v.Rows {
		t.Errorf("after the re-run the backfill holds %d rows, before %d", again.Rows, v.Rows)
	}
	// Records every 3 s: [10 min, 20 min) holds records 200..399, record i
	// in partition i % 3 at offset i / 3, as the capture said.
	if v.Rows != 200 {
		t.Errorf("the time range holds %d rows, want 200", v.Rows)
	}
	want := map[string]partStats{}
	for i := 200; i < 400; i++ {
		p, o := strconv.Itoa(i%partitions), i/partitions
		s, ok := want[p]
		if !ok {
			s.Min = o
		}
		s.Count, s.Distinct, s.Sum, s.Max = s.Count+1, s.Distinct+1, s.Sum+int64(o), o
		want[p] = s
	}
	for p, w := range want {
		if got := v.Partitions[p]; got != w {
			t.Errorf("partition %s holds %+v, want %+v", p, got, w)
		}
	}
	for _, p := range groupOffsets(t, group, topic, partitions) {
		if p.CommittedOffset >= 0 {
			t.Errorf("a replay committed offset %d for partition %d; it must not touch the group", p.CommittedOffset, p.Partition)
		}
	}
}

// countFilesIn counts the files below dir.
func countFilesIn(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// groupOffsets reads a group's commits for partitions 0..n-1 of topic.
func groupOffsets(t *testing.T, group, topic string, partitions int) []kafka.OffsetFetchPartition {
	t.Helper()
	client := &kafka.Client{Addr: kafka.TCP(strings.Split(bootstrap, ",")...), Timeout: 30 * time.Second}
	ps := make([]int, partitions)
	for i := range ps {
		ps[i] = i
	}
	resp, err := client.OffsetFetch(context.Background(), &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: ps}})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[topic]
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// slowDown caps the job's read rate in cfg, so that what a test does to the
// group lands while records are still being read.
func slowDown(t *testing.T, cfg string, recordsPerSecond int) {
	t.Helper()
	text := strings.Replace(readFile(t, cfg), "  group: ", "  max_records_per_second: "+strconv.Itoa(recordsPerSecond)+"\n  group: ", 1)
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// boundedMember is a `logstore run --until now` process of a test's group.
type boundedMember struct {
	cmd *exec.Cmd
	out testkit.LogBuffer
}

// startBounded starts a bounded member in rack; it is killed when the test
// ends.
func startBounded(t *testing.T, cfg, rack string) *boundedMember {
	t.Helper()
	m := &boundedMember{cmd: exec.Command(logstoreBinary(t), "run", "-c", cfg, "--until", "now")}
	m.cmd.Env = append(os.Environ(), "LOGSTORE_RACK="+rack)
	m.cmd.Stdout, m.cmd.Stderr = &m.out, &m.out
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.cmd.Process.Kill() })
	return m
}

// waitFor waits up to a minute for the member's output to match, named
// what in the failure.
func (m *boundedMember) waitFor(t *testing.T, what string, match func(string) bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !match(m.out.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q within a minute:\n%s", what, tail(m.out.String(), 30))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestE2EMembersJoinMidRunExactlyOnce: one member reads alone, a second
// joins once the first holds open batches in every partition, a third joins
// later and the second leaves: each rebalance stops workers that flush what
// they hold while the next owner starts. A bounded member ends once the
// group has read every partition to its end, so the others take over the
// leaver's; the run its exit code 3 asks for finds nothing left to do.
// Every record once.
func TestE2EMembersJoinMidRunExactlyOnce(t *testing.T) {
	const n, partitions, badEvery = 240_000, 12, 100
	topic := e2eTopic(t, partitions)
	produceLogs(t, topic, n, partitions, badEvery)
	dir := t.TempDir()
	cfg := e2eConfig(t, topic, topic+"-g", dir, 5000)
	slowDown(t, cfg, 20000) // slow enough that every rebalance lands mid-topic
	start := func(rack string) *boundedMember { return startBounded(t, cfg, rack) }
	waitFor := func(m *boundedMember, what string) {
		m.waitFor(t, what, func(out string) bool { return strings.Contains(out, what) })
	}
	a := start("az-a")
	waitFor(a, `"msg":"generation"`)
	time.Sleep(700 * time.Millisecond)
	b := start("az-b")
	waitFor(b, `"msg":"generation"`)
	time.Sleep(1500 * time.Millisecond)
	c := start("az-c")
	waitFor(c, `"msg":"generation"`)
	time.Sleep(1500 * time.Millisecond)
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for _, m := range []*boundedMember{a, b, c} {
		err := m.cmd.Wait()
		var exit *exec.ExitError
		if err != nil && !(m == b && errors.As(err, &exit) && exit.ExitCode() == 3) {
			t.Errorf("%v: %v\n%s", m.cmd.Env[len(m.cmd.Env)-1], err, tail(m.out.String(), 40))
		}
	}
	if st, out := runLogstore(t, cfg, "LOGSTORE_RACK=az-b"); !st.Success() {
		t.Errorf("the run again: %v\n%s", st, tail(out, 30))
	}
	v := checkExactlyOnce(t, dir, n, partitions, badEvery)
	if t.Failed() {
		for _, m := range []*boundedMember{a, b, c} {
			t.Logf("%s:\n%s", m.cmd.Env[len(m.cmd.Env)-1], m.out.String())
		}
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				t.Log(strings.TrimPrefix(p, dir))
			}
			return nil
		})
	}
	t.Logf("rows %d, dead letters %d", v.Rows, v.DeadLetters)
}

// TestE2ERecreatedTopicStops: a topic deleted and recreated under the same
// name numbers its records from 0 again, below the output's resume
// records. The topic's id tells the new topic from the old: under the
// default on_offset_out_of_range: fail the job stops with an error naming
// the topic, partition, the position remembered and what the new topic
// holds, and writes nothing: the old files, whose names the new records
// would take, stay as they are.
func TestE2ERecreatedTopicStops(t *testing.T) {
	const n, partitions = 3000, 3
	topic := e2eTopic(t, partitions)
	produceLogs(t, topic, n, partitions, 1000)
	dir := t.TempDir()
	cfg := e2eConfig(t, topic, topic+"-g", dir, 500)
	if st, out := runLogstore(t, cfg, "LOGSTORE_RACK=az-a"); !st.Success() {
		t.Fatalf("first run: %v\n%s", st, tail(out, 30))
	}
	before := listFiles(t, dir)

	recreateE2ETopic(t, topic, partitions)
	produceLogs(t, topic, n/10, partitions, 1000)

	st, out := runLogstore(t, cfg, "LOGSTORE_RACK=az-a")
	if st.Success() || st.ExitCode() != 1 {
		t.Fatalf("the run over the recreated topic ended with %v, want exit 1:\n%s", st, tail(out, 30))
	}
	for _, want := range []string{topic, "deleted and recreated", "next 1000", "holds [0, 100)"} {
		if !strings.Contains(out, want) {
			t.Errorf("the error does not say %q:\n%s", want, tail(out, 15))
		}
	}
	if after := listFiles(t, dir); after != before {
		t.Errorf("files changed although the job stopped:\nbefore %s\nafter  %s", before, after)
	}
}

// recreateE2ETopic deletes topic and creates it again with partitions
// partitions: a new topic id, offsets from 0 again.
func recreateE2ETopic(t *testing.T, topic string, partitions int) {
	t.Helper()
	client := &kafka.Client{Addr: kafka.TCP(strings.Split(bootstrap, ",")...), Timeout: 30 * time.Second}
	if _, err := client.DeleteTopics(context.Background(), &kafka.DeleteTopicsRequest{Topics: []string{topic}}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		resp, err := client.CreateTopics(context.Background(), &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: topic, NumPartitions: partitions, ReplicationFactor: 3}}})
		if err == nil && resp.Errors[topic] == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("recreating %s: %v %v", topic, err, resp)
		}
	}
}

// listFiles is every file below dir with its size and modification time.
func listFiles(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %d %d\n", strings.TrimPrefix(p, dir), info.Size(), info.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
