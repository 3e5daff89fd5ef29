package worker

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/logstore/logstore/internal/testkit"
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
	w.Sinks, w.Layout = []sink.Sink{now}, now.Layout()
	if err := w.Run(context.Background(), position{Offset: 0, Cut: 1, Layout: old.Layout()}); err != nil {
		t.Fatal(err)
	}
	files := testkit.FilesUnder(t, dir)
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
	w.Sinks, w.Layout = []sink.Sink{now}, now.Layout()
	w.Budget = NewBudget(2 * w.recordCost(&record.Record{Value: []byte(`{"n": 10}`)}))
	if err := w.Run(context.Background(), position{Offset: 0, Cut: 29, Layout: old.Layout()}); err != nil {
		t.Fatal(err)
	}
	if w.Stats.StagedRows.Load() < 20 {
		t.Fatalf("%d rows staged: the test wants the re-cut staged", w.Stats.StagedRows.Load())
	}
	var want []string
	for n := range 30 {
		want = append(want, fmt.Sprintf("n=%d/t-0-0-29.parquet", n))
	}
	want = append(want, "t-0-30-39.parquet")
	slices.Sort(want)
	if files := testkit.FilesUnder(t, dir); !slices.Equal(files, want) {
		t.Errorf("files %v, want %v", files, want)
	}
}
