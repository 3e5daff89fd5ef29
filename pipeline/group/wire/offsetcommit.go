package wire

// OffsetCommit v9, the first version the coordinator takes from a member
// of the next-generation protocol (it refuses older ones from such a
// member with UNSUPPORTED_VERSION): the member epoch stands where the
// generation stood. kafka-go stops at v7, so it is encoded and read here.
const (
	APIOffsetCommit           int16 = 8
	OffsetCommitMemberVersion int16 = 9
)

// OffsetCommit is the commits of one request: one or more partitions'.
type OffsetCommit struct {
	Group, MemberID, InstanceID string
	Epoch                       int32
	Offsets                     []CommitOffset
}

// CommitOffset is one partition's commit.
type CommitOffset struct {
	Topic     string
	Partition int32
	Offset    int64
	Metadata  string
}

func (c OffsetCommit) Encode() []byte {
	var w flexWriter
	w.string(c.Group)
	w.int32(c.Epoch)
	w.string(c.MemberID)
	w.nullableString(c.InstanceID)
	// One entry per topic, in the order the topics first appear.
	var topics []string
	byTopic := map[string][]CommitOffset{}
	for _, o := range c.Offsets {
		if _, ok := byTopic[o.Topic]; !ok {
			topics = append(topics, o.Topic)
		}
		byTopic[o.Topic] = append(byTopic[o.Topic], o)
	}
	w.count(len(topics))
	for _, t := range topics {
		w.string(t)
		w.count(len(byTopic[t]))
		for _, o := range byTopic[t] {
			w.int32(o.Partition)
			w.int64(o.Offset)
			w.int32(-1) // leader epoch: not tracked by the job
			w.string(o.Metadata)
			w.tags()
		}
		w.tags()
	}
	w.tags()
	return w.b
}

// DecodeOffsetCommitAnswers calls each with every partition's error code
// in the answer.
func DecodeOffsetCommitAnswers(body []byte, each func(topic string, partition int32, code int16)) error {
	r := flexReader{reader{buf: body}}
	r.int32() // throttle time
	for range r.count(4) {
		name := r.string()
		for range r.count(6) {
			p, c := r.int32(), r.int16()
			r.tags()
			if r.err == nil {
				each(name, p, c)
			}
		}
		r.tags()
	}
	r.tags()
	return r.err
}

// DecodeOffsetCommitAnswer returns the error code of topic/partition in
// the answer; -1 (UNKNOWN_SERVER_ERROR) when the answer does not name it.
func DecodeOffsetCommitAnswer(body []byte, topic string, partition int32) (int16, error) {
	code := int16(-1)
	err := DecodeOffsetCommitAnswers(body, func(t string, p int32, c int16) {
		if t == topic && p == partition {
			code = c
		}
	})
	return code, err
}
