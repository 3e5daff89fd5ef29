package pipeline

import (
	"sync"
	"sync/atomic"
	"time"
)

// Stats counts what the job did; the run summary and the metrics read it.
type Stats struct {
	Started           time.Time
	Records           atomic.Int64 // records read (after skipping control batches)
	Rows              atomic.Int64 // rows written to the sinks
	Filtered          atomic.Int64 // records dropped by schema.where
	DeadLetters       atomic.Int64 // records written to the dead-letter destinations
	Skipped           atomic.Int64 // bad records dropped with on_error: skip
	Batches           atomic.Int64 // batches committed
	BudgetCuts        atomic.Int64 // batches cut early because the memory budget was full
	BackpressureNanos atomic.Int64 // time fetching waited for memory
	LostRecords       atomic.Int64 // records deleted by retention before they were read

	mu        sync.Mutex
	positions map[string]map[int]int64 // committed next offset by topic and partition
}

func newStats() *Stats { return &Stats{Started: time.Now(), positions: map[string]map[int]int64{}} }

func (s *Stats) committed(topic string, partition int, next int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.positions[topic] == nil {
		s.positions[topic] = map[int]int64{}
	}
	s.positions[topic][partition] = next
}

// Positions copies the last committed offset of each partition.
func (s *Stats) Positions() map[string]map[int]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]map[int]int64, len(s.positions))
	for t, ps := range s.positions {
		out[t] = make(map[int]int64, len(ps))
		for p, o := range ps {
			out[t][p] = o
		}
	}
	return out
}
