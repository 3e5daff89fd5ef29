package pipeline

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

func TestReconcile(t *testing.T) {
	tests := []struct {
		name     string
		group    position
		out      resumeRecord
		ok       bool
		want     position
		wantNote string
	}{
		{name: "no output record", group: position{Offset: 40, Cut: -1}, want: position{Offset: 40, Cut: -1}},
		{name: "the group's offsets expired", group: position{Offset: -1, Cut: -1}, out: resumeRecord{First: 30, Next: 40}, ok: true,
			want: position{Offset: 40, Cut: -1}, wantNote: "offsets.retention.minutes"},
		{name: "they agree", group: position{Offset: 40, Cut: -1}, out: resumeRecord{First: 30, Next: 40}, ok: true, want: position{Offset: 40, Cut: -1}},
		{name: "the group is ahead (filtered batches write no file)", group: position{Offset: 90, Cut: -1}, out: resumeRecord{First: 30, Next: 40}, ok: true,
			want: position{Offset: 90, Cut: -1}},
		{name: "a pending cut not in the output is re-cut", group: position{Offset: 40, Cut: 49}, out: resumeRecord{First: 30, Next: 40}, ok: true,
			want: position{Offset: 40, Cut: 49}},
		{name: "a pending cut the output holds whole", group: position{Offset: 40, Cut: 49}, out: resumeRecord{First: 40, Next: 50}, ok: true,
			want: position{Offset: 50, Cut: -1}},
		{name: "the group was reset behind the output", group: position{Offset: 0, Cut: -1}, out: resumeRecord{First: 30, Next: 40}, ok: true,
			want: position{Offset: 40, Cut: -1}, wantNote: "behind the output"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, note := reconcile(tt.group, tt.out, tt.ok)
			if got != tt.want {
				t.Errorf("start %+v, want %+v", got, tt.want)
			}
			if (tt.wantNote == "") != (note == "") || !strings.Contains(note, tt.wantNote) {
				t.Errorf("note %q, want one saying %q", note, tt.wantNote)
			}
		})
	}
}

// fakeResume keeps records in memory and notes how many commits had been
// made when each was saved.
type fakeResume struct {
	records map[string]resumeRecord
	saved   []string
	commits *fakeCommitter
}

func (f *fakeResume) saveResume(_ context.Context, r resumeRecord) error {
	f.records[fmt.Sprint(r.Topic, "/", r.Partition)] = r
	f.saved = append(f.saved, fmt.Sprintf("%d-%d@%d", r.First, r.Last, len(f.commits.calls)))
	return nil
}

func (f *fakeResume) loadResume(_ context.Context, topic string, partition int) (resumeRecord, bool, error) {
	r, ok := f.records[fmt.Sprint(topic, "/", partition)]
	return r, ok, nil
}

// TestWorkerSavesWhereTheOutputIs: each batch's resume record is saved
// after its files and before its commit of last+1 (after the mark: the
// 1st, 3rd, ... commit), so no committed offset is ever ahead of it.
func TestWorkerSavesWhereTheOutputIs(t *testing.T) {
	w, c, s, _ := testWorker(t, &fakeLog{values: logValues(5, nil, []int64{4}), perFetch: 10}, 2, "dead_letter")
	r := &fakeResume{records: map[string]resumeRecord{}, commits: c}
	w.resume = r
	if err := w.run(context.Background(), position{Offset: 0, Cut: -1}); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(r.saved); got != "[0-1@1 2-3@3]" {
		t.Errorf("saved %s (batches %v), want each batch after its mark and before its commit", got, s.batches)
	}
	if rec, ok, _ := r.loadResume(context.Background(), "t", 0); !ok || rec.Next != 4 {
		t.Errorf("record %+v: want next 4 (the gap at 4 writes no file)", rec)
	}
}
