package rack

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/segmentio/kafka-go"
)

// BalancerProtocol is the name members announce in JoinGroup for the eager
// protocol; the group member (pipeline/group) offers "-cooperative" after
// it first. A group uses a protocol only when every member offers it, so a
// group mid-upgrade from members of kafka-go's ConsumerGroup days runs the
// eager one until the last of them leaves.
const BalancerProtocol = "logstore-rack-v1"

// Balancer is a kafka-go GroupBalancer, the interface the group member
// takes for its assignor, that assigns with Plan: balanced, then
// rack-local, then sticky. Each member tells the leader its rack and what
// it owns through its JoinGroup user data; under the cooperative protocol
// the member keeps a moving partition from its new owner until the old
// one let go.
type Balancer struct {
	rack             string
	followerFetching bool

	mu     sync.Mutex
	owned  map[string][]int
	logger kafka.Logger
	last   PlanResult
}

var _ kafka.GroupBalancer = (*Balancer)(nil)

// NewBalancer returns a balancer for a member in rack ("" when unknown).
// followerFetching says the brokers serve fetches from in-sync followers,
// so a partition is local wherever an in-sync replica is; without it, only
// where its leader is.
func NewBalancer(rack string, followerFetching bool) *Balancer {
	return &Balancer{rack: rack, followerFetching: followerFetching}
}

// ProtocolName implements kafka.GroupBalancer.
func (b *Balancer) ProtocolName() string { return BalancerProtocol }

// SetOwned records the partitions (topic → IDs) this member holds in the
// current generation; the next JoinGroup announces them so the leader can
// keep them in place.
func (b *Balancer) SetOwned(owned map[string][]int) {
	copied := make(map[string][]int, len(owned))
	for t, ids := range owned {
		copied[t] = slices.Clone(ids)
	}
	b.mu.Lock()
	b.owned = copied
	b.mu.Unlock()
}

// SetLogger makes AssignGroups log each plan and any member whose user data
// it could not read.
func (b *Balancer) SetLogger(l kafka.Logger) {
	b.mu.Lock()
	b.logger = l
	b.mu.Unlock()
}

// LastPlan is the plan of the last AssignGroups call, which only the group
// leader makes; zero before that.
func (b *Balancer) LastPlan() PlanResult {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last
}

// UserData implements kafka.GroupBalancer: the rack and owned partitions.
func (b *Balancer) UserData() ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return encodeUserData(memberData{Rack: b.rack, Owned: b.owned}), nil
}

// AssignGroups implements kafka.GroupBalancer. Brokers' racks come from the
// partitions' replica lists, as kafka-go fills them from metadata. A member
// whose user data cannot be read plans as rack-less and owning nothing.
func (b *Balancer) AssignGroups(members []kafka.GroupMember, partitions []kafka.Partition) kafka.GroupMemberAssignments {
	b.mu.Lock()
	logger := b.logger
	b.mu.Unlock()

	c := Cluster{FollowerFetching: b.followerFetching}
	racks := make(map[int]string)
	noteRack := func(br kafka.Broker) {
		if br.Rack != "" {
			racks[br.ID] = br.Rack
		}
	}
	for _, p := range partitions {
		// kafka-go reports a missing or unknown leader as the zero Broker,
		// whose ID 0 may be a real broker's: only a leader with an address
		// or a rack is one.
		leader := -1
		if p.Leader.Host != "" || p.Leader.Rack != "" {
			leader = p.Leader.ID
		}
		noteRack(p.Leader)
		part := Partition{Topic: p.Topic, ID: p.ID, Leader: leader}
		for _, r := range p.Replicas {
			noteRack(r)
			part.Replicas = append(part.Replicas, r.ID)
		}
		for _, r := range p.Isr {
			noteRack(r)
			part.ISR = append(part.ISR, r.ID)
		}
		c.Partitions = append(c.Partitions, part)
	}
	for id, r := range racks {
		c.Brokers = append(c.Brokers, Broker{ID: id, Rack: r})
	}

	planned := make([]Member, 0, len(members))
	for _, m := range members {
		data, err := decodeUserData(m.UserData)
		if err != nil && logger != nil {
			logger.Printf("rack balancer: member %s: %v; planning it as rack-less, owning nothing", m.ID, err)
		}
		pm := Member{ID: m.ID, Rack: data.Rack, Topics: m.Topics}
		for t, ids := range data.Owned {
			for _, id := range ids {
				pm.Owned = append(pm.Owned, TopicPartition{t, id})
			}
		}
		planned = append(planned, pm)
	}

	plan := Plan(c, planned)
	out := make(kafka.GroupMemberAssignments, len(plan.Assignments))
	for id, tps := range plan.Assignments {
		byTopic := make(map[string][]int)
		for _, tp := range tps {
			byTopic[tp.Topic] = append(byTopic[tp.Topic], tp.Partition)
		}
		out[id] = byTopic
	}
	if logger != nil {
		logger.Printf("rack balancer: %d partitions over %d members, %d read in the member's rack", plan.Total, len(members), plan.Local)
	}
	b.mu.Lock()
	b.last = plan
	b.mu.Unlock()
	return out
}

// memberData is what a member announces in JoinGroup.
type memberData struct {
	Rack  string
	Owned map[string][]int // topic → partition IDs
}

// userDataVersion 1, all integers unsigned varints:
//
//	version (one byte, 1)
//	rack length, rack
//	topic count, then per topic in name order:
//	    name length, name, partition count,
//	    partition IDs ascending: the first, then each gap from the one before
//
// A later version may only append fields, so a reader of version 1 reads the
// prefix of any later version and ignores the rest.
const userDataVersion = 1

var errUserData = errors.New("malformed logstore user data")

func encodeUserData(d memberData) []byte {
	buf := []byte{userDataVersion}
	buf = binary.AppendUvarint(buf, uint64(len(d.Rack)))
	buf = append(buf, d.Rack...)
	topics := make([]string, 0, len(d.Owned))
	for t := range d.Owned {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	buf = binary.AppendUvarint(buf, uint64(len(topics)))
	for _, t := range topics {
		ids := slices.Clone(d.Owned[t])
		ids = slices.DeleteFunc(ids, func(id int) bool { return id < 0 || id > math.MaxInt32 })
		slices.Sort(ids)
		ids = slices.Compact(ids)
		buf = binary.AppendUvarint(buf, uint64(len(t)))
		buf = append(buf, t...)
		buf = binary.AppendUvarint(buf, uint64(len(ids)))
		prev := 0
		for _, id := range ids {
			buf = binary.AppendUvarint(buf, uint64(id-prev))
			prev = id
		}
	}
	return buf
}

// decodeUserData reads a member's user data. On any error it returns the
// zero memberData, "no rack, owns nothing", with the reason.
func decodeUserData(b []byte) (memberData, error) {
	r := userDataReader{buf: b}
	version := r.byte()
	if r.err == nil && version < userDataVersion {
		return memberData{}, fmt.Errorf("%w: version %d", errUserData, version)
	}
	d := memberData{Rack: r.string()}
	topics := r.count()
	for range topics {
		t := r.string()
		n := r.count()
		ids := make([]int, 0, n)
		id := uint64(0)
		for range n {
			id += r.uvarint()
			if id > math.MaxInt32 {
				r.fail("partition ID beyond int32")
			}
			ids = append(ids, int(id))
		}
		if r.err != nil {
			break
		}
		if d.Owned == nil {
			d.Owned = make(map[string][]int, topics)
		}
		d.Owned[t] = append(d.Owned[t], ids...)
	}
	if r.err == nil && version == userDataVersion && len(r.buf) > 0 {
		r.fail(fmt.Sprintf("%d bytes after the last field", len(r.buf)))
	}
	if r.err != nil {
		return memberData{}, r.err
	}
	return d, nil
}

// userDataReader consumes buf and keeps the first error; after an error
// every read returns zero.
type userDataReader struct {
	buf []byte
	err error
}

func (r *userDataReader) fail(why string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", errUserData, why)
	}
	r.buf = nil
}

func (r *userDataReader) byte() byte {
	if len(r.buf) == 0 {
		r.fail("empty")
		return 0
	}
	c := r.buf[0]
	r.buf = r.buf[1:]
	return c
}

func (r *userDataReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.buf)
	if n <= 0 {
		r.fail("truncated or overlong varint")
		return 0
	}
	r.buf = r.buf[n:]
	return v
}

// count reads a length that must not promise more items than bytes remain,
// so a forged count cannot make the reader allocate without bound.
func (r *userDataReader) count() int {
	n := r.uvarint()
	if n > uint64(len(r.buf)) {
		r.fail("count beyond the data")
		return 0
	}
	return int(n)
}

func (r *userDataReader) string() string {
	n := r.count()
	s := string(r.buf[:n])
	r.buf = r.buf[n:]
	return s
}

// UserDataRack is the rack a member put in its JoinGroup user data (what
// `logstore status` shows as its zone); an error when the data is not
// logstore's.
func UserDataRack(b []byte) (string, error) {
	d, err := decodeUserData(b)
	return d.Rack, err
}
