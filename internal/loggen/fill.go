package loggen

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Fill says which partition each record of the benchmarks' input goes to.
type Fill interface {
	// Partition of the i-th record (i counts from 0 and grows by one a call).
	Partition(i int) int
}

// EvenFill puts record i in partition i % partitions: every partition holds
// the same share.
type EvenFill int

// Partition implements Fill.
func (n EvenFill) Partition(i int) int { return i % int(n) }

// StickyFill is the uneven fill a producer with Kafka's default (sticky)
// partitioner makes when its records have no key (KIP-480, KIP-794): it
// sends runs of records (one batch, about batch.size bytes) to one partition,
// then moves to another, and at a high rate the partitions it happens to
// pick in a short run are a part of the topic. Kafka's ProducerPerformance
// sending 600,000 records into 600 partitions filled 197 and 232 of them;
// StickyFill fills about share of the partitions (the same ones for a seed),
// each run of recordsPerBatch records going to one of those, picked at random.
type StickyFill struct {
	rng   *rand.Rand
	used  []int
	batch int
	cur   int
}

// NewStickyFill fills about share (0 < share <= 1) of partitions, at least
// one, in runs of recordsPerBatch records.
func NewStickyFill(seed uint64, partitions int, share float64, recordsPerBatch int) (*StickyFill, error) {
	if partitions <= 0 || share <= 0 || share > 1 || recordsPerBatch <= 0 {
		return nil, fmt.Errorf("loggen: sticky fill of %d partitions, share %v, %d records a batch: want partitions > 0, 0 < share <= 1, records > 0",
			partitions, share, recordsPerBatch)
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))
	used := rng.Perm(partitions)[:max(1, int(float64(partitions)*share+0.5))]
	return &StickyFill{rng: rng, used: used, batch: recordsPerBatch}, nil
}

// Partition implements Fill.
func (s *StickyFill) Partition(i int) int {
	if i%s.batch == 0 {
		s.cur = s.used[s.rng.IntN(len(s.used))]
	}
	return s.cur
}

// BenchStart is where the benchmarks' generated event times begin: span
// before now, to the second. Logs stamped with a fixed date were deleted by
// the brokers' time retention (7 days by default) once that date was a week
// old, while the benchmark read them; stamped relative to now, they are as
// fresh as the run.
func BenchStart(now time.Time, span time.Duration) time.Time {
	return now.Add(-span).UTC().Truncate(time.Second)
}
