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
	"github.com/logstore/logstore/sink"
)

func TestParseMark(t *testing.T) {
	layout := `{"max_file_bytes":1}`
	const id = "b9f83c9883f442a8a19b6b7c907c4f04"
	long := strings.Repeat("x", 4000)
	tests := []struct {
		meta string
		want cutMark
	}{
		{"cut:41", cutMark{Last: 41}}, // a mark of an older version
		{"cut:41 layout:" + fingerprint(layout) + " " + layout, cutMark{Last: 41, Layout: layout, Fingerprint: fingerprint(layout)}}, // and a newer one
		{markOf(41, "", layout), cutMark{Last: 41, Layout: layout, Fingerprint: fingerprint(layout)}},
		{markOf(41, id, layout), cutMark{Last: 41, TopicID: id, Layout: layout, Fingerprint: fingerprint(layout)}},
		{markOf(41, id, ""), cutMark{Last: 41, TopicID: id}},
		{markOf(41, "", ""), cutMark{Last: 41}},
		{"cut:41 layout:000000000000 " + layout, cutMark{Last: 41, Fingerprint: "000000000000"}}, // not what was written
		{markOf(41, id, long), cutMark{Last: 41, TopicID: id, Fingerprint: fingerprint(long)}},   // too long to record: fingerprint only
		{"someone else's", cutMark{Last: -1}},
		{"", cutMark{Last: -1}},
	}
	for _, tt := range tests {
		if got := parseMark(tt.meta); got != tt.want {
			t.Errorf("parseMark(%.60q) = %+v; want %+v", tt.meta, got, tt.want)
		}
	}
	if m := markOf(41, id, long); len(m) > maxMarkBytes {
		t.Errorf("a mark of %d bytes", len(m))
	}
}

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
	if c.calls[0].meta != markOf(1, "", old.Layout()) || c.calls[2].meta != markOf(3, "", now.Layout()) {
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
	other := fingerprint(`{"partition_by":["a long layout of another config"]}`)
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

func TestCheckCutLayout(t *testing.T) {
	long := strings.Repeat("x", 4000)
	mark := parseMark(markOf(4, "", long)).at(0)
	if err := checkCutLayout("t", 0, mark, long); err != nil {
		t.Errorf("the mark's own layout: %v", err)
	}
	if err := checkCutLayout("t", 0, mark, long+"y"); err == nil {
		t.Error("another layout than the mark's fingerprint names: want an error")
	}
	if err := checkCutLayout("t", 0, parseMark("cut:4").at(0), long); err != nil {
		t.Errorf("a mark of an older version, without a layout: %v", err)
	}
}
