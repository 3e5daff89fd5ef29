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
	// The snapshot that committed it and when (ms), in the table
	// property only: a position is then found without the snapshot.
	SnapshotID  int64 `json:"snapshot_id,omitempty"`
	CommittedMs int64 `json:"committed_ms,omitempty"`
}

// headKey is the table property naming the snapshot of the job's last
// commit, set in that commit with the positions' properties. While that
// snapshot is in the current snapshot's ancestry (no rollback past it),
// the properties are the positions as of it, and only the snapshots after
// it (compactions, other writers) need reading: a start and a commit cost
// the same whatever the length of the chain.
const headKey = "logstore.head"

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
// none of it. A table rolled back to an older snapshot holds what that
// snapshot holds.
func PositionOf(tbl *table.Table, topic string, partition int) (Position, bool) {
	return positionIn(tbl, lastKey(topic, partition), topic, partition)
}

func positionIn(tbl *table.Table, key, topic string, partition int) (Position, bool) {
	cur := tbl.CurrentSnapshot()
	if cur == nil {
		return Position{}, false
	}
	props := tbl.Properties()
	head, fast := headOf(tbl)
	// The snapshots newer than the head (or, without one in the chain,
	// every snapshot) are read newest first.
	for s := cur; s != nil && !(fast && s.SnapshotID == head); s = parent(tbl, s) {
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
	raw, found := props[key]
	if !found {
		return Position{}, false
	}
	v, ok := parseLastValue(raw)
	if !ok {
		return Position{}, false
	}
	p := Position{Topic: topic, Partition: partition, Last: v.Last, First: v.First, TopicID: v.TopicID}
	if v.SnapshotID != 0 && tbl.SnapshotByID(v.SnapshotID) != nil {
		p.SnapshotID, p.Committed = v.SnapshotID, time.UnixMilli(v.CommittedMs).UTC()
	}
	return p, true
}

// headOf is the snapshot of the job's last commit, when the current
// snapshot descends from it: then the table properties hold the positions
// as of it. It is looked for among the snapshots since (headWalk at
// most); false (read the whole chain) when it is not there: a rollback
// past it, or a table written before the head was kept.
func headOf(tbl *table.Table) (int64, bool) {
	head, err := strconv.ParseInt(tbl.Properties()[headKey], 10, 64)
	if err != nil {
		return 0, false
	}
	n := 0
	for s := tbl.CurrentSnapshot(); s != nil && n < headWalk; s = parent(tbl, s) {
		if s.SnapshotID == head {
			return head, true
		}
		n++
	}
	if tbl.SnapshotByID(head) == nil && chainExpired(tbl) {
		return head, true // expired with its ancestors: the properties are all there is
	}
	return 0, false
}

// headWalk bounds the search for the head: past it (that many commits of
// other writers since the job's last) the whole chain is read, as before.
const headWalk = 1000

// chainExpired says the current snapshot's ancestry ends at an expired
// snapshot (a parent id with no snapshot), rather than at the table's
// first: what expiry leaves, and no rollback makes.
func chainExpired(tbl *table.Table) bool {
	s := tbl.CurrentSnapshot()
	for n := 0; s != nil && n < headWalk; n++ {
		if s.ParentSnapshotID == nil {
			return false
		}
		p := tbl.SnapshotByID(*s.ParentSnapshotID)
		if p == nil {
			return true
		}
		s = p
	}
	return false
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
	head, fast := headOf(tbl)
	for s := tbl.CurrentSnapshot(); s != nil && !(fast && s.SnapshotID == head); s = parent(tbl, s) {
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
			if pos, ok := positionIn(tbl, k, topic, p); ok {
				all = append(all, pos)
			}
		}
	}
	slices.SortFunc(all, func(a, b Position) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return all
}
