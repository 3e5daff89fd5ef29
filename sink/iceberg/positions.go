package iceberg

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"
)

// lastPrefix starts the keys that record, per source partition, the last
// offset a table holds: in the summary of the snapshot that committed it
// (logstore.last/{topic}/{partition}), and in a table property of the same
// name, which outlives the snapshot when it expires. The value is the
// offset, then the topic's id when Kafka keeps one: "1999 oPq3…".
const lastPrefix = "logstore.last/"

func lastValue(last int64, topicID string) string {
	v := strconv.FormatInt(last, 10)
	if topicID != "" {
		v += " " + topicID
	}
	return v
}

func parseLastValue(v string) (last int64, topicID string, ok bool) {
	n, id, _ := strings.Cut(v, " ")
	last, err := strconv.ParseInt(n, 10, 64)
	return last, id, err == nil
}

func lastKey(topic string, partition int) string {
	return lastPrefix + topic + "/" + strconv.Itoa(partition)
}

func parseLastKey(key string) (topic string, partition int, ok bool) {
	rest, ok := strings.CutPrefix(key, lastPrefix)
	if !ok {
		return "", 0, false
	}
	i := strings.LastIndexByte(rest, '/')
	if i < 1 {
		return "", 0, false
	}
	p, err := strconv.Atoi(rest[i+1:])
	return rest[:i], p, err == nil
}

// Position is how far the table holds one source partition.
type Position struct {
	Topic     string
	Partition int
	Last      int64  // the last source offset the table holds
	TopicID   string // of the topic Last is an offset of; "" when unknown
	// SnapshotID is the snapshot that committed Last, and Committed when;
	// zero when that snapshot expired and only the table property says.
	SnapshotID int64
	Committed  time.Time
}

// positionOf is the last offset of topic/partition the table holds, and
// false when it holds none. The snapshots are read newest first from the
// current one back, so a table rolled back to an older snapshot holds what
// that snapshot holds; the property answers for partitions whose snapshots
// expired.
func positionOf(tbl *table.Table, topic string, partition int) (last int64, topicID string, ok bool) {
	key := lastKey(topic, partition)
	for s := tbl.CurrentSnapshot(); s != nil; s = parent(tbl, s) {
		if s.Summary == nil {
			continue
		}
		if v, found := s.Summary.Properties[key]; found {
			if last, topicID, ok = parseLastValue(v); ok {
				return last, topicID, true
			}
		}
	}
	if v, found := tbl.Properties()[key]; found && tbl.CurrentSnapshot() != nil {
		return parseLastValue(v)
	}
	return 0, "", false
}

func parent(tbl *table.Table, s *table.Snapshot) *table.Snapshot {
	if s.ParentSnapshotID == nil {
		return nil
	}
	return tbl.SnapshotByID(*s.ParentSnapshotID)
}

// Positions lists every source partition the table holds, by topic and
// partition.
func Positions(tbl *table.Table) []Position {
	found := map[string]*Position{}
	add := func(key, v string, s *table.Snapshot) {
		if _, seen := found[key]; seen {
			return
		}
		topic, p, ok := parseLastKey(key)
		n, id, valid := parseLastValue(v)
		if !ok || !valid {
			return
		}
		pos := &Position{Topic: topic, Partition: p, Last: n, TopicID: id}
		if s != nil {
			pos.SnapshotID, pos.Committed = s.SnapshotID, time.UnixMilli(s.TimestampMs).UTC()
		}
		found[key] = pos
	}
	for s := tbl.CurrentSnapshot(); s != nil; s = parent(tbl, s) {
		if s.Summary != nil {
			for k, v := range s.Summary.Properties {
				add(k, v, s)
			}
		}
	}
	if tbl.CurrentSnapshot() != nil {
		for k, v := range tbl.Properties() {
			add(k, v, nil)
		}
	}
	var all []Position
	for _, p := range found {
		all = append(all, *p)
	}
	slices.SortFunc(all, func(a, b Position) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return all
}
