package worker

import (
	"container/list"
	"context"
	"sync"
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
	// waiters are the acquires that did not fit, oldest first. A release
	// hands bytes to those that fit now and wakes only them: with 600 idle
	// partitions, each empty fetch's release woke every waiting worker
	// (hundreds) to find most still do not fit, a third of an idle
	// member's CPU.
	waiters list.List // of *budgetWaiter
}

// budgetWaiter is one acquire waiting for n bytes; ready is closed once
// they are its.
type budgetWaiter struct {
	n     int64
	ready chan struct{}
}

func NewBudget(size int64) *Budget {
	return &Budget{size: size}
}

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
	b.mu.Lock()
	if b.fits(n) {
		b.used += n
		b.mu.Unlock()
		return nil
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	e := b.waiters.PushBack(w)
	b.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		defer b.mu.Unlock()
		select {
		case <-w.ready: // granted meanwhile: give it back
			b.used -= n
			b.grant()
		default:
			b.waiters.Remove(e)
		}
		return ctx.Err()
	}
}

// grant hands bytes to every waiter that fits now, oldest first, as each
// waiter used to take them when it woke. Called with mu held.
func (b *Budget) grant() {
	for e := b.waiters.Front(); e != nil; {
		next := e.Next()
		if w := e.Value.(*budgetWaiter); b.fits(w.n) {
			b.used += w.n
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
