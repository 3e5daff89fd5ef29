package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logstore/logstore/sink"
)

// refusingSink refuses the rows of the given offsets for good: in
// CheckRows when check is set (as the Files and Kafka sinks do), else only
// when Write meets them.
type refusingSink struct {
	fakeSink
	refuse map[int64]bool
	check  bool
	writes int
}

func (r *refusingSink) refused(b *sink.Batch) []*sink.RowError {
	var out []*sink.RowError
	for i, s := range b.Sources {
		if r.refuse[s.Offset] {
			out = append(out, &sink.RowError{Topic: b.Topic, Index: i, Offset: s.Offset, Err: errors.New("too big")})
		}
	}
	return out
}

func (r *refusingSink) CheckRows(b *sink.Batch) []*sink.RowError {
	if !r.check {
		return nil
	}
	return r.refused(b)
}

func (r *refusingSink) Write(ctx context.Context, b *sink.Batch) error {
	r.writes++
	if errs := r.refused(b); errs != nil {
		return sink.RowErrors(errs)
	}
	return r.fakeSink.Write(ctx, b)
}

// letterDead records each dead letter's offset and reason.
type letterDead struct{ letters []string }

func (d *letterDead) writeDeadLetters(_ context.Context, b *deadBatch) error {
	for _, l := range b.Letters {
		d.letters = append(d.letters, fmt.Sprintf("%d-%d/%d:%s", b.First, b.Last, l.Record.Offset, l.Reason))
	}
	return nil
}

func TestWorkerRefusedRowsGoToTheDeadLetters(t *testing.T) {
	tests := []struct {
		name        string
		check       bool
		bad         []int64 // malformed records
		wantBatches []string
		wantLetters []string // first-last/offset
	}{
		{name: "refused before any write", check: true,
			wantBatches: []string{"0-5:4"}, wantLetters: []string{"0-5/2", "0-5/4"}},
		{name: "refused by a write", check: false,
			wantBatches: []string{"0-5:4"}, wantLetters: []string{"0-5/2", "0-5/4"}},
		{name: "with a malformed record, in offset order", check: true, bad: []int64{3},
			wantBatches: []string{"0-5:3"}, wantLetters: []string{"0-5/2", "0-5/3", "0-5/4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Twice: a re-cut of the same batch must give the same output.
			for run := 0; run < 2; run++ {
				w, c, _, _ := testWorker(t, &fakeLog{values: logValues(6, tt.bad, nil), perFetch: 10}, 100, "dead_letter")
				s := &refusingSink{refuse: map[int64]bool{2: true, 4: true}, check: tt.check}
				d := &letterDead{}
				w.Sinks, w.Dead = []sink.Sink{s}, []DeadLetterWriter{d}
				start := position{Offset: 0, Cut: -1}
				if run == 1 {
					start = position{Offset: 0, Cut: 5}
				}
				if err := w.Run(context.Background(), start); err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(s.batches) != fmt.Sprint(tt.wantBatches) {
					t.Errorf("run %d: batches %v, want %v", run, s.batches, tt.wantBatches)
				}
				var got []string
				for _, l := range d.letters {
					at, reason, _ := strings.Cut(l, ":")
					got = append(got, at)
					if !strings.Contains(l, "/3:") && !strings.Contains(reason, "too big") {
						t.Errorf("dead letter %s: want the sink's reason", l)
					}
				}
				if !slices.Equal(got, tt.wantLetters) {
					t.Errorf("run %d: dead letters %v, want %v", run, got, tt.wantLetters)
				}
				if last := c.calls[len(c.calls)-1]; last != (commitCall{6, ""}) {
					t.Errorf("run %d: last commit %v, want 6: a refused row must not hold the partition", run, last)
				}
				if n := w.Stats.Refused.Load(); n != 2 {
					t.Errorf("run %d: %d refused rows counted, want 2", run, n)
				}
			}
		})
	}
}

// flakySink fails its first writes with an outage.
type flakySink struct {
	fakeSink
	fail  int
	tries int
}

func (f *flakySink) Write(ctx context.Context, b *sink.Batch) error {
	f.tries++
	if f.fail > 0 {
		f.fail--
		return errors.New("503 slow down")
	}
	return f.fakeSink.Write(ctx, b)
}

func TestWorkerTransientSinkErrorsHoldAndCount(t *testing.T) {
	w, c, _, _ := testWorker(t, &fakeLog{values: logValues(3, nil, nil), perFetch: 10}, 100, "dead_letter")
	s := &flakySink{fail: 2}
	w.Sinks = []sink.Sink{s}
	if err := w.Run(context.Background(), position{Offset: 0, Cut: -1}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(s.batches) != "[0-2:3]" || w.Stats.Refused.Load() != 0 || fmt.Sprint(c.calls) != "[{0 cut:2} {3 }]" {
		t.Errorf("batches %v, refused %d, commits %v: an outage is retried, never refused", s.batches, w.Stats.Refused.Load(), c.calls)
	}
	if s.tries != 3 {
		t.Errorf("%d writes, want 3: two failures retried, then the batch", s.tries)
	}
}

// blockedSink holds every write until released, like an S3 outage.
type blockedSink struct {
	fakeSink
	entered chan struct{}
	release chan struct{}
}

func (b *blockedSink) Write(ctx context.Context, batch *sink.Batch) error {
	b.entered <- struct{}{}
	<-b.release
	return b.fakeSink.Write(ctx, batch)
}

func TestWorkerReportsTheOldestUncommittedBatch(t *testing.T) {
	w, _, _, _ := testWorker(t, &fakeLog{values: logValues(3, nil, nil), perFetch: 10}, 100, "dead_letter")
	progress := &fakeProgress{}
	w.Progress = progress
	s := &blockedSink{entered: make(chan struct{}), release: make(chan struct{})}
	w.Sinks = []sink.Sink{s}
	done := make(chan error)
	go func() { done <- w.Run(context.Background(), position{Offset: 0, Cut: -1}) }()
	<-s.entered
	if since := progress.pendingSince.Load(); since == 0 || since > time.Now().UnixNano() {
		t.Errorf("while the sink holds the batch: held since %d, want a time before now", since)
	}
	close(s.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if since := progress.pendingSince.Load(); since != 0 {
		t.Errorf("after the batch was committed: held since %d, want 0", since)
	}
}
