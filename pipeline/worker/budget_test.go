package worker

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logstore/logstore/pipeline/record"
	"github.com/logstore/logstore/sink"
)

// TestWorkerRecutNeverWaitsOnTheBudget: a pending cut cannot end early, so
// it must not wait for memory it may never get (a budget lowered after an
// OOM, or taken by other partitions' re-cuts).
func TestWorkerRecutNeverWaitsOnTheBudget(t *testing.T) {
	w, _, s, _ := testWorker(t, &fakeLog{values: logValues(6, nil, nil), perFetch: 10}, 100, "dead_letter")
	cost := w.recordCost(&record.Record{Value: []byte(`{"n": 0}`)})
	w.Budget = NewBudget(2 * cost)
	// A deadlock guard, not a timing: the run ends long before.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Run(ctx, position{Offset: 0, Cut: 4}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(s.batches) != "[0-4:5 5-5:1]" {
		t.Errorf("batches %v, want the re-cut 0-4 whole, then 5-5", s.batches)
	}
	if got := w.Stats.RecutOverBudget.Load(); got != 3*cost {
		t.Errorf("%d bytes over budget reported, want %d (3 records)", got, 3*cost)
	}
	if !w.Budget.tryAcquire(2 * cost) {
		t.Error("the budget was not given back whole")
	}
}

// TestDeadLetterFloodDoesNotStallTheMember: a partition flooded with
// malformed records under the default flush rule (max_rows and max_bytes
// 0) must not stop the member. Dead letters are held until their batch is
// cut, staging cannot give their bytes back, so the flooded worker waited
// in the budget for bytes only it could release, and the other partition's
// fetches waited behind it (issue 26, defect 3).
func TestDeadLetterFloodDoesNotStallTheMember(t *testing.T) {
	const n = 5000
	bad := make([]int64, n)
	for i := range bad {
		bad[i] = int64(i)
	}
	shared := NewBudget(64 << 10)
	var workers []*Worker
	var dead []*fakeDead
	var commits []*fakeCommitter
	for _, values := range [][][]byte{logValues(n, bad, nil), logValues(n, nil, nil)} {
		w, c, _, d := testWorker(t, &fakeLog{values: values, perFetch: 100}, 0, "dead_letter")
		w.Limits.MaxBytes = 0 // the defaults: no size limit, an age far away
		w.Budget, w.FetchMax = shared, 16<<10
		w.Sinks = []sink.Sink{&fakeStager{budget: shared}}
		workers, dead, commits = append(workers, w), append(dead, d), append(commits, c)
	}
	// A deadlock guard, not a timing: both runs end long before.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	errs := make(chan error, len(workers))
	for _, w := range workers {
		go func() { errs <- w.Run(ctx, position{Offset: 0, Cut: -1}) }()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for i, w := range workers {
		last := commitCall{}
		if len(commits[i].calls) > 0 {
			last = commits[i].calls[len(commits[i].calls)-1]
		}
		if !w.reached || last != (commitCall{n, ""}) {
			t.Errorf("partition %d stalled: reached %v, last commit %+v, want %d committed", i, w.reached, last, n)
		}
	}
	letters := 0
	for _, b := range dead[0].batches {
		var first, last, k int
		fmt.Sscanf(b, "%d-%d:%d", &first, &last, &k)
		letters += k
	}
	if letters != n || len(dead[1].batches) != 0 {
		t.Errorf("dead letters %v / %v: want every malformed record once", dead[0].batches, dead[1].batches)
	}
	if workers[0].Stats.BudgetCuts.Load() == 0 {
		t.Error("the flooded partition's batch was never cut for the budget")
	}
	if shared.inUse() != 0 {
		t.Errorf("%d bytes of the budget still held after the runs", shared.inUse())
	}
}

// TestBudgetReleaseHandsBytesOnlyToWaitersThatFit: a release gives bytes
// to the waiting acquires that fit now, oldest first, and leaves the
// others asleep (it used to wake every waiter, hundreds with 600 idle
// partitions, to find most did not fit); a waiter whose context ends
// leaves the queue, and nothing it asked for stays taken.
func TestBudgetReleaseHandsBytesOnlyToWaitersThatFit(t *testing.T) {
	b := NewBudget(10)
	if err := b.acquire(context.Background(), 10); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waiters := []struct {
		name string
		n    int64
	}{{"six", 6}, {"four", 4}, {"eight", 8}}
	done := map[string]chan error{}
	for _, w := range waiters {
		done[w.name] = make(chan error, 1)
	}
	for i, w := range waiters {
		c, ch := context.Background(), done[w.name]
		if w.name == "eight" {
			c = ctx
		}
		go func() { ch <- b.acquire(c, w.n) }()
		// Queued in this order: each waits before the next starts.
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			b.mu.Lock()
			queued := b.waiters.Len()
			b.mu.Unlock()
			if queued == i+1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the acquire of %d did not queue", w.n)
			}
		}
	}
	returned := func(name string) bool {
		select {
		case err := <-done[name]:
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			return true
		case <-time.After(50 * time.Millisecond):
			return false
		}
	}
	b.release(5) // 5 held: four fits, six and eight do not
	if !returned("four") || returned("six") || returned("eight") {
		t.Fatal("after a release of 5: want only the acquire of 4 through")
	}
	cancel()
	if err := <-done["eight"]; err == nil {
		t.Error("the acquire of 8 returned nil after its context ended")
	}
	b.release(9) // nothing held: six goes through
	if !returned("six") {
		t.Fatal("after everything was released: the acquire of 6 still waits")
	}
	if got := b.inUse(); got != 6 {
		t.Errorf("%d bytes in use, want 6 (the acquire of 6 only)", got)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.waiters.Len() != 0 {
		t.Errorf("%d acquires still queued, want none", b.waiters.Len())
	}
}

// TestWorkerWhoseSinksCannotStageTakesAFetchBiggerThanTheBudget: with
// sinks that cannot stage (sinks.kafka.delivery: exactly_once) a fetch
// whose records, decompressed, hold more than the budget left the worker
// waiting in the budget for its first record's bytes, held by its own
// fetch: the chaos suite's members stood still for good on their LZ4
// fetches under a 16 MiB budget. A record already fetched is taken past
// the size, as with staging sinks; the next fetch waits instead.
func TestWorkerWhoseSinksCannotStageTakesAFetchBiggerThanTheBudget(t *testing.T) {
	w, c, s, _ := testWorker(t, &fakeLog{values: logValues(3000, nil, nil), perFetch: 1000}, 500, "dead_letter")
	w.Budget, w.FetchMax = NewBudget(4<<10), 1<<10
	// A deadlock guard, not a timing: the run ends long before.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Run(ctx, position{Offset: 0, Cut: -1}); err != nil {
		t.Fatal(err)
	}
	last := commitCall{}
	if len(c.calls) > 0 {
		last = c.calls[len(c.calls)-1]
	}
	if !w.reached || last != (commitCall{3000, ""}) {
		t.Errorf("the worker stood still: reached %v, last commit %+v, batches %v", w.reached, last, s.batches)
	}
	// Nor is a batch cut at every record for a budget the fetch spent:
	// a batch per record made the members crawl at 3 records/s.
	if len(s.batches) > 300 {
		t.Errorf("%d batches of 3000 records: cut at every few records for the fetch's bytes", len(s.batches))
	}
	if w.Budget.inUse() != 0 {
		t.Errorf("%d bytes of the budget still held after the run", w.Budget.inUse())
	}
}

// TestPartitionsWithLittleToSayLeaveTheBudgetToOthers: many partitions
// that caught up, each long-polling for records that do not come, must
// not hold the budget that a partition with records needs to go on.
// Each reserved kafka.fetch.max_bytes for its long poll and held the rows
// of its last fetch, below a stage chunk, across it: with 600 partitions
// the member's budget was spent by partitions with nothing to say, and
// those with records waited for memory (issue 44; "waited for memory
// 2h6m43s summed over partitions", no row written in the first minute).
// Here the long polls never end, so a budget they hold is held for good.
func TestPartitionsWithLittleToSayLeaveTheBudgetToOthers(t *testing.T) {
	const idle, few, n = 40, 500, 3000
	shared := NewBudget(1 << 20)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var parked sync.WaitGroup
	for range idle {
		w, _, _, _ := testWorker(t, &fakeLog{values: logValues(few, nil, nil), perFetch: 1000}, 0, "dead_letter")
		w.Budget, w.FetchMax, w.Target = shared, 64<<10, -1
		w.Sinks = []sink.Sink{&fakeStager{budget: shared}}
		parked.Add(1)
		go func() {
			defer parked.Done()
			w.Run(ctx, position{Offset: 0, Cut: -1})
		}()
	}
	// Every idle partition took its records and waits in its long poll,
	// or for the budget.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		shared.mu.Lock()
		queued := shared.waiters.Len()
		shared.mu.Unlock()
		if queued > 0 || shared.inUse() >= idle*fetchFloor {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the idle partitions did not start")
		}
	}
	w, c, _, _ := testWorker(t, &fakeLog{values: logValues(n, nil, nil), perFetch: 100}, 0, "dead_letter")
	st := &fakeStager{budget: shared}
	w.Budget, w.FetchMax, w.Sinks = shared, 64<<10, []sink.Sink{st}
	// A deadlock guard, not a timing: the run ends long before.
	runCtx, stop := context.WithTimeout(ctx, 20*time.Second)
	defer stop()
	if err := w.Run(runCtx, position{Offset: 0, Cut: -1}); err != nil {
		t.Fatal(err)
	}
	last := commitCall{}
	if len(c.calls) > 0 {
		last = c.calls[len(c.calls)-1]
	}
	if !w.reached || last != (commitCall{n, ""}) || st.rows != n {
		t.Errorf("the partition with records stalled behind %d idle ones: reached %v, last commit %+v, %d rows of %d written", idle, w.reached, last, st.rows, n)
	}
	cancel()
	parked.Wait()
	if shared.inUse() != 0 {
		t.Errorf("%d bytes of the budget still held after the runs", shared.inUse())
	}
}

// TestAPartitionWithFewRecordsIsNotStarvedByAFlood: a partition with a
// few records left must get its next fetch while another drains a flood
// whose fetch, decompressed, holds more than the budget. The flooded
// partition's records are in memory already and were taken past the
// size; the other partition's fetch waited for bytes that came back only
// once the whole flood was decoded and written: in the chaos suite a
// partition's last five records waited out 3,000 malformed 12 KiB records
// in another (27-57 s, its offset standing still), their LZ4 fetch 36 MB
// decompressed against a 16 MiB budget. A partition that holds (almost)
// nothing of the budget now fetches a small amount past it rather than
// wait.
func TestAPartitionWithFewRecordsIsNotStarvedByAFlood(t *testing.T) {
	const flood, few = 3000, 5
	shared := NewBudget(4 << 20)
	shared.floorAfter = 50 * time.Millisecond // the flood takes about a second
	var floodAt atomic.Int64                  // the flood's committed offset
	fewDoneAt := int64(-1)                    // floodAt when the few records were committed
	pad := strings.Repeat("x", 12<<10)
	big := make([][]byte, flood)
	for i := range big {
		big[i] = fmt.Appendf(nil, `{"n": %d, "pad": %q}`, i, pad)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a deadlock guard
	defer cancel()
	// One fetch returns the whole flood (36 MB; compressed it fits in a
	// fetch); a sink that cannot stage and takes a while per batch, as
	// the exactly-once output's transaction, holds a batch's bytes until
	// it is written.
	flooded, _, _, _ := testWorker(t, &fakeLog{values: big, perFetch: flood}, 0, "dead_letter")
	flooded.Budget, flooded.FetchMax, flooded.Limits.MaxBytes = shared, 1<<20, 0
	flooded.Sinks = []sink.Sink{&slowSink{each: 5 * time.Millisecond}}
	flooded.Commit = committerFunc(func(o int64) { floodAt.Store(o) })
	errs := make(chan error, 2)
	go func() { errs <- flooded.Run(ctx, position{Offset: 0, Cut: -1}) }()
	for deadline := time.Now().Add(20 * time.Second); flooded.Stats.Batches.Load() < 5; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the flooded partition did not start")
		}
	}
	small, _, _, _ := testWorker(t, &fakeLog{values: logValues(few, nil, nil), perFetch: 100}, 0, "dead_letter")
	small.Budget, small.FetchMax, small.Limits.MaxBytes = shared, 1<<20, 0
	small.Commit = committerFunc(func(o int64) {
		if o == few {
			fewDoneAt = floodAt.Load()
		}
	})
	go func() { errs <- small.Run(ctx, position{Offset: 0, Cut: -1}) }()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if fewDoneAt < 0 || fewDoneAt >= flood/2 {
		t.Errorf("the partition with %d records was committed when the flood stood at %d of %d (waited for memory %s): want it done while the flood drains",
			few, fewDoneAt, flood, time.Duration(small.Stats.BackpressureNanos.Load()).Round(time.Millisecond))
	}
	if shared.inUse() != 0 {
		t.Errorf("%d bytes of the budget still held after the runs", shared.inUse())
	}
}

// slowSink is a sink that cannot stage and takes each for a batch.
type slowSink struct{ each time.Duration }

func (s *slowSink) Write(context.Context, *sink.Batch) error { time.Sleep(s.each); return nil }
func (s *slowSink) Close() error                             { return nil }

// committerFunc commits by calling itself with the offset.
type committerFunc func(offset int64)

func (f committerFunc) Commit(_ context.Context, _ string, _ int, offset int64, _ string) error {
	f(offset)
	return nil
}

// TestBudgetFloorOnlyPastItsSize: a waiter with a floor gets it once bytes
// taken past the size (force) put the budget over it, not before, one
// floor at a time, and a waiter without one goes on waiting for its
// bytes.
func TestBudgetFloorOnlyPastItsSize(t *testing.T) {
	b := NewBudget(10)
	b.floorAfter = 0
	if err := b.acquire(context.Background(), 8); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		got     int64
		floored bool
		err     error
	}
	ask := func(n, floor int64) chan answer {
		ch := make(chan answer, 1)
		go func() {
			got, floored, err := b.acquireOrFloor(context.Background(), n, floor)
			ch <- answer{got, floored, err}
		}()
		return ch
	}
	floored := ask(6, 2)
	plain := ask(6, 0)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		b.mu.Lock()
		queued := b.waiters.Len()
		b.mu.Unlock()
		if queued == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the acquires did not queue")
		}
	}
	if b.inUse() != 8 {
		t.Fatalf("%d in use while the budget is within its size, want 8: nobody takes a floor then", b.inUse())
	}
	b.force(5) // 13 of 10: a record already in memory
	select {
	case a := <-floored:
		if a.err != nil || a.got != 2 || !a.floored {
			t.Errorf("the waiter with a floor got %d (%v), want its floor 2", a.got, a.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter with a floor still waits past the size")
	}
	// One floor at a time: the next waits until the first one's fetch
	// is done.
	second := ask(6, 2)
	select {
	case a := <-plain:
		t.Fatalf("the waiter without a floor got %d past the size", a.got)
	case a := <-second:
		t.Fatalf("a second floor (%d) was taken while the first was out", a.got)
	case <-time.After(50 * time.Millisecond):
	}
	b.floorBack()
	if a := <-second; a.err != nil || a.got != 2 || !a.floored {
		t.Errorf("the second waiter with a floor got %d (%v) once the first was back, want 2", a.got, a.err)
	}
	b.floorBack()
	b.release(15) // everything but a floor back: 2 held, 6 fits
	if a := <-plain; a.err != nil || a.got != 6 || a.floored || b.inUse() != 8 {
		t.Errorf("the waiter without a floor got %d (floored %v, %v), %d in use; want 6, 8", a.got, a.floored, a.err, b.inUse())
	}
	// A fetch that asks for no more than the floor (an idle partition's
	// 16 KiB) takes it as a floor too, and gives it back as one: a floor
	// taken without its floorBack would have stopped every later floor.
	b.force(5) // 13 of 10
	for i := range 2 {
		if a := <-ask(2, 2); a.err != nil || a.got != 2 || !a.floored {
			t.Fatalf("floor %d of a request of the floor's size: got %d, floored %v (%v)", i+1, a.got, a.floored, a.err)
		}
		b.floorBack()
	}
}
