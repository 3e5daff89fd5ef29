package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/logstore/logstore/pipeline/decode"
	"github.com/logstore/logstore/pipeline/fetch"
	"github.com/logstore/logstore/pipeline/record"
	"github.com/logstore/logstore/sink"
)

// fakeLog is a partition: offsets 0..len-1, a nil value is a gap (a control
// record or an aborted one that the reader skips).
type fakeLog struct {
	values   [][]byte
	pos      int64
	perFetch int
	logStart int64 // offsets below were deleted by retention
}

func (f *fakeLog) SetOffset(o int64) { f.pos = o }
func (f *fakeLog) Offset() int64     { return f.pos }
func (f *fakeLog) Close() error      { return nil }

func (f *fakeLog) Fetch(ctx context.Context) ([]record.Record, int64, error) {
	end := int64(len(f.values))
	if f.pos < f.logStart || f.pos > end {
		return nil, end, &fetch.OffsetOutOfRangeError{Offset: f.pos, LogStart: f.logStart, LogEnd: end}
	}
	if f.pos == end {
		<-ctx.Done() // a long poll at the end of the log
		return nil, end, ctx.Err()
	}
	var msgs []record.Record
	for ; f.pos < end && len(msgs) < f.perFetch; f.pos++ {
		if f.values[f.pos] != nil {
			msgs = append(msgs, record.Record{Topic: "t", Partition: 0, Offset: f.pos, Value: f.values[f.pos]})
		}
	}
	return msgs, end, nil
}

type commitCall struct {
	offset int64
	meta   string
}

type fakeCommitter struct {
	calls  []commitCall
	failAt int // fail the n-th call (1-based) with errFenced; 0 never
}

func (f *fakeCommitter) Commit(_ context.Context, _ string, _ int, offset int64, meta string) error {
	f.calls = append(f.calls, commitCall{offset, meta})
	if len(f.calls) == f.failAt {
		return errFenced
	}
	return nil
}

type fakeSink struct{ batches []string }

func (f *fakeSink) Write(_ context.Context, b *sink.Batch) error {
	f.batches = append(f.batches, fmt.Sprintf("%d-%d:%d", b.First, b.Last, len(b.Rows)))
	return nil
}
func (f *fakeSink) Close() error { return nil }

type fakeDead struct{ batches []string }

func (f *fakeDead) writeDeadLetters(_ context.Context, b *deadBatch) error {
	f.batches = append(f.batches, fmt.Sprintf("%d-%d:%d", b.First, b.Last, len(b.Letters)))
	return nil
}

// logValues makes n records; the offsets in bad are malformed, in gaps absent.
func logValues(n int, bad, gaps []int64) [][]byte {
	vs := make([][]byte, n)
	for i := range vs {
		vs[i] = []byte(fmt.Sprintf(`{"n": %d}`, i))
	}
	for _, o := range bad {
		vs[o] = []byte("not json")
	}
	for _, o := range gaps {
		vs[o] = nil
	}
	return vs
}

func testWorker(t *testing.T, log *fakeLog, maxRows int, onError string) (*Worker, *fakeCommitter, *fakeSink, *fakeDead) {
	t.Helper()
	dec, err := decode.New(decode.SchemaConfig{Columns: []decode.ColumnConfig{{Name: "n", Type: "int64", Required: true}}})
	if err != nil {
		t.Fatal(err)
	}
	c, s, d := &fakeCommitter{}, &fakeSink{}, &fakeDead{}
	return &Worker{Config: Config{
		Topic: "t", Reader: log, Decoder: dec, Columns: len(dec.Schema().Fields), Commit: c, Sinks: []sink.Sink{s}, Dead: []DeadLetterWriter{d},
		OnError: onError, OnOutOfRange: "fail", Limits: Limits{MaxRows: maxRows, MaxBytes: 1 << 30, MaxAge: time.Hour},
		Budget: NewBudget(1 << 30), Stats: NewStats(), Target: int64(len(log.values)), FlushWait: time.Second,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}}, c, s, d
}

func TestWorkerCommitProtocol(t *testing.T) {
	tests := []struct {
		name        string
		log         *fakeLog
		maxRows     int
		start       position
		wantBatches []string // first-last:rows written to the sink
		wantDead    []string
		wantCommits []commitCall
	}{
		{
			name: "mark, write, commit per batch; cut at max_rows inside a fetch",
			log:  &fakeLog{values: logValues(5, nil, nil), perFetch: 10}, maxRows: 2, start: position{Offset: 0, Cut: -1},
			wantBatches: []string{"0-1:2", "2-3:2", "4-4:1"},
			wantCommits: []commitCall{{0, "cut:1"}, {2, ""}, {2, "cut:3"}, {4, ""}, {4, "cut:4"}, {5, ""}},
		},
		{
			name: "a pending cut is re-cut exactly, whatever max_rows says",
			log:  &fakeLog{values: logValues(6, nil, nil), perFetch: 1}, maxRows: 2, start: position{Offset: 1, Cut: 4},
			wantBatches: []string{"1-4:4", "5-5:1"},
			wantCommits: []commitCall{{1, "cut:4"}, {5, ""}, {5, "cut:5"}, {6, ""}},
		},
		{
			name: "a pending cut in the middle of a fetch splits it there",
			log:  &fakeLog{values: logValues(6, nil, nil), perFetch: 10}, maxRows: 100, start: position{Offset: 1, Cut: 3},
			wantBatches: []string{"1-3:3", "4-5:2"},
			wantCommits: []commitCall{{1, "cut:3"}, {4, ""}, {4, "cut:5"}, {6, ""}},
		},
		{
			name: "a stale mark below the committed offset is ignored",
			log:  &fakeLog{values: logValues(3, nil, nil), perFetch: 5}, maxRows: 10, start: position{Offset: 2, Cut: 1},
			wantBatches: []string{"2-2:1"},
			wantCommits: []commitCall{{2, "cut:2"}, {3, ""}},
		},
		{
			name: "dead letters travel with their batch and count toward max_rows",
			log:  &fakeLog{values: logValues(4, []int64{1, 2}, nil), perFetch: 10}, maxRows: 2, start: position{Offset: 0, Cut: -1},
			wantBatches: []string{"0-1:1", "2-3:1"},
			wantDead:    []string{"0-1:1", "2-3:1"},
			wantCommits: []commitCall{{0, "cut:1"}, {2, ""}, {2, "cut:3"}, {4, ""}},
		},
		{
			name: "skipped offsets (control records) are covered by the cut",
			log:  &fakeLog{values: logValues(5, nil, []int64{3, 4}), perFetch: 10}, maxRows: 10, start: position{Offset: 0, Cut: -1},
			wantBatches: []string{"0-4:3"},
			wantCommits: []commitCall{{0, "cut:4"}, {5, ""}},
		},
		{
			name: "a batch of only gaps commits without a mark or a file",
			log:  &fakeLog{values: logValues(2, nil, []int64{0, 1}), perFetch: 10}, maxRows: 10, start: position{Offset: 0, Cut: -1},
			wantCommits: []commitCall{{2, ""}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, c, s, d := testWorker(t, tt.log, tt.maxRows, "dead_letter")
			if err := w.Run(context.Background(), tt.start); err != nil {
				t.Fatal(err)
			}
			if !w.reached {
				t.Error("the worker stopped before its target")
			}
			if fmt.Sprint(s.batches) != fmt.Sprint(tt.wantBatches) {
				t.Errorf("batches %v, want %v", s.batches, tt.wantBatches)
			}
			if fmt.Sprint(d.batches) != fmt.Sprint(tt.wantDead) {
				t.Errorf("dead letters %v, want %v", d.batches, tt.wantDead)
			}
			if fmt.Sprint(c.calls) != fmt.Sprint(tt.wantCommits) {
				t.Errorf("commits %v, want %v", c.calls, tt.wantCommits)
			}
		})
	}
}

func TestWorkerOnError(t *testing.T) {
	w, _, s, d := testWorker(t, &fakeLog{values: logValues(3, []int64{1}, nil), perFetch: 10}, 10, "skip")
	if err := w.Run(context.Background(), position{Offset: 0, Cut: -1}); err != nil {
		t.Fatal(err)
	}
	if len(d.batches) != 0 || fmt.Sprint(s.batches) != "[0-2:2]" || w.Stats.Skipped.Load() != 1 {
		t.Errorf("skip: sink %v, dead %v, skipped %d", s.batches, d.batches, w.Stats.Skipped.Load())
	}
	w, c, _, _ := testWorker(t, &fakeLog{values: logValues(3, []int64{1}, nil), perFetch: 10}, 10, "fail")
	err := w.Run(context.Background(), position{Offset: 0, Cut: -1})
	if err == nil || !strings.Contains(err.Error(), "offset 1") || len(c.calls) != 0 {
		t.Errorf("fail: err %v, commits %v; want an error naming offset 1 and no commit", err, c.calls)
	}
}

func TestWorkerFencedWritesNothing(t *testing.T) {
	w, c, s, _ := testWorker(t, &fakeLog{values: logValues(3, nil, nil), perFetch: 10}, 10, "dead_letter")
	c.failAt = 1 // the mark is refused: the group moved on
	err := w.Run(context.Background(), position{Offset: 0, Cut: -1})
	if !errors.Is(err, errFenced) || len(s.batches) != 0 {
		t.Errorf("err %v, batches %v; a fenced member must write nothing", err, s.batches)
	}
}

func TestWorkerOffsetOutOfRange(t *testing.T) {
	for _, policy := range []string{"fail", "earliest", "latest"} {
		t.Run(policy, func(t *testing.T) {
			log := &fakeLog{values: logValues(6, nil, nil), perFetch: 10, logStart: 3}
			w, _, s, _ := testWorker(t, log, 10, "dead_letter")
			w.OnOutOfRange = policy
			err := w.Run(context.Background(), position{Offset: 1, Cut: -1})
			switch policy {
			case "fail":
				if err == nil || !strings.Contains(err.Error(), "on_offset_out_of_range: earliest") {
					t.Errorf("err %v; want a fatal error that says what to set", err)
				}
			case "earliest":
				if err != nil || fmt.Sprint(s.batches) != "[3-5:3]" || w.Stats.LostRecords.Load() != 2 {
					t.Errorf("err %v, batches %v, lost %d; want 3-5 and 2 lost", err, s.batches, w.Stats.LostRecords.Load())
				}
			case "latest":
				if err != nil || len(s.batches) != 0 || w.Stats.LostRecords.Load() != 5 {
					t.Errorf("err %v, batches %v, lost %d; want nothing read and 5 lost", err, s.batches, w.Stats.LostRecords.Load())
				}
			}
		})
	}
}

func TestWorkerBudgetCutsEarly(t *testing.T) {
	log := &fakeLog{values: logValues(10, nil, nil), perFetch: 10}
	w, _, s, _ := testWorker(t, log, 100, "dead_letter")
	w.Budget = NewBudget(3 * w.recordCost(&record.Record{Value: []byte(`{"n": 0}`)}))
	var logged bytes.Buffer
	w.Log = slog.New(slog.NewTextHandler(&logged, nil))
	if err := w.Run(context.Background(), position{Offset: 0, Cut: -1}); err != nil {
		t.Fatal(err)
	}
	if len(s.batches) < 3 || w.Stats.BudgetCuts.Load() == 0 {
		t.Errorf("batches %v, budget cuts %d: a full budget must cut batches early", s.batches, w.Stats.BudgetCuts.Load())
	}
	// A file smaller than the flush rule asks for has its reason in the log.
	if n := strings.Count(logged.String(), `msg="batch cut: the memory budget"`); n != int(w.Stats.BudgetCuts.Load()) {
		t.Errorf("%d log lines for %d budget cuts: each cut the budget forces is said", n, w.Stats.BudgetCuts.Load())
	}
}

func TestWorkerStopFlushes(t *testing.T) {
	log := &fakeLog{values: logValues(4, nil, nil), perFetch: 10}
	w, c, s, _ := testWorker(t, log, 100, "dead_letter")
	w.Target = -1 // streaming
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for w.Stats.Records.Load() < 4 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	if err := w.Run(ctx, position{Offset: 0, Cut: -1}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(s.batches) != "[0-3:4]" || c.calls[len(c.calls)-1] != (commitCall{4, ""}) {
		t.Errorf("batches %v, commits %v: a stop must flush and commit what it holds", s.batches, c.calls)
	}
}

// TestWorkerPacesRecordsNotFetches: max_records_per_second lets records
// through as the rate allows, a burst at a time; it does not hold a whole
// fetch back until the rate would have allowed all of it (a 1 MiB fetch of
// small logs at 100 records/s took nothing for 40 s, and a low rate looked
// like a stall).
func TestWorkerPacesRecordsNotFetches(t *testing.T) {
	log := &fakeLog{values: logValues(1000, nil, nil), perFetch: 1000}
	w, c, _, _ := testWorker(t, log, 0, "dead_letter")
	w.Target = -1
	w.Limiter = rate.NewLimiter(100, 10) // the whole fetch: 10 s
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := w.Run(ctx, position{Offset: 0, Cut: -1}); err != nil {
		t.Fatal(err)
	}
	taken := w.Stats.Records.Load()
	if taken < 10 || taken > 100 {
		t.Errorf("%d records taken in 300 ms at 100/s with bursts of 10: want the first burst at once and the rest paced", taken)
	}
	if last := c.calls[len(c.calls)-1]; last.offset != taken {
		t.Errorf("last commit %+v, want %d: the stop flushes what was taken", last, taken)
	}
}

// TestWorkerPacedBatchHonoursMaxAge: with max_records_per_second, a batch
// is cut at max_age while the records of one fetch are paced, not when the
// whole fetch has been taken. Before, a 1 MiB fetch at 100 records/s held
// its batch open for its 25 s; a member restarted more often than that
// re-read the same batch for ever (TestChaos: a partition still for 83 s).
func TestWorkerPacedBatchHonoursMaxAge(t *testing.T) {
	log := &fakeLog{values: logValues(1000, nil, nil), perFetch: 1000}
	w, c, s, _ := testWorker(t, log, 0, "dead_letter")
	w.Target = -1
	w.Limits.MaxAge = 100 * time.Millisecond
	w.Limiter = rate.NewLimiter(100, 10) // the whole fetch: 10 s
	ctx, cancel := context.WithTimeout(context.Background(), 550*time.Millisecond)
	defer cancel()
	if err := w.Run(ctx, position{Offset: 0, Cut: -1}); err != nil {
		t.Fatal(err)
	}
	// 550 ms of a 10 s fetch: about five batches cut at 100 ms, and the
	// stop's own.
	if len(s.batches) < 4 || len(c.calls) < 4 {
		t.Errorf("batches %v, commits %v: a paced fetch must cut its batch every max_age (100 ms)", s.batches, c.calls)
	}
}

// blockingTable is a table whose snapshot (the Write after WriteFiles)
// waits until its context ends: a catalog that does not answer.
type blockingTable struct{ fakeSink }

func (b *blockingTable) Commits() sink.CommitWay { return sink.CommitsBySnapshot }
func (b *blockingTable) TablePosition(context.Context, string, int) (sink.TablePosition, bool, error) {
	return sink.TablePosition{}, false, nil
}
func (b *blockingTable) WriteFiles(context.Context, *sink.Batch) (bool, error) { return false, nil }
func (b *blockingTable) Write(ctx context.Context, _ *sink.Batch) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestWorkerEndingOnAnErrorEndsItsBatchInTheCycle: the batch ahead's
// snapshot waits on an unanswering catalog while the partition reads on
// and meets a record on_error: fail stops at. The worker must end with
// that error, ending the batch ahead's commit (the next owner reads it
// again), not wait for the commit: the job ends its partitions' contexts
// only once a worker has returned.
func TestWorkerEndingOnAnErrorEndsItsBatchInTheCycle(t *testing.T) {
	w, _, _, _ := testWorker(t, &fakeLog{values: logValues(10, []int64{5}, nil), perFetch: 10}, 3, "fail")
	w.Sinks = []sink.Sink{&blockingTable{}}
	done := make(chan error, 1)
	go func() { done <- w.Run(context.Background(), position{Offset: 0, Cut: -1}) }()
	select {
	case err := <-done:
		if !errors.As(err, new(FatalError)) {
			t.Errorf("the worker ended with %v, want on_error: fail's error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the worker did not end: it waits for the commit of the batch in the cycle")
	}
	if used := w.Budget.inUse(); used != 0 {
		t.Errorf("%d bytes of the budget still held", used)
	}
}
