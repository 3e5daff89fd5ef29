package fetch

import (
	"slices"
	"sync"
	"sync/atomic"
)

// Stats counts the bytes of every Fetch response the partition readers
// receive, by the broker that sent them, and splits them into same-rack and
// cross-rack bytes relative to the reader's rack: cross-rack bytes are what a
// cloud bills as inter-zone transfer. A byte is same-rack only when both the
// reader and the broker have a rack and the racks are equal. The zero value is
// ready to use, a nil *Stats counts nothing, and one Stats may be
// shared by all readers of a process.
type Stats struct {
	sameRack    atomic.Int64
	crossRack   atomic.Int64
	truncations atomic.Int64
	seedDials   atomic.Int64

	mu      sync.RWMutex
	brokers map[int32]*brokerFetchCounters
}

type brokerFetchCounters struct {
	rack    atomic.Value // string
	bytes   atomic.Int64
	fetches atomic.Int64
	dials   atomic.Int64
}

// Snapshot is a point-in-time copy of Stats.
type Snapshot struct {
	SameRackBytes  int64
	CrossRackBytes int64
	// Truncations counts logs found truncated under a reader (KIP-320).
	Truncations int64
	// SeedDials counts connections to the seed addresses, made to find
	// the cluster (Brokers counts those to brokers by id).
	SeedDials int64
	// Brokers is ordered by broker id.
	Brokers []BrokerStats
}

// BrokerStats is what was fetched from one broker.
type BrokerStats struct {
	ID    int32
	Rack  string
	Bytes int64
	// Fetches counts Fetch requests answered; one carries every partition
	// the member reads from the broker (see Client).
	Fetches int64
	// Dials counts connections opened to the broker: control and fetch
	// session connections, first dials and redials.
	Dials int64
}

// add counts one Fetch response of n bytes from broker id.
func (s *Stats) add(id int32, brokerRack, readerRack string, n int) {
	if s == nil {
		return
	}
	if readerRack != "" && brokerRack == readerRack {
		s.sameRack.Add(int64(n))
	} else {
		s.crossRack.Add(int64(n))
	}

	c := s.broker(id)
	// The rack is the broker's latest: a broker may restart in another.
	c.rack.Store(brokerRack)
	c.bytes.Add(int64(n))
	c.fetches.Add(1)
}

// broker returns broker id's counters, adding them on first use.
func (s *Stats) broker(id int32) *brokerFetchCounters {
	s.mu.RLock()
	c := s.brokers[id]
	s.mu.RUnlock()
	if c != nil {
		return c
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.brokers == nil {
		s.brokers = make(map[int32]*brokerFetchCounters)
	}
	if c = s.brokers[id]; c == nil {
		c = new(brokerFetchCounters)
		s.brokers[id] = c
	}
	return c
}

// dialled counts one connection opened to broker id.
func (s *Stats) dialled(id int32, rack string) {
	if s == nil {
		return
	}
	c := s.broker(id)
	c.rack.Store(rack)
	c.dials.Add(1)
}

// dialledSeed counts one connection opened to a seed address.
func (s *Stats) dialledSeed() {
	if s != nil {
		s.seedDials.Add(1)
	}
}

// Snapshot copies the counters.
func (s *Stats) Snapshot() Snapshot {
	if s == nil {
		return Snapshot{}
	}
	snap := Snapshot{
		SameRackBytes:  s.sameRack.Load(),
		CrossRackBytes: s.crossRack.Load(),
		Truncations:    s.truncations.Load(),
		SeedDials:      s.seedDials.Load(),
	}
	s.mu.RLock()
	for id, c := range s.brokers {
		rack, _ := c.rack.Load().(string)
		snap.Brokers = append(snap.Brokers, BrokerStats{
			ID:      id,
			Rack:    rack,
			Bytes:   c.bytes.Load(),
			Fetches: c.fetches.Load(),
			Dials:   c.dials.Load(),
		})
	}
	s.mu.RUnlock()
	slices.SortFunc(snap.Brokers, func(a, b BrokerStats) int { return int(a.ID) - int(b.ID) })
	return snap
}

// ByRack sums the bytes fetched from the brokers of each rack ("" for brokers
// without one).
func (s Snapshot) ByRack() map[string]int64 {
	racks := make(map[string]int64)
	for _, b := range s.Brokers {
		racks[b.Rack] += b.Bytes
	}
	return racks
}

// SameRackShare is the fraction of fetched bytes that stayed in the reader's
// rack, or 0 before anything was fetched.
func (s Snapshot) SameRackShare() float64 {
	total := s.SameRackBytes + s.CrossRackBytes
	if total == 0 {
		return 0
	}
	return float64(s.SameRackBytes) / float64(total)
}

// truncated counts one log found truncated under a reader.
func (s *Stats) truncated() {
	if s != nil {
		s.truncations.Add(1)
	}
}
