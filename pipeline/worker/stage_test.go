package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/logstore/logstore/pipeline/record"
	"github.com/logstore/logstore/sink"
)

// fakeStager is a sink that takes rows before the cut, noting how much of
// the budget was in use each time.
type fakeStager struct {
	budget  *Budget
	staged  []string // first:staged+rows per Stage call
	batches []string // first-last:staged+rows per Write
	rows    int      // rows taken, staged or written
	maxUse  int64
	fullAt  int // say full once this many rows were staged (0: never)
	discard int
}

func (f *fakeStager) Stage(_ context.Context, b *sink.Batch) (bool, error) {
	f.maxUse = max(f.maxUse, f.budget.inUse())
	f.staged = append(f.staged, fmt.Sprintf("%d:%d+%d", b.First, b.Staged, len(b.Rows)))
	f.rows += len(b.Rows)
	return f.fullAt > 0 && b.Staged+len(b.Rows) >= f.fullAt, nil
}

func (f *fakeStager) Write(_ context.Context, b *sink.Batch) error {
	f.batches = append(f.batches, fmt.Sprintf("%d-%d:%d+%d", b.First, b.Last, b.Staged, len(b.Rows)))
	f.rows += len(b.Rows)
	return nil
}

func (f *fakeStager) Discard(string, int, string) { f.discard++ }
func (f *fakeStager) Close() error                { return nil }

// countingLog checks, at every fetch, that the worker holds a reservation
// for it: fetching waits for the budget, not the other way round.
type countingLog struct {
	*fakeLog
	w         *Worker
	fetches   int
	unreserve int
}

func (c *countingLog) Fetch(ctx context.Context) ([]record.Record, int64, error) {
	c.fetches++
	if c.w.fetchHeld <= 0 {
		c.unreserve++
	}
	return c.fakeLog.Fetch(ctx)
}

// TestWorkerStagesInsteadOfCutting: with sinks that stage, a budget far
// smaller than the batch neither cuts the batch early nor is overrun by
// more than a record: rows go to the sinks in chunks and the batch is cut
// once, at its end.
func TestWorkerStagesInsteadOfCutting(t *testing.T) {
	log := &fakeLog{values: logValues(5000, []int64{7}, nil), perFetch: 100}
	w, c, _, d := testWorker(t, log, 0, "dead_letter")
	cost := w.recordCost(&record.Record{Value: []byte(`{"n": 1000}`)})
	w.Budget = NewBudget(16 << 10) // ~ 80 records; the batch is 5,000
	s := &fakeStager{budget: w.Budget}
	w.Sinks = []sink.Sink{s}
	if err := w.Run(context.Background(), position{Offset: 0, Cut: -1}); err != nil {
		t.Fatal(err)
	}
	if len(s.batches) != 1 || !strings.HasPrefix(s.batches[0], "0-4999:") || s.rows != 4999 {
		t.Errorf("batches %v, %d rows: want one batch 0-4999 with all 4999 good rows", s.batches, s.rows)
	}
	if len(s.staged) < 10 || w.Stats.BudgetCuts.Load() != 0 {
		t.Errorf("%d stages, %d budget cuts: rows must be staged, not cut", len(s.staged), w.Stats.BudgetCuts.Load())
	}
	if s.maxUse > w.Budget.size+cost {
		t.Errorf("budget in use up to %d, size %d: over by more than a record", s.maxUse, w.Budget.size)
	}
	if fmt.Sprint(d.batches) != "[0-4999:1]" || c.calls[len(c.calls)-1] != (commitCall{5000, ""}) {
		t.Errorf("dead letters %v, commits %v", d.batches, c.calls)
	}
	if w.Budget.inUse() != 0 {
		t.Errorf("%d bytes of the budget still held after the run", w.Budget.inUse())
	}
}

// TestWorkerCutsWhenTheSinkIsFull: a stager that reached its target size
// (a file of target_file_bytes) cuts the batch there.
func TestWorkerCutsWhenTheSinkIsFull(t *testing.T) {
	log := &fakeLog{values: logValues(1000, nil, nil), perFetch: 50}
	w, _, _, _ := testWorker(t, log, 0, "dead_letter")
	w.Budget = NewBudget(4 << 10)
	s := &fakeStager{budget: w.Budget, fullAt: 300}
	w.Sinks = []sink.Sink{s}
	if err := w.Run(context.Background(), position{Offset: 0, Cut: -1}); err != nil {
		t.Fatal(err)
	}
	if len(s.batches) < 3 || s.rows != 1000 {
		t.Errorf("batches %v, %d rows: want a cut every ~300 rows", s.batches, s.rows)
	}
}

// TestWorkerReservesBeforeFetching: every fetch happens with its bytes
// already taken from the budget, and a spent budget stops the fetching.
func TestWorkerReservesBeforeFetching(t *testing.T) {
	fl := &fakeLog{values: logValues(3000, nil, nil), perFetch: 100}
	w, _, _, _ := testWorker(t, fl, 0, "dead_letter")
	log := &countingLog{fakeLog: fl, w: w}
	w.Reader = log
	w.FetchMax = 1 << 20
	w.Budget = NewBudget(64 << 10)
	w.Sinks = []sink.Sink{&fakeStager{budget: w.Budget}}
	if err := w.Run(context.Background(), position{Offset: 0, Cut: -1}); err != nil {
		t.Fatal(err)
	}
	if log.fetches == 0 || log.unreserve != 0 {
		t.Errorf("%d of %d fetches without a reservation", log.unreserve, log.fetches)
	}
	if w.Budget.inUse() != 0 {
		t.Errorf("%d bytes of the budget still held after the run", w.Budget.inUse())
	}

	// Someone else holds the whole budget: the worker waits before fetching.
	fl2 := &fakeLog{values: logValues(10, nil, nil), perFetch: 100}
	w2, _, _, _ := testWorker(t, fl2, 0, "dead_letter")
	log2 := &countingLog{fakeLog: fl2, w: w2}
	w2.Reader, w2.FetchMax, w2.Budget = log2, 1<<20, NewBudget(1<<20)
	w2.Sinks = []sink.Sink{&fakeStager{budget: w2.Budget}}
	w2.Budget.force(1 << 20)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w2.Run(ctx, position{Offset: 0, Cut: -1}); err != nil {
		t.Fatal(err)
	}
	if log2.fetches != 0 {
		t.Errorf("fetched %d times with the budget spent", log2.fetches)
	}
}

func TestBudgetWaitsAndForces(t *testing.T) {
	b := NewBudget(100)
	if !b.tryAcquire(60) || b.tryAcquire(50) {
		t.Fatal("tryAcquire must take 60 of 100, then refuse 50")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.acquire(ctx, 50); !errors.Is(err, context.Canceled) {
		t.Fatalf("acquire on a spent budget returned %v, want to wait (here: the canceled context)", err)
	}
	done := make(chan error)
	go func() { done <- b.acquire(context.Background(), 50) }()
	b.release(60)
	if err := <-done; err != nil || b.inUse() != 50 {
		t.Fatalf("after release: %v, in use %d", err, b.inUse())
	}
	b.force(200) // bytes already in memory: taken past the size
	if b.inUse() != 250 || b.tryAcquire(1) {
		t.Fatalf("in use %d after force; nothing more fits", b.inUse())
	}
	b.release(250)
	if err := b.acquire(context.Background(), 1000); err != nil || b.inUse() != 1000 {
		t.Fatalf("a reservation over the size must pass alone: %v, %d", err, b.inUse())
	}
}

// TestWorkerStagesIntoFiles: the real files sink under a budget of a few
// dozen records writes one file per batch holding every row, and leaves no
// spool behind.
func TestWorkerStagesIntoFiles(t *testing.T) {
	log := &fakeLog{values: logValues(20000, nil, nil), perFetch: 500}
	w, _, _, _ := testWorker(t, log, 0, "dead_letter")
	out, spool := t.TempDir(), t.TempDir()
	sinks, err := sink.New(context.Background(), sink.Config{Files: &sink.FilesConfig{URL: out, SpoolDir: spool}}, sink.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	w.Sinks = sinks.All()
	w.Budget = NewBudget(32 << 10)
	w.FetchMax = 16 << 10
	if err := w.Run(context.Background(), position{Offset: 0, Cut: -1}); err != nil {
		t.Fatal(err)
	}
	if w.Stats.StagedRows.Load() == 0 || w.Stats.Batches.Load() != 1 {
		t.Errorf("%d rows staged in %d batches: want staging and one batch", w.Stats.StagedRows.Load(), w.Stats.Batches.Load())
	}
	f, err := os.Open(filepath.Join(out, "t-0-0-19999.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, _ := f.Stat()
	pf, err := parquet.OpenFile(f, info.Size())
	if err != nil {
		t.Fatal(err)
	}
	if pf.NumRows() != 20000 {
		t.Errorf("the file holds %d rows, want 20000", pf.NumRows())
	}
	if left, _ := os.ReadDir(spool); len(left) != 0 {
		t.Errorf("%d spool files left behind", len(left))
	}
}

// refusingStager is a stager that refuses rows for good: those in check
// in CheckRows (as the Files and Kafka sinks do), those in stage only when
// Stage meets them, after taking the rows before them (as the Parquet
// writer does); asked again, it goes on after what it took.
type refusingStager struct {
	fakeStager
	check, stage map[int64]bool
	taken        []int64 // offsets staged, in order
	pending      int     // rows of a refused call already taken
}

func (r *refusingStager) CheckRows(b *sink.Batch) []*sink.RowError {
	var out []*sink.RowError
	for i, s := range b.Sources {
		if r.check[s.Offset] {
			out = append(out, &sink.RowError{Topic: b.Topic, Index: i, Offset: s.Offset, Err: errors.New("key too long")})
		}
	}
	return out
}

func (r *refusingStager) Stage(ctx context.Context, b *sink.Batch) (bool, error) {
	for i := r.pending; i < len(b.Rows); i++ {
		if o := b.Sources[i].Offset; r.stage[o] {
			r.pending = i
			return false, sink.RowErrors{{Topic: b.Topic, Index: i, Offset: o, Err: errors.New("parquet: value refused")}}
		} else {
			r.taken = append(r.taken, o)
		}
	}
	r.pending = 0
	return r.fakeStager.Stage(ctx, b)
}

// TestWorkerRefusesRowsAsTheyAreStaged: with staging sinks, a row no sink
// can take leaves the batch where rows are staged, before any sink has it,
// whether a check names it or a Stage call meets it; a re-cut of the same
// batch, staged in other chunks, gives the same rows and dead letters.
func TestWorkerRefusesRowsAsTheyAreStaged(t *testing.T) {
	refused := []int64{5, 7, 150, 151, 299}
	var first []int64
	for run, budget := range []int64{4 << 10, 24 << 10} {
		w, c, _, _ := testWorker(t, &fakeLog{values: logValues(300, nil, nil), perFetch: 40}, 0, "dead_letter")
		w.Budget = NewBudget(budget)
		s := &refusingStager{fakeStager: fakeStager{budget: w.Budget},
			check: map[int64]bool{5: true, 150: true}, stage: map[int64]bool{7: true, 151: true, 299: true}}
		after := &fakeStager{budget: w.Budget} // the Kafka sink, after the files
		d := &letterDead{}
		w.Sinks, w.Dead = []sink.Sink{s, after}, []DeadLetterWriter{d}
		start := position{Offset: 0, Cut: -1}
		if run == 1 {
			start = position{Offset: 0, Cut: 299} // the re-cut of run 0's batch
		}
		if err := w.Run(context.Background(), start); err != nil {
			t.Fatal(err)
		}
		if len(s.staged) < 2 || len(s.batches) != 1 || !strings.HasPrefix(s.batches[0], "0-299:") {
			t.Fatalf("run %d: stages %v, batches %v: want rows staged in chunks, one batch 0-299", run, s.staged, s.batches)
		}
		for _, o := range refused {
			if slices.Contains(s.taken, o) {
				t.Errorf("run %d: the sink holds refused row %d", run, o)
			}
		}
		if len(s.taken) != 295 || after.rows != 295 {
			t.Errorf("run %d: %d rows staged, %d in the next sink; want 295 in each", run, len(s.taken), after.rows)
		}
		var letters []int64
		for _, l := range d.letters {
			var o int64
			fmt.Sscanf(l[strings.Index(l, "/")+1:], "%d", &o)
			letters = append(letters, o)
			if !strings.HasPrefix(l, "0-299/") || !strings.Contains(l, "refused") {
				t.Errorf("run %d: dead letter %s: want it in batch 0-299 with the sink's reason", run, l)
			}
		}
		if !slices.Equal(letters, refused) || w.Stats.Refused.Load() != 5 {
			t.Errorf("run %d: dead letters %v (refused %d), want %v", run, letters, w.Stats.Refused.Load(), refused)
		}
		if last := c.calls[len(c.calls)-1]; last != (commitCall{300, ""}) {
			t.Errorf("run %d: last commit %v, want 300", run, last)
		}
		if run == 0 {
			first = s.taken
		} else if !slices.Equal(first, s.taken) {
			t.Errorf("the re-cut staged other rows than the first run")
		}
	}
}

// cancelingStager ends the run's context during its first Stage, as the
// end of a generation does when it lands while rows are being staged.
type cancelingStager struct {
	*fakeStager
	cancel context.CancelFunc
	calls  int
}

func (c *cancelingStager) Stage(ctx context.Context, b *sink.Batch) (bool, error) {
	if c.calls++; c.calls == 1 {
		c.cancel()
		return false, errors.New("spool: no space left on device")
	}
	return c.fakeStager.Stage(ctx, b)
}

// TestWorkerStopDuringStagingCommitsWhatItWrote: a generation that ends
// while the worker stages the record it just took still has that record in
// its batch; the flush on stop must commit past it, or the next owner reads
// it again and the output holds it twice (found by a member joining a
// running group: one row twice in two partitions).
func TestWorkerStopDuringStagingCommitsWhatItWrote(t *testing.T) {
	log := &fakeLog{values: logValues(5000, nil, nil), perFetch: 100}
	w, c, _, _ := testWorker(t, log, 0, "dead_letter")
	w.Target = -1
	w.Budget = NewBudget(16 << 20) // ample: rows are staged once they reach stageChunk (256 KiB)
	ctx, cancel := context.WithCancel(context.Background())
	s := &cancelingStager{fakeStager: &fakeStager{budget: w.Budget}, cancel: cancel}
	w.Sinks = []sink.Sink{s}
	go func() { // never hang: the end of the log ends the run
		for w.Stats.Records.Load() < 5000 && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	if err := w.Run(ctx, position{Offset: 0, Cut: -1}); err != nil {
		t.Fatal(err)
	}
	if s.calls < 2 {
		t.Fatalf("Stage called %d times: the test must stop the worker while it stages", s.calls)
	}
	last := c.calls[len(c.calls)-1]
	if last.meta != "" || last.offset != int64(s.rows) {
		t.Errorf("the sink took offsets 0..%d, the last commit is %+v: the next owner must start right after the last row written", s.rows-1, last)
	}
}

// TestWorkerStopBetweenTwoStagersStagesOnce: a generation that ends after
// the first sink took a chunk and before the second did: the flush on stop
// gives the chunk to the second sink only.
func TestWorkerStopBetweenTwoStagersStagesOnce(t *testing.T) {
	log := &fakeLog{values: logValues(5000, nil, nil), perFetch: 100}
	w, c, _, _ := testWorker(t, log, 0, "dead_letter")
	w.Target = -1
	w.Budget = NewBudget(16 << 20)
	ctx, cancel := context.WithCancel(context.Background())
	first := &fakeStager{budget: w.Budget}
	second := &cancelingStager{fakeStager: &fakeStager{budget: w.Budget}, cancel: cancel}
	w.Sinks = []sink.Sink{first, second}
	if err := w.Run(ctx, position{Offset: 0, Cut: -1}); err != nil {
		t.Fatal(err)
	}
	last := c.calls[len(c.calls)-1]
	if second.calls < 2 || first.rows != second.rows || int64(first.rows) != last.offset {
		t.Errorf("first sink took %d rows, second %d (%d Stage calls), last commit %+v: each sink must hold every row once", first.rows, second.rows, second.calls, last)
	}
}

// onceStager is a staging sink that, like the files sink, can write a
// batch only once: the spool the rows were staged into is gone after.
type onceStager struct {
	*fakeStager
	written map[int64]bool
}

func (o *onceStager) Write(ctx context.Context, b *sink.Batch) error {
	if o.written[b.First] {
		return fmt.Errorf("batch from %d: %d rows staged, the spool has 0", b.First, b.Staged)
	}
	o.written[b.First] = true
	return o.fakeStager.Write(ctx, b)
}

// stoppingCommitter ends the run's context at the first commit of next and
// fails it as kafka-go does then, as a SIGTERM landing there does.
type stoppingCommitter struct {
	fakeCommitter
	cancel context.CancelFunc
}

func (s *stoppingCommitter) Commit(ctx context.Context, topic string, p int, offset int64, meta string) error {
	if meta == "" && s.cancel != nil {
		s.cancel()
		s.cancel = nil
		s.calls = append(s.calls, commitCall{offset, meta})
		return fmt.Errorf("kafka.(*Client).OffsetCommit: %w", context.Canceled)
	}
	return s.fakeCommitter.Commit(ctx, topic, p, offset, meta)
}

// TestWorkerStopAfterDeliveryOnlyCommits: a stop that lands between a
// batch's delivery and the commit of its next must commit next, not write
// the batch again (the files sink cannot: its spool is gone; the stop
// retried the write for the whole shutdown timeout and left a pending cut).
func TestWorkerStopAfterDeliveryOnlyCommits(t *testing.T) {
	log := &fakeLog{values: logValues(100, nil, nil), perFetch: 100}
	w, _, _, _ := testWorker(t, log, 40, "dead_letter")
	w.Target = -1
	ctx, cancel := context.WithCancel(context.Background())
	c := &stoppingCommitter{cancel: cancel}
	s := &onceStager{fakeStager: &fakeStager{budget: w.Budget}, written: map[int64]bool{}}
	w.Commit, w.Sinks = c, []sink.Sink{s}
	if err := w.Run(ctx, position{Offset: 0, Cut: -1}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(s.batches) != "[0-39:40+0]" || fmt.Sprint(c.calls) != "[{0 cut:39} {40 } {40 }]" {
		t.Errorf("batches %v, commits %v: want the batch written once and next committed on stop", s.batches, c.calls)
	}
}

// TestWorkerStopInsideDeliveryWritesEachSinkOnce: a stop that lands inside
// a batch's delivery — after a sink wrote it, before the next sink or the
// dead letters did — finishes the delivery from where it stopped. Writing
// the batch to the first sink again fails for ever (the files sink's spool
// is gone): the stop retried for the whole shutdown timeout and left a
// pending cut (a CI rehearsal of TestE2EGracefulStop).
func TestWorkerStopInsideDeliveryWritesEachSinkOnce(t *testing.T) {
	log := &fakeLog{values: logValues(100, []int64{5}, nil), perFetch: 100}
	w, c, _, _ := testWorker(t, log, 40, "dead_letter")
	w.Target = -1
	ctx, cancel := context.WithCancel(context.Background())
	first := &onceStager{fakeStager: &fakeStager{budget: w.Budget}, written: map[int64]bool{}}
	second := &onceStager{fakeStager: &fakeStager{budget: w.Budget}, written: map[int64]bool{}}
	dead := &stoppingDead{cancel: cancel}
	w.Sinks, w.Dead = []sink.Sink{&stoppingSink{Sink: first, cancel: cancel}, second}, []DeadLetterWriter{dead}
	if err := w.Run(ctx, position{Offset: 0, Cut: -1}); err != nil {
		t.Fatal(err)
	}
	last := c.calls[len(c.calls)-1]
	if fmt.Sprint(first.batches) != "[0-39:39+0]" || fmt.Sprint(second.batches) != "[0-39:39+0]" || fmt.Sprint(dead.batches) != "[0-39:1]" || last != (commitCall{40, ""}) {
		t.Errorf("first sink %v, second %v, dead letters %v, commits %v: want the batch once in each and next committed on stop",
			first.batches, second.batches, dead.batches, c.calls)
	}
}

// stoppingSink ends the run's context once its sink has written the first
// batch, as a SIGTERM landing right after does.
type stoppingSink struct {
	sink.Sink
	cancel context.CancelFunc
}

func (s *stoppingSink) Write(ctx context.Context, b *sink.Batch) error {
	err := s.Sink.Write(ctx, b)
	if s.cancel != nil {
		s.cancel()
		s.cancel = nil
	}
	return err
}

func (s *stoppingSink) Stage(ctx context.Context, b *sink.Batch) (bool, error) {
	return s.Sink.(sink.Stager).Stage(ctx, b)
}

func (s *stoppingSink) Discard(topic string, partition int, prefix string) {
	s.Sink.(sink.Stager).Discard(topic, partition, prefix)
}

// stoppingDead fails its first write as a context ended under it does.
type stoppingDead struct {
	fakeDead
	cancel context.CancelFunc
	failed bool
}

func (d *stoppingDead) writeDeadLetters(ctx context.Context, b *deadBatch) error {
	if !d.failed && ctx.Err() != nil {
		d.failed = true
		return fmt.Errorf("writing dead letters: %w", ctx.Err())
	}
	return d.fakeDead.writeDeadLetters(ctx, b)
}
