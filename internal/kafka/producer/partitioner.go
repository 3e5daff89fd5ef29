package producer

import (
	"math/rand/v2"
	"time"
)

// Partitioner places records without a key (and without a partition of
// their own); keyed records always go by murmur2, as in the Java client.
type Partitioner int

const (
	// Sticky sends keyless records to one partition until a batch's worth
	// (BatchBytes) went there, then picks another at random among the
	// partitions with a leader (KIP-794's uniform sticky partitioner).
	Sticky Partitioner = iota
	// RackAware is Sticky choosing among the partitions whose leader is in
	// the producer's rack, and among all when none is (KIP-1123, the Java
	// client's partitioner.rack.aware with client.rack): produced bytes
	// stay in the zone.
	RackAware
)

func (p Partitioner) String() string {
	if p == RackAware {
		return "rack-aware"
	}
	return "sticky"
}

// topicState is one topic's partitions and its sticky partition.
type topicState struct {
	name  string
	parts []*partState
	// sticky is where keyless records go now (-1: none chosen yet), and
	// stickyBytes how much went there since it was chosen.
	sticky      int32
	stickyBytes int
}

// partState is one partition's queue of batches and its sequence.
type partState struct {
	topic  string
	id     int32
	leader int32 // -1: none known
	queue  []*batch
	// inflight: the head batch is on the wire; no other batch of the
	// partition is sent before its answer, so sequences stay in order.
	inflight bool
	// seq is the next batch's base sequence in generation gen.
	seq int32
	gen int
	// inTxn: the open transaction holds the partition (a transactional
	// producer sends nothing to a partition before).
	inTxn bool
}

func newTopicState(name string, l topicLayout) *topicState {
	ts := &topicState{name: name, sticky: -1}
	ts.update(l)
	return ts
}

// update takes new leaders; partitions only ever grow.
func (ts *topicState) update(l topicLayout) {
	for i, pl := range l.Partitions {
		if i >= len(ts.parts) {
			ts.parts = append(ts.parts, &partState{topic: ts.name, id: int32(i), leader: -1})
		}
		ts.parts[i].leader = pl.Leader
	}
}

// place picks r's partition. The caller holds mu.
func (p *Producer) place(ts *topicState, r *Record, size int) *partState {
	n := len(ts.parts)
	switch {
	case r.Pinned && r.Partition >= 0 && int(r.Partition) < n:
		return ts.parts[r.Partition]
	case r.Key != nil:
		return ts.parts[KeyPartition(r.Key, n)]
	}
	if ts.sticky < 0 || ts.stickyBytes >= p.cfg.BatchBytes || !p.eligible(ts, ts.parts[ts.sticky]) {
		ts.sticky = p.chooseSticky(ts)
		ts.stickyBytes = 0
	}
	ts.stickyBytes += size
	return ts.parts[ts.sticky]
}

// eligible says whether keyless records may go to part now: it has a
// leader, and with RackAware the leader is in our rack unless no
// partition's is.
func (p *Producer) eligible(ts *topicState, part *partState) bool {
	if part.leader < 0 {
		return false
	}
	if p.cfg.Partitioner != RackAware || !p.anyLocal(ts) {
		return true
	}
	return p.local(part)
}

func (p *Producer) local(part *partState) bool {
	b, ok := p.brokers[part.leader]
	return ok && p.cfg.Rack != "" && b.Rack == p.cfg.Rack
}

func (p *Producer) anyLocal(ts *topicState) bool {
	for _, part := range ts.parts {
		if p.local(part) {
			return true
		}
	}
	return false
}

// chooseSticky picks the next sticky partition at random among the
// eligible ones other than the current, so keyless load spreads over them.
func (p *Producer) chooseSticky(ts *topicState) int32 {
	var cands []int32
	for _, part := range ts.parts {
		if p.eligible(ts, part) {
			cands = append(cands, part.id)
		}
	}
	if len(cands) == 0 {
		// No leader known anywhere: any partition; its batch waits for one.
		return int32(rand.IntN(len(ts.parts)))
	}
	if len(cands) > 1 && ts.sticky >= 0 {
		for i, c := range cands {
			if c == ts.sticky {
				cands = append(cands[:i], cands[i+1:]...)
				break
			}
		}
	}
	return cands[rand.IntN(len(cands))]
}

// enqueue places record idx of call c and adds it to its partition's open
// batch. The caller holds mu.
func (p *Producer) enqueue(ts *topicState, c *call, idx int, r *Record) *partState {
	size := recordSize(r)
	part := p.place(ts, r, size)
	var tail *batch
	if n := len(part.queue); n > 0 {
		tail = part.queue[n-1]
	}
	if tail == nil || tail.sealed || len(tail.records) >= p.cfg.BatchRecords || tail.bytes+size > p.cfg.BatchBytes && len(tail.records) > 0 {
		now := time.Now()
		tail = &batch{part: part, created: now, deadline: now.Add(time.Duration(p.cfg.MaxAttempts) * p.cfg.RequestTimeout)}
		part.queue = append(part.queue, tail)
	}
	tail.records = append(tail.records, *r)
	tail.refs = append(tail.refs, ref{call: c, idx: idx})
	tail.bytes += size
	return part
}
