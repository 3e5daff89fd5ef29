package iceberg

import (
	"cmp"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"
)

// lastPrefix starts the keys that record, per source partition, the last
// offset a table holds: in the summary of the snapshot that committed it
// (logstore.last/{topic}/{partition}), and in a table property of the same
// name, which outlives the snapshot when it expires. The value is JSON:
// {"last":1999,"first":1500,"topic_id":"oPq3…"}, the batch that commit
// added (first..last) and the topic's id when Kafka keeps one.
const lastPrefix = "logstore.last/"

type lastValue struct {
	Last    int64  `json:"last"`
	First   int64  `json:"first"`
	TopicID string `json:"topic_id,omitempty"`
}

func (v lastValue) String() string {
	b, _ := json.Marshal(v) // plain fields: cannot fail
	return string(b)
}

func parseLastValue(s string) (lastValue, bool) {
	var v lastValue
	return v, json.Unmarshal([]byte(s), &v) == nil
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
	First     int64  // where the batch that ended at Last began
	TopicID   string // of the topic Last is an offset of; "" when unknown
	// SnapshotID is the snapshot that committed Last, and Committed when;
	// zero when that snapshot expired and only the table property says.
	SnapshotID int64
	Committed  time.Time
}

// PositionOf is how far tbl holds topic/partition; false when it holds
// none of it. The snapshots are read newest first from the current one
// back, so a table rolled back to an older snapshot holds what that
// snapshot holds; the property answers for partitions whose snapshots
// expired.
func PositionOf(tbl *table.Table, topic string, partition int) (Position, bool) {
	key := lastKey(topic, partition)
	for s := tbl.CurrentSnapshot(); s != nil; s = parent(tbl, s) {
		if s.Summary == nil {
			continue
		}
		if raw, found := s.Summary.Properties[key]; found {
			if v, ok := parseLastValue(raw); ok {
				return Position{Topic: topic, Partition: partition, Last: v.Last, First: v.First, TopicID: v.TopicID,
					SnapshotID: s.SnapshotID, Committed: time.UnixMilli(s.TimestampMs).UTC()}, true
			}
		}
	}
	if raw, found := tbl.Properties()[key]; found && tbl.CurrentSnapshot() != nil {
		if v, ok := parseLastValue(raw); ok {
			return Position{Topic: topic, Partition: partition, Last: v.Last, First: v.First, TopicID: v.TopicID}, true
		}
	}
	return Position{}, false
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
	keys := map[string]bool{}
	for s := tbl.CurrentSnapshot(); s != nil; s = parent(tbl, s) {
		if s.Summary != nil {
			for k := range s.Summary.Properties {
				keys[k] = true
			}
		}
	}
	for k := range tbl.Properties() {
		keys[k] = true
	}
	var all []Position
	for k := range keys {
		if topic, p, ok := parseLastKey(k); ok {
			if pos, ok := PositionOf(tbl, topic, p); ok {
				all = append(all, pos)
			}
		}
	}
	slices.SortFunc(all, func(a, b Position) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return all
}
