package producer

import (
	"slices"
	"sync"
	"sync/atomic"
)

// Stats counts acknowledged record-batch bytes by the leader that took
// them. Bytes sent to a leader in the producer's own rack are same-rack;
// every other byte (either rack unknown, or different) is cross-rack, the
// transfer a cloud bills between zones before replication, which no
// producer can avoid. Ready at zero value, nothing counted through a nil
// pointer, shareable by several Producers.
type Stats struct {
	sameRack  atomic.Int64
	crossRack atomic.Int64

	mu      sync.Mutex
	brokers map[int32]*BrokerStats
}

// BrokerStats is what one broker took.
type BrokerStats struct {
	ID      int32
	Rack    string
	Bytes   int64
	Batches int64
}

// StatsSnapshot is a point-in-time copy of Stats.
type StatsSnapshot struct {
	SameRackBytes, CrossRackBytes int64
	Brokers                       []BrokerStats // by ID
}

func (s *Stats) add(b broker, producerRack string, n int) {
	if s == nil {
		return
	}
	if producerRack != "" && b.Rack == producerRack {
		s.sameRack.Add(int64(n))
	} else {
		s.crossRack.Add(int64(n))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.brokers == nil {
		s.brokers = make(map[int32]*BrokerStats)
	}
	c := s.brokers[b.ID]
	if c == nil {
		c = &BrokerStats{ID: b.ID}
		s.brokers[b.ID] = c
	}
	c.Rack = b.Rack // the broker's latest: it may come back in another rack
	c.Bytes += int64(n)
	c.Batches++
}

// Snapshot copies the counters.
func (s *Stats) Snapshot() StatsSnapshot {
	if s == nil {
		return StatsSnapshot{}
	}
	snap := StatsSnapshot{SameRackBytes: s.sameRack.Load(), CrossRackBytes: s.crossRack.Load()}
	s.mu.Lock()
	for _, c := range s.brokers {
		snap.Brokers = append(snap.Brokers, *c)
	}
	s.mu.Unlock()
	slices.SortFunc(snap.Brokers, func(a, b BrokerStats) int { return int(a.ID) - int(b.ID) })
	return snap
}
