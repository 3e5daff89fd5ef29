package worker

import (
	"context"
	"fmt"
	"testing"

	"github.com/logstore/logstore/pipeline/start"
	"github.com/logstore/logstore/sink"
)

// fakeResume keeps records in memory and notes how many commits had been
// made when each was saved.
type fakeResume struct {
	records map[string]ResumeRecord
	saved   []string
	commits *fakeCommitter
}

func (*fakeResume) OfEveryOutput() bool { return true }

func (f *fakeResume) SaveResume(_ context.Context, r ResumeRecord) error {
	f.records[fmt.Sprint(r.Topic, "/", r.Partition)] = r
	writing := ""
	if r.Mark != "" {
		writing = " writing"
	}
	f.saved = append(f.saved, fmt.Sprintf("%d-%d%s@%d", r.First, r.Last, writing, len(f.commits.calls)))
	return nil
}

func (f *fakeResume) LoadResume(_ context.Context, topic string, partition int) (ResumeRecord, bool, error) {
	r, ok := f.records[fmt.Sprint(topic, "/", partition)]
	return r, ok, nil
}

// TestWorkerSavesWhereTheOutputIs: each batch's resume record is saved
// after its files and before its commit of last+1 (after the mark: the
// 1st, 3rd, ... commit), so no committed offset is ever ahead of it; and,
// between the mark and the files, a record that the batch is being written.
func TestWorkerSavesWhereTheOutputIs(t *testing.T) {
	w, c, s, _ := testWorker(t, &fakeLog{values: logValues(5, nil, []int64{4}), perFetch: 10}, 2, "dead_letter")
	r := &fakeResume{records: map[string]ResumeRecord{}, commits: c}
	w.Resume = r
	if err := w.Run(context.Background(), position{Offset: 0, Cut: -1}); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(r.saved); got != "[0-1 writing@1 0-1@1 2-3 writing@3 2-3@3]" {
		t.Errorf("saved %s (batches %v), want each batch after its mark and before its commit", got, s.batches)
	}
	if rec, ok, _ := r.LoadResume(context.Background(), "t", 0); !ok || rec.Next != 4 {
		t.Errorf("record %+v: want next 4 (the gap at 4 writes no file)", rec)
	}
}

// failingSink records the batches it is given and fails every write, as a
// process killed while it uploads a batch's files does.
type failingSink struct{ fakeSink }

func (f *failingSink) Write(ctx context.Context, b *sink.Batch) error {
	f.fakeSink.Write(ctx, b)
	return FatalError{fmt.Errorf("killed while writing")}
}

// TestOutputRemembersABatchBeingWritten: a member dies while it writes a
// batch (its mark committed, some files stored), then the group loses its
// offsets with the mark (deleted, expired). The output must still say which
// batch was being written, so the next run re-cuts exactly it and overwrites
// those files under the same names: resuming after the last whole batch cut
// the records at other offsets and wrote them twice (the chaos suite's long
// run: 1,500 records twice in a partition after the group was deleted).
func TestOutputRemembersABatchBeingWritten(t *testing.T) {
	w, c, _, _ := testWorker(t, &fakeLog{values: logValues(100, nil, nil), perFetch: 100}, 40, "dead_letter")
	r := &fakeResume{records: map[string]ResumeRecord{}, commits: c}
	s := &failingSink{}
	w.Resume, w.Sinks, w.Target = r, []sink.Sink{s}, -1
	if err := w.Run(context.Background(), position{Offset: 0, Cut: -1}); err == nil {
		t.Fatal("the run went on after its sink failed")
	}
	rec, ok, _ := r.LoadResume(context.Background(), "t", 0)
	if !ok {
		t.Fatal("no resume record")
	}
	got, err := start.Decide(start.Known{Topic: "t", Group: start.None, Files: rec.Known()})
	if err != nil {
		t.Fatal(err)
	}
	if got.Offset != 0 || got.Cut != 39 {
		t.Errorf("sink saw %v; with the group's offsets gone the run starts at %+v, want a re-cut of 0-39", s.batches, got)
	}
}
