package pipeline

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/logstore/logstore/pipeline/record"
	"github.com/logstore/logstore/pipeline/start"
	"github.com/logstore/logstore/sink"
)

// filesAt is a real files sink writing into dir, partitioned by n when
// byN is set.
func filesAt(t *testing.T, dir string, byN bool) *sink.Files {
	t.Helper()
	f := false
	c := sink.Config{Files: &sink.FilesConfig{URL: dir, SpoolDir: t.TempDir(), File: &sink.FileConfig{Fsync: &f}}}
	if byN {
		c.Files.PartitionBy = []sink.PartitionColumn{{Name: "n", Column: "n"}}
	}
	s, err := sink.New(context.Background(), c, sink.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	return s.Files
}

// TestWorkerRecutKeepsTheLayoutOfItsMark: a batch cut with partition_by
// set, a crash, the config changed, a restart: the pending cut is written
// with the folders it was cut with (its partial files are overwritten, not
// left beside new ones), the next batch with the new layout.
func TestWorkerRecutKeepsTheLayoutOfItsMark(t *testing.T) {
	dir := t.TempDir()
	old, now := filesAt(t, dir, true), filesAt(t, dir, false)
	w, c, _, _ := testWorker(t, &fakeLog{values: logValues(4, nil, nil), perFetch: 10}, 100, "dead_letter")
	w.sinks, w.layout = []sink.Sink{now}, now.Layout()
	if err := w.run(context.Background(), position{Offset: 0, Cut: 1, Layout: old.Layout()}); err != nil {
		t.Fatal(err)
	}
	files := filesUnder(t, dir)
	want := []string{"n=0/t-0-0-1.parquet", "n=1/t-0-0-1.parquet", "t-0-2-3.parquet"}
	if !slices.Equal(files, want) {
		t.Errorf("files %v, want %v", files, want)
	}
	if c.calls[0].meta != start.MarkOf(1, "", old.Layout()) || c.calls[2].meta != start.MarkOf(3, "", now.Layout()) {
		t.Errorf("marks %q, %q: want each with the layout its batch was written with", c.calls[0].meta, c.calls[2].meta)
	}
}

// TestWorkerRecutStagesWithTheLayoutOfItsMark: a re-cut whose rows are
// staged into the sinks as they come (a budget far below the batch) stages
// them under the layout of its mark, into the sink its Write then closes.
func TestWorkerRecutStagesWithTheLayoutOfItsMark(t *testing.T) {
	dir := t.TempDir()
	old, now := filesAt(t, dir, true), filesAt(t, dir, false)
	w, _, _, _ := testWorker(t, &fakeLog{values: logValues(40, nil, nil), perFetch: 5}, 0, "dead_letter")
	w.sinks, w.layout = []sink.Sink{now}, now.Layout()
	w.budget = newBudget(2 * w.recordCost(&record.Record{Value: []byte(`{"n": 10}`)}))
	if err := w.run(context.Background(), position{Offset: 0, Cut: 29, Layout: old.Layout()}); err != nil {
		t.Fatal(err)
	}
	if w.stats.StagedRows.Load() < 20 {
		t.Fatalf("%d rows staged: the test wants the re-cut staged", w.stats.StagedRows.Load())
	}
	var want []string
	for n := range 30 {
		want = append(want, fmt.Sprintf("n=%d/t-0-0-29.parquet", n))
	}
	want = append(want, "t-0-30-39.parquet")
	slices.Sort(want)
	if files := filesUnder(t, dir); !slices.Equal(files, want) {
		t.Errorf("files %v, want %v", files, want)
	}
}

// TestMarkByFingerprintOnlyIsComparedWithTheLayout: a mark whose layout
// was too long to record whole names it by fingerprint alone; it was never
// compared with the current layout, so a re-cut after a layout change
// wrote the batch under the new layout's names beside the files already
// stored (issue 26). A fingerprint of another layout stops the job, before
// any file is written, saying what to restore.
func TestMarkByFingerprintOnlyIsComparedWithTheLayout(t *testing.T) {
	c := fakeCluster(t, kfake.SeedTopics(1, "logs"))
	produceN(t, c.ListenAddrs(), 0, 10)
	other := start.Fingerprint(`{"partition_by":["a long layout of another config"]}`)
	client := &kafka.Client{Addr: kafka.TCP(c.ListenAddrs()...)}
	resp, err := client.OffsetCommit(context.Background(), &kafka.OffsetCommitRequest{GroupID: "g", GenerationID: -1,
		Topics: map[string][]kafka.OffsetCommit{"logs": {{Partition: 0, Offset: 0, Metadata: "cut:4 layout:" + other}}}})
	if err != nil || resp.Topics["logs"][0].Error != nil {
		t.Fatalf("committing the mark: %v %+v", err, resp)
	}
	out := t.TempDir()
	err = runTestJobErr(t, fmt.Sprintf(`kafka: {brokers: ["%s"], topics: [logs], group: g}
rack: {providers: [static]}
schema: {columns: [{name: n, type: int64, required: true}]}
sinks: {files: {url: %q, file: {fsync: false}}}
dead_letter: {on_error: skip}
`, strings.Join(c.ListenAddrs(), `", "`), out), Mode{UntilNow: true})
	if err == nil || !strings.Contains(err.Error(), "logs/0") || !strings.Contains(err.Error(), other) || !strings.Contains(err.Error(), "restore") {
		t.Errorf("err %v: want the job stopped, naming the partition, the mark's layout and what to restore", err)
	}
	if files := filesUnder(t, out); len(files) != 0 {
		t.Errorf("files %v: want none written under another layout", files)
	}
}
