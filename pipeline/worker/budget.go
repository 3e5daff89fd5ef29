package worker

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// Budget is `batch.memory_budget`: the bytes a member holds for records
// between the fetch and the sinks, across every partition. A worker
// reserves a fetch's bytes before it fetches (franz-go's MaxBufferedBytes
// does the same), and each record's decoded row before it keeps it; rows
// go back when they are staged into the sinks or their batch is cut,
// except what a sink still holds of them in memory (a sorted file's run,
// sink.MemoryHolder), which goes back at the cut. A spent Budget pauses
// fetching: backpressure instead of a growing heap.
type Budget struct {
	mu   sync.Mutex
	size int64
	used int64
	// floorOut: a floor was taken past the size and its fetch is not
	// done (floorBack); one at a time (acquireOrFloor).
	floorOut bool
	// floorAfter is how long a waiter waits before it may take a floor
	// (floorWait; tests shorten it).
	floorAfter time.Duration
	// waiters are the acquires that did not fit, oldest first. A release
	// hands bytes to those that fit now and wakes only them: with 600 idle
	// partitions, each empty fetch's release woke every waiting worker
	// (hundreds) to find most still do not fit, a third of an idle
	// member's CPU.
	waiters list.List // of *budgetWaiter
}

// budgetWaiter is one acquire waiting for n bytes, or for floor while
// the budget is over its size (acquireOrFloor); ready is closed once got
// bytes are its.
type budgetWaiter struct {
	n, floor, got int64
	floored       bool      // got is its floor, taken past the size
	since         time.Time // when it began to wait
	ready         chan struct{}
}

func NewBudget(size int64) *Budget {
	return &Budget{size: size, floorAfter: floorWait}
}

// floorWait is how long a fetch waits for its bytes before it may take a
// floor past a budget that is over its size: a fetch that decompressed
// past its reservation is decoded and given back within milliseconds,
// and waiting that out is the budget doing its job; a flood held behind
// one fetch takes seconds to minutes.
const floorWait = time.Second

// clamp lets a single record larger than the whole budget through alone;
// callers acquire and later release the clamped amount.
func (b *Budget) clamp(n int64) int64 { return min(n, b.size) }

func (b *Budget) tryAcquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.size {
		return false
	}
	b.used += n
	return true
}

// fits says n may be taken now: it fits, or nothing else is held, so one
// oversized reservation cannot wait forever. Called with mu held.
func (b *Budget) fits(n int64) bool { return b.used+n <= b.size || b.used == 0 }

// acquire waits until n fits.
func (b *Budget) acquire(ctx context.Context, n int64) error {
	_, _, err := b.acquireOrFloor(ctx, n, 0)
	return err
}

// acquireOrFloor waits until n fits, or, once it waited floorWait while
// the budget is over its size and no other floor is out, takes floor
// (> 0) past it (checked whenever bytes come back or go past), and returns
// what it took; a caller that took its floor (floored) says so with
// floorBack once its fetch is done. Only bytes already in memory put the
// budget over its size (force: a fetch that decompressed to more than
// its reservation, a re-cut), and they come back only as their partition
// works through them: a flood of large records behind one compressed
// fetch held a 16 MiB budget at 40 MB for as long as its partition took
// to write it (27-57 s in the chaos suite), and a partition waiting for
// its fetch's bytes stood still all that time. The caller gives a floor
// only where it holds (almost) nothing of the budget itself. One floor at
// a time, oldest waiter first, to a fetch that waited floorWait, bounds
// what this lets in to one small fetch now and then: with a floor for
// every partition that asked at once, 600 partitions catching up each
// fetched past a budget their own fetches had put over its size for a
// moment, and the member's peak RSS doubled.
func (b *Budget) acquireOrFloor(ctx context.Context, n, floor int64) (got int64, floored bool, err error) {
	b.mu.Lock()
	w := &budgetWaiter{n: n, floor: floor, since: time.Now(), ready: make(chan struct{})}
	if b.take(w) {
		b.mu.Unlock()
		return w.got, w.floored, nil
	}
	e := b.waiters.PushBack(w)
	b.mu.Unlock()
	select {
	case <-w.ready:
		return w.got, w.floored, nil
	case <-ctx.Done():
		b.mu.Lock()
		defer b.mu.Unlock()
		select {
		case <-w.ready: // granted meanwhile: give it back
			b.used -= w.got
			if w.floored {
				b.floorOut = false // its fetch will not be made
			}
			b.grant()
		default:
			b.waiters.Remove(e)
		}
		return 0, false, ctx.Err()
	}
}

// take gives w its bytes if it may have them now: n if they fit, its
// floor while the budget is over its size. Called with mu held.
func (b *Budget) take(w *budgetWaiter) bool {
	switch {
	case b.fits(w.n):
		w.got = w.n
	case w.floor > 0 && b.used > b.size && !b.floorOut && time.Since(w.since) >= b.floorAfter:
		w.got, w.floored, b.floorOut = w.floor, true, true
	default:
		return false
	}
	b.used += w.got
	return true
}

// floorBack says the fetch a floor was taken for is done (its bytes are
// released as any fetch's): another waiter may take a floor.
func (b *Budget) floorBack() {
	b.mu.Lock()
	b.floorOut = false
	b.grant()
	b.mu.Unlock()
}

// grant hands bytes to every waiter that may have them now (take), oldest
// first, as each waiter used to take them when it woke. Called with mu
// held.
func (b *Budget) grant() {
	for e := b.waiters.Front(); e != nil; {
		next := e.Next()
		if w := e.Value.(*budgetWaiter); b.take(w) {
			b.waiters.Remove(e)
			close(w.ready)
		}
		e = next
	}
}

// force takes n even past the size: for bytes that are already in memory
// (a fetch larger than its reservation), so the next reservation waits for
// them to go back.
func (b *Budget) force(n int64) {
	b.mu.Lock()
	b.used += n
	if b.used > b.size {
		b.grant() // waiters with a floor may have it now
	}
	b.mu.Unlock()
}

func (b *Budget) release(n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.grant()
	b.mu.Unlock()
}

// fetchFloor is the least a partition reserves for a fetch: what a fetch
// of a partition with little to say holds. Reserving kafka.fetch.max_bytes
// for every fetch, 600 idle partitions' long polls asked for 600 MiB of a
// 128 MiB budget, and the partitions with records waited behind them.
const fetchFloor = 16 << 10

// nextFetch is the reservation for a partition's next fetch after one that
// returned got bytes: twice as much, so a partition catching up reaches
// most (kafka.fetch.max_bytes) within a few fetches, and at least
// fetchFloor. The fetch is bounded by its reservation (fetchLimiter).
func nextFetch(got, most int64) int64 { return min(max(2*got, fetchFloor), most) }

// fetchLimiter is a reader that bounds its next fetches to the bytes
// reserved for them (fetch.PartitionReader).
type fetchLimiter interface{ SetFetchMax(n int) }

// idleChunk is the rows a partition that caught up may hold across its
// next fetch, a long poll, before it stages them (reserveFetch): 64 KiB,
// and fetchFloor once half the budget is in use. Staging every slow
// fetch's few rows cost 1.6x the allocations of staging them in chunks
// (BenchmarkManyPartitions at 12 partitions); hundreds of partitions
// holding theirs through their long polls spent the budget.
func (b *Budget) idleChunk() int64 {
	if b.inUse() > b.size/2 {
		return fetchFloor
	}
	return 64 << 10
}

// inUse is the bytes held now, for the metrics.
func (b *Budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}
