package wire

// OffsetCommit v9, the first version the coordinator takes from a member
// of the next-generation protocol (it refuses older ones from such a
// member with UNSUPPORTED_VERSION): the member epoch stands where the
// generation stood. kafka-go stops at v7, so it is encoded and read here.
const (
	APIOffsetCommit           int16 = 8
	OffsetCommitMemberVersion int16 = 9
)

// OffsetCommit is one partition's commit.
type OffsetCommit struct {
	Group, MemberID, InstanceID string
	Epoch                       int32
	Topic                       string
	Partition                   int32
	Offset                      int64
	Metadata                    string
}

func (c OffsetCommit) Encode() []byte {
	var w flexWriter
	w.string(c.Group)
	w.int32(c.Epoch)
	w.string(c.MemberID)
	w.nullableString(c.InstanceID)
	w.count(1) // topics
	w.string(c.Topic)
	w.count(1) // partitions
	w.int32(c.Partition)
	w.int64(c.Offset)
	w.int32(-1) // leader epoch: not tracked by the job
	w.string(c.Metadata)
	w.tags()
	w.tags()
	w.tags()
	return w.b
}

// DecodeOffsetCommitAnswer returns the error code of topic/partition in
// the answer; -1 (UNKNOWN_SERVER_ERROR) when the answer does not name it.
func DecodeOffsetCommitAnswer(body []byte, topic string, partition int32) (int16, error) {
	r := flexReader{reader{buf: body}}
	r.int32() // throttle time
	code := int16(-1)
	for range r.count(4) {
		name := r.string()
		for range r.count(6) {
			p, c := r.int32(), r.int16()
			r.tags()
			if name == topic && p == partition {
				code = c
			}
		}
		r.tags()
	}
	r.tags()
	return code, r.err
}
