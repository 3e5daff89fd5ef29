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
// name, which outlives the snapshot when it expires.
const lastPrefix = "logstore.last/"

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
	Last      int64 // the last source offset the table holds
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
func positionOf(tbl *table.Table, topic string, partition int) (int64, bool) {
	key := lastKey(topic, partition)
	for s := tbl.CurrentSnapshot(); s != nil; s = parent(tbl, s) {
		if s.Summary == nil {
			continue
		}
		if v, ok := s.Summary.Properties[key]; ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				return n, true
			}
		}
	}
	if v, ok := tbl.Properties()[key]; ok && tbl.CurrentSnapshot() != nil {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n, true
		}
	}
	return 0, false
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
		n, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil {
			return
		}
		pos := &Position{Topic: topic, Partition: p, Last: n}
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
