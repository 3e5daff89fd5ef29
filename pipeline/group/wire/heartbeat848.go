package wire

import (
	"cmp"
	"maps"
	"slices"
)

// ConsumerGroupHeartbeat (API key 68), the next-generation protocol's one
// request (KIP-848): a member joins, heartbeats, acknowledges its
// assignment and leaves with it. Version 1 (Kafka 4.0+) has the member
// make its own id (KIP-1082); kafka-go does not know the request, so it
// is encoded and read here.
const (
	APIConsumerGroupHeartbeat int16 = 68
	ConsumerHeartbeatVersion  int16 = 1
)

// Member epochs with a meaning of their own.
const (
	EpochJoin        int32 = 0  // join, or join again after being fenced
	EpochLeave       int32 = -1 // leave: the partitions move at once
	EpochLeaveStatic int32 = -2 // a static member stops and will be back
)

// TopicPartitions is partitions by topic id, as the protocol names topics.
type TopicPartitions map[[16]byte][]int32

// ConsumerHeartbeat is one ConsumerGroupHeartbeat request. Every field is
// sent every time (the protocol lets a member leave out what did not
// change; sending it again costs a few bytes and cannot go stale), which
// makes it a full request: the coordinator answers it with the whole
// assignment each time, so one this member could not apply comes again.
type ConsumerHeartbeat struct {
	Group, MemberID    string
	Epoch              int32
	InstanceID, Rack   string // "" sends null
	RebalanceTimeoutMS int32
	Topics             []string
	Assignor           string // "" lets the broker choose
	// Owned is what the member reads now; nil sends null (leaving).
	Owned TopicPartitions
}

func (h ConsumerHeartbeat) Encode() []byte {
	var w flexWriter
	w.string(h.Group)
	w.string(h.MemberID)
	w.int32(h.Epoch)
	w.nullableString(h.InstanceID)
	w.nullableString(h.Rack)
	w.int32(h.RebalanceTimeoutMS)
	if h.Topics == nil {
		w.count(-1)
	} else {
		w.count(len(h.Topics))
		for _, t := range h.Topics {
			w.string(t)
		}
	}
	w.count(-1) // SubscribedTopicRegex (v1): names, not a pattern
	w.nullableString(h.Assignor)
	if h.Owned == nil {
		w.count(-1)
	} else {
		appendTopicPartitions(&w, h.Owned)
	}
	w.tags()
	return w.b
}

// appendTopicPartitions writes topics by id order and partitions
// ascending, so one assignment always encodes the same.
func appendTopicPartitions(w *flexWriter, tps TopicPartitions) {
	ids := slices.SortedFunc(maps.Keys(tps), func(a, b [16]byte) int { return slices.Compare(a[:], b[:]) })
	w.count(len(ids))
	for _, id := range ids {
		w.uuid(id)
		ps := slices.Sorted(slices.Values(tps[id]))
		w.count(len(ps))
		for _, p := range ps {
			w.int32(p)
		}
		w.tags()
	}
}

// ConsumerHeartbeatAnswer is the coordinator's answer.
type ConsumerHeartbeatAnswer struct {
	ErrorCode           int16
	ErrorMessage        string
	MemberID            string
	Epoch               int32
	HeartbeatIntervalMS int32
	// Assignment is nil when unchanged since the last answer; otherwise
	// every partition the member may read now (those another member still
	// has to let go of come in a later answer).
	Assignment TopicPartitions
}

func DecodeConsumerHeartbeatAnswer(body []byte) (ConsumerHeartbeatAnswer, error) {
	r := flexReader{reader{buf: body}}
	var a ConsumerHeartbeatAnswer
	r.int32() // throttle time
	a.ErrorCode = r.int16()
	a.ErrorMessage = r.string()
	a.MemberID = r.string()
	a.Epoch = r.int32()
	a.HeartbeatIntervalMS = r.int32()
	// A nullable struct starts with an int8: -1 null, 1 present.
	if present := r.take(1); present != nil && int8(present[0]) >= 0 {
		a.Assignment = readTopicPartitions(&r)
		r.tags()
	}
	r.tags()
	return a, r.err
}

// readTopicPartitions reads an array of topic ids and their partitions.
func readTopicPartitions(r *flexReader) TopicPartitions {
	n := r.count(18)
	out := make(TopicPartitions, max(n, 0))
	for range n {
		id := r.uuid()
		k := r.count(4)
		ps := make([]int32, 0, max(k, 0))
		for range k {
			ps = append(ps, r.int32())
		}
		slices.SortFunc(ps, cmp.Compare)
		out[id] = append(out[id], ps...)
		r.tags()
	}
	return out
}
