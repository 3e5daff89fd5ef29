package pipeline

import (
	"context"
	"sync"
)

// budget is `batch.memory_budget`: the bytes a member holds for records
// between the fetch and the sinks, across every partition. A worker
// reserves a fetch's bytes before it fetches (franz-go's MaxBufferedBytes
// does the same), and each record's decoded row before it keeps it; rows
// go back when they are staged into the sinks or their batch is cut. A
// spent budget pauses fetching: backpressure instead of a growing heap.
type budget struct {
	mu      sync.Mutex
	size    int64
	used    int64
	changed chan struct{} // closed and replaced whenever used goes down
}

func newBudget(size int64) *budget {
	return &budget{size: size, changed: make(chan struct{})}
}

// clamp lets a single record larger than the whole budget through alone;
// callers acquire and later release the clamped amount.
func (b *budget) clamp(n int64) int64 { return min(n, b.size) }

func (b *budget) tryAcquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.size {
		return false
	}
	b.used += n
	return true
}

// acquire waits until n fits (or nothing else is held, so one oversized
// reservation cannot wait forever).
func (b *budget) acquire(ctx context.Context, n int64) error {
	for {
		b.mu.Lock()
		if b.used+n <= b.size || b.used == 0 {
			b.used += n
			b.mu.Unlock()
			return nil
		}
		changed := b.changed
		b.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// force takes n even past the size: for bytes that are already in memory
// (a fetch larger than its reservation), so the next reservation waits for
// them to go back.
func (b *budget) force(n int64) {
	b.mu.Lock()
	b.used += n
	b.mu.Unlock()
}

func (b *budget) release(n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}

// inUse is the bytes held now, for the metrics.
func (b *budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// MemoryLimit is the Go soft memory limit a member sets from its budget
// unless GOMEMLIMIT says otherwise: the budget plus room for the fixed
// costs listed in configs/reference.yaml (batch.memory_budget).
func MemoryLimit(c BatchConfig) int64 { return c.MemoryBudget + 96<<20 }
