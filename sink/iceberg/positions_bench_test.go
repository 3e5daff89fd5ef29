package iceberg

import (
	"fmt"
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// chainTable is a table's metadata with n snapshots, as a job at
// commit_interval 0s makes them: each commits one of 12 partitions, but
// partition 11 only in the first (a quiet partition, the worst case for a
// walk). withHead keeps the head and the positions' properties as the
// commits now set them; without, as before.
func chainTable(tb testing.TB, n int, withHead bool) *table.Table {
	tb.Helper()
	var extra iceberg.Properties
	if withHead {
		extra = iceberg.Properties{headKey: strconv.Itoa(n)}
	}
	return chainTableWith(tb, n, extra)
}

// chainT0ms is the first snapshot's time in every chain this test binary
// builds, after any chain's metadata's own last-updated: two chains of the
// same length compare equal, times included (one taken from the clock per
// chain differed by a millisecond when the clock ticked between them).
var chainT0ms = time.Now().Add(time.Hour).UnixMilli()

// chainTableWith is chainTable with the head and extra properties.
func chainTableWith(tb testing.TB, n int, extra iceberg.Properties) *table.Table {
	tb.Helper()
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "msg", Type: iceberg.PrimitiveTypes.String})
	meta, err := table.NewMetadata(schema, iceberg.UnpartitionedSpec, table.UnsortedSortOrder, "file:///t", iceberg.Properties{"format-version": "2"})
	if err != nil {
		tb.Fatal(err)
	}
	b, err := table.MetadataBuilderFromBase(meta, "")
	if err != nil {
		tb.Fatal(err)
	}
	props := iceberg.Properties{}
	t0ms := chainT0ms
	var parent *int64
	for i := int64(1); i <= int64(n); i++ {
		part := int(i % 11)
		if i == 1 {
			part = 11
		}
		v := lastValue{Last: i * 100, First: i*100 - 99, SnapshotID: i, CommittedMs: t0ms + i*3400}
		key := lastKey("logs", part)
		s := &table.Snapshot{SnapshotID: i, ParentSnapshotID: parent, SequenceNumber: i, TimestampMs: v.CommittedMs, ManifestList: "file:///t/m" + strconv.FormatInt(i, 10),
			Summary: &table.Summary{Operation: table.OpAppend, Properties: iceberg.Properties{key: lastValue{Last: v.Last, First: v.First}.String()}}}
		if err := b.AddSnapshot(s); err != nil {
			tb.Fatal(err)
		}
		props[key] = v.String()
		id := i
		parent = &id
	}
	if err := b.SetSnapshotRef(table.MainBranch, int64(n), table.BranchRef); err != nil {
		tb.Fatal(err)
	}
	maps.Copy(props, extra)
	if err := b.SetProperties(props); err != nil {
		tb.Fatal(err)
	}
	m, err := b.Build()
	if err != nil {
		tb.Fatal(err)
	}
	return table.New(table.Identifier{"logs", "raw"}, m, "file:///t/metadata/v1.json", nil, nil)
}

// BenchmarkPositionOf: how far the table holds a quiet partition, at
// 100 and 10,000 snapshots: with the head, flat; walking the chain (the
// tables before), growing with it.
func BenchmarkPositionOf(b *testing.B) {
	benchChains(b, func(tbl *table.Table) bool {
		p, ok := PositionOf(tbl, "logs", 11)
		return ok && p.Last == 100
	})
}

// BenchmarkPositions: every partition's position, as a start reads them.
func BenchmarkPositions(b *testing.B) {
	benchChains(b, func(tbl *table.Table) bool { return len(Positions(tbl)) == 12 })
}

func benchChains(b *testing.B, read func(*table.Table) bool) {
	for _, withHead := range []bool{false, true} {
		for _, n := range []int{100, 10_000} {
			tbl := chainTable(b, n, withHead)
			b.Run(fmt.Sprintf("head=%v/snapshots=%d", withHead, n), func(b *testing.B) {
				for b.Loop() {
					if !read(tbl) {
						b.Fatal("wrong positions")
					}
				}
			})
		}
	}
}

// TestPositionsWithHeadMatchTheChain: the head's properties give the
// positions the chain gives, snapshot and time included.
func TestPositionsWithHeadMatchTheChain(t *testing.T) {
	walk, head := Positions(chainTable(t, 50, false)), Positions(chainTable(t, 50, true))
	if fmt.Sprint(walk) != fmt.Sprint(head) || len(walk) != 12 {
		t.Errorf("walking the chain: %v\nwith the head: %v", walk, head)
	}
}
