package pipeline

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logstore/logstore/internal/testkit"
	"github.com/logstore/logstore/pipeline/worker"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

// runJobOnce runs one `--until now` job of group on the embedded cluster,
// writing files into out.
func runJobOnce(t *testing.T, brokers []string, group, out string) {
	t.Helper()
	raw := fmt.Sprintf(`kafka: {brokers: ["%s"], topics: [logs], group: %s, start_offset: earliest}
rack: {providers: [static]}
schema: {columns: [{name: n, type: int64, required: true}]}
batch: {max_rows: 70}
sinks: {files: {url: %q, file: {fsync: false}}}
dead_letter: {files: true}
`, strings.Join(brokers, `", "`), group, out)
	runTestJob(t, raw, Mode{UntilNow: true})
}

// runTestJob runs a job of the YAML config raw to its end.
func runTestJob(t *testing.T, raw string, mode Mode) {
	t.Helper()
	if err := runTestJobErr(t, raw, mode); err != nil {
		t.Fatal(err)
	}
}

// runTestJobErr runs a job to its end and returns how it ended.
func runTestJobErr(t *testing.T, raw string, mode Mode) error {
	t.Helper()
	_, err := runTestJobStats(t, raw, mode)
	return err
}

// runTestJobStats is runTestJobErr with the job's counters.
func runTestJobStats(t *testing.T, raw string, mode Mode) (*worker.Stats, error) {
	t.Helper()
	cfg, err := Parse("test.yaml", []byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	j, err := NewJob(ctx, cfg, Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	return j.Stats(), j.Run(ctx, mode)
}

func produceN(t *testing.T, brokers []string, from, n int) {
	t.Helper()
	values := make([][]byte, n)
	for i := range values {
		values[i] = []byte(fmt.Sprintf(`{"n": %d}`, from+i))
	}
	produceValues(t, brokers, values)
}

// produceValues produces values to logs, round robin over its partitions.
func produceValues(t *testing.T, brokers []string, values [][]byte) {
	t.Helper()
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: "logs", Balancer: &kafka.RoundRobin{}, BatchTimeout: time.Millisecond, RequiredAcks: kafka.RequireAll, Transport: &kafka.Transport{}}
	defer w.Close()
	msgs := make([]kafka.Message, len(values))
	for i := range msgs {
		msgs[i].Value = values[i]
	}
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
}

// TestJobResumesFromTheOutputWithoutOffsets: a group whose offsets are
// gone (expired, deleted; here a new group name) resumes after the last
// batch in the output instead of at start_offset, so nothing is written
// twice.
func TestJobResumesFromTheOutputWithoutOffsets(t *testing.T) {
	c := testkit.FakeCluster(t, kfake.SeedTopics(2, "logs"))
	out := t.TempDir()
	produceN(t, c.ListenAddrs(), 0, 300)
	runJobOnce(t, c.ListenAddrs(), "first", out)
	produceN(t, c.ListenAddrs(), 300, 200)
	runJobOnce(t, c.ListenAddrs(), "second", out)

	// Every file is {topic}-{partition}-{first}-{last}: per partition the
	// ranges must tile [0, end) with no overlap.
	total := int64(0)
	for _, end := range filesTile(t, out) {
		total += end
	}
	if total != 500 {
		t.Errorf("files cover %d records, want 500: %v", total, fileRanges(t, out))
	}
	// A group with nothing left to read takes the output's position as
	// its own at once.
	runJobOnce(t, c.ListenAddrs(), "third", out)
	client := &kafka.Client{Addr: kafka.TCP(c.ListenAddrs()...)}
	resp, err := client.OffsetFetch(context.Background(), &kafka.OffsetFetchRequest{GroupID: "third", Topics: map[string][]int{"logs": {0, 1}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range resp.Topics["logs"] {
		if p.CommittedOffset != 250 {
			t.Errorf("group third: partition %d committed at %d, want 250", p.Partition, p.CommittedOffset)
		}
	}
}

// recreateTopic deletes logs and creates it again with partitions
// partitions: a new topic id, offsets from 0 again.
func recreateTopic(t *testing.T, brokers []string, partitions int) {
	t.Helper()
	ctx := context.Background()
	admin := &kafka.Client{Addr: kafka.TCP(brokers...)}
	if _, err := admin.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: []string{"logs"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: "logs", NumPartitions: partitions, ReplicationFactor: 1}}}); err != nil {
		t.Fatal(err)
	}
}

// filesTile checks that each partition's files in out tile [0, end) with
// no overlap and no gap, and returns each partition's end.
func filesTile(t *testing.T, out string) map[int]int64 {
	t.Helper()
	ends := map[int]int64{}
	for p, rs := range fileRanges(t, out) {
		next := int64(0)
		for _, r := range rs {
			if r[0] != next {
				t.Errorf("partition %d: files %v: a batch from %d where %d was expected (overlap or gap)", p, rs, r[0], next)
				break
			}
			next = r[1] + 1
		}
		ends[p] = next
	}
	return ends
}

// fileRanges is each partition's [first, last] per file of the output.
func fileRanges(t *testing.T, out string) map[int][][2]int64 {
	t.Helper()
	ranges := map[int][][2]int64{}
	for _, f := range testkit.FilesUnder(t, out) {
		var part int
		var first, last int64
		if _, err := fmt.Sscanf(f, "logs-%d-%d-%d.parquet", &part, &first, &last); err == nil {
			ranges[part] = append(ranges[part], [2]int64{first, last})
		}
	}
	for _, rs := range ranges {
		slices.SortFunc(rs, func(a, b [2]int64) int { return int(a[0] - b[0]) })
	}
	return ranges
}

// TestRecreatedTopicIsNotResumedFromTheOldOutput: a topic deleted and
// created again numbers its records from 0; the output's resume record of
// the old topic said next 100, and with no committed offset (Kafka drops a
// deleted topic's) the job resumed the new topic at 100: records 0-99 of
// the new log were skipped silently (issue 26). The resume record names
// the topic's id: fail stops and says the topic was recreated; earliest
// reads the new topic from its start.
func TestRecreatedTopicIsNotResumedFromTheOldOutput(t *testing.T) {
	c := testkit.FakeCluster(t, kfake.SeedTopics(1, "logs"))
	out := t.TempDir()
	config := func(group, policy string) string {
		return fmt.Sprintf(`kafka: {brokers: ["%s"], topics: [logs], group: %s, start_offset: earliest, on_offset_out_of_range: %s}
rack: {providers: [static]}
schema: {columns: [{name: n, type: int64, required: true}]}
batch: {max_rows: 70}
sinks: {files: {url: %q, file: {fsync: false}}}
dead_letter: {on_error: skip}
`, strings.Join(c.ListenAddrs(), `", "`), group, policy, out)
	}
	produceN(t, c.ListenAddrs(), 0, 100)
	runTestJob(t, config("old", "fail"), Mode{UntilNow: true})
	if got := fmt.Sprint(fileRanges(t, out)[0]); got != "[[0 69] [70 99]]" {
		t.Fatalf("files of the old topic %s", got)
	}
	recreateTopic(t, c.ListenAddrs(), 1)
	produceN(t, c.ListenAddrs(), 1000, 150) // past the old topic's next

	err := runTestJobErr(t, config("new", "fail"), Mode{UntilNow: true})
	if err == nil || !strings.Contains(err.Error(), "logs/0") || !strings.Contains(err.Error(), "recreated") || !strings.Contains(err.Error(), "holds [0, 150)") {
		t.Errorf("err %v: want the job stopped, naming the partition, a recreated topic and what it holds", err)
	}
	if got := fmt.Sprint(fileRanges(t, out)[0]); got != "[[0 69] [70 99]]" {
		t.Errorf("files %s after a stop: want the old topic's alone", got)
	}

	// As the error says: the old topic's files move elsewhere first.
	for _, f := range testkit.FilesUnder(t, out) {
		if strings.HasSuffix(f, ".parquet") {
			os.Rename(filepath.Join(out, f), filepath.Join(t.TempDir(), "old.parquet"))
		}
	}
	runTestJob(t, config("new", "earliest"), Mode{UntilNow: true})
	if got := fmt.Sprint(fileRanges(t, out)[0]); got != "[[0 69] [70 139] [140 149]]" {
		t.Errorf("files %s: want the new topic's 150 records from offset 0", got)
	}
	// The output now names the new topic: a run under fail goes on.
	produceN(t, c.ListenAddrs(), 2000, 10)
	runTestJob(t, config("new", "fail"), Mode{UntilNow: true})
	if got := fmt.Sprint(fileRanges(t, out)[0]); got != "[[0 69] [70 139] [140 149] [150 159]]" {
		t.Errorf("files %s: want the new records after the new topic's", got)
	}
}

// TestRecreatedTopicUnderLatestCountsWhatItSkips: under
// on_offset_out_of_range: latest a recreated topic is read from its end,
// and the new records skipped are counted in logstore_records_lost_total.
func TestRecreatedTopicUnderLatestCountsWhatItSkips(t *testing.T) {
	c := testkit.FakeCluster(t, kfake.SeedTopics(1, "logs"))
	out := t.TempDir()
	config := fmt.Sprintf(`kafka: {brokers: ["%s"], topics: [logs], group: %%s, start_offset: earliest, on_offset_out_of_range: latest}
rack: {providers: [static]}
schema: {columns: [{name: n, type: int64, required: true}]}
batch: {max_rows: 70}
sinks: {files: {url: %q, file: {fsync: false}}}
dead_letter: {on_error: skip}
`, strings.Join(c.ListenAddrs(), `", "`), out)
	produceN(t, c.ListenAddrs(), 0, 100)
	runTestJob(t, fmt.Sprintf(config, "old"), Mode{UntilNow: true})
	recreateTopic(t, c.ListenAddrs(), 1)
	produceN(t, c.ListenAddrs(), 1000, 40)
	stats, err := runTestJobStats(t, fmt.Sprintf(config, "new"), Mode{UntilNow: true})
	if err != nil {
		t.Fatal(err)
	}
	if lost, resets := stats.LostRecords.Load(), stats.OffsetResets.Load(); lost != 40 || resets != 1 {
		t.Errorf("%d records counted lost in %d resets, want the new topic's 40 in one", lost, resets)
	}
	if got := fmt.Sprint(fileRanges(t, out)[0]); got != "[[0 69] [70 99]]" {
		t.Errorf("files %s: want the old topic's alone (the new one read from its end)", got)
	}
	produceN(t, c.ListenAddrs(), 2000, 5)
	runTestJob(t, fmt.Sprintf(config, "new"), Mode{UntilNow: true})
	if got := fmt.Sprint(fileRanges(t, out)[0]); got != "[[0 69] [40 44] [70 99]]" {
		t.Errorf("files %s: want the records after the new topic's end when the job started", got)
	}
}
