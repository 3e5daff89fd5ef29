package pipeline

import (
	"context"

	"golang.org/x/sync/semaphore"
)

// budget bounds the bytes held in open batches across every partition of the
// job (`batch.memory_budget`). A full budget pauses fetching: backpressure
// instead of a growing heap.
type budget struct {
	sem  *semaphore.Weighted
	size int64
}

func newBudget(size int64) *budget { return &budget{sem: semaphore.NewWeighted(size), size: size} }

// clamp lets a single record larger than the whole budget through alone;
// callers acquire and later release the clamped amount.
func (b *budget) clamp(n int64) int64 { return min(n, b.size) }

func (b *budget) tryAcquire(n int64) bool { return b.sem.TryAcquire(n) }

func (b *budget) acquire(ctx context.Context, n int64) error { return b.sem.Acquire(ctx, n) }

func (b *budget) release(n int64) {
	if n > 0 {
		b.sem.Release(n)
	}
}
