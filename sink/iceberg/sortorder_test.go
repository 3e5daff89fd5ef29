package iceberg

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/logstore/logstore/sink"
)

type sortOut struct {
	DefaultSortOrderID int      `json:"default_sort_order_id"`
	SortOrder          []string `json:"sort_order"`
	SortOrders         int      `json:"sort_orders"`
	DataFiles          []struct {
		Path        string
		SortOrderID *int `json:"sort_order_id"`
		Rows        [][]any
	} `json:"data_files"`
}

func readSortOrder(t *testing.T, cfg *sink.IcebergConfig) sortOut {
	t.Helper()
	var r sortOut
	readIceberg(t, cfg, &r, "--sort-order")
	return r
}

// TestSortByIsTheTableSortOrder: sort_by becomes the table's default sort
// order, every data file names it (sort_order_id) and holds its rows in
// it, as pyiceberg and pyarrow read them; a changed sort_by replaces the
// order at the next start, and files written before keep theirs.
func TestSortByIsTheTableSortOrder(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.PartitionBy = []sink.TablePartition{{Column: "ts", Transform: "day"}}
	cfg.SortBy = []sink.TableSort{{Column: "level", Direction: "asc", Nulls: "last"}, {Column: "seq", Direction: "desc", Nulls: "last"}}
	tb := openTestTable(t, cfg)
	if err := tb.Write(context.Background(), testBatch(0, 0, 39)); err != nil {
		t.Fatal(err)
	}
	r := readSortOrder(t, cfg)
	if got := strings.Join(r.SortOrder, ", "); got != "level ASC NULLS LAST, seq DESC NULLS LAST" {
		t.Errorf("the table's sort order is %q", got)
	}
	if len(r.DataFiles) < 2 {
		t.Fatalf("%d data files, want one a day (several)", len(r.DataFiles))
	}
	for _, f := range r.DataFiles {
		if f.SortOrderID == nil || *f.SortOrderID != r.DefaultSortOrderID || r.DefaultSortOrderID == 0 {
			t.Errorf("%s: sort_order_id %v, the table's order is %d", f.Path, f.SortOrderID, r.DefaultSortOrderID)
		}
		sorted := slices.IsSortedFunc(f.Rows, func(a, b []any) int {
			la, lb := a[0], b[0]
			switch {
			case la == nil && lb != nil:
				return 1 // nulls last
			case la != nil && lb == nil:
				return -1
			case la != nil && la.(string) != lb.(string):
				return strings.Compare(la.(string), lb.(string))
			}
			return int(b[1].(float64) - a[1].(float64)) // seq desc
		})
		if !sorted {
			t.Errorf("%s: rows not in level asc nulls last, seq desc: %v", f.Path, f.Rows)
		}
	}
	tb.Close()

	// The next start sorts by seq only: a new order; the old
	// files keep the old one.
	cfg.SortBy = []sink.TableSort{{Column: "seq", Direction: "asc", Nulls: "first"}}
	tb = openTestTable(t, cfg)
	if err := tb.Write(context.Background(), testBatch(0, 40, 49)); err != nil {
		t.Fatal(err)
	}
	r2 := readSortOrder(t, cfg)
	if got := strings.Join(r2.SortOrder, ", "); got != "seq ASC NULLS FIRST" || r2.SortOrders != 2 || r2.DefaultSortOrderID == r.DefaultSortOrderID {
		t.Errorf("after the change: order %q, %d orders, default %d (was %d)", got, r2.SortOrders, r2.DefaultSortOrderID, r.DefaultSortOrderID)
	}
	ids := map[int]int{}
	for _, f := range r2.DataFiles {
		if f.SortOrderID != nil {
			ids[*f.SortOrderID]++
		}
	}
	if ids[r.DefaultSortOrderID] != len(r.DataFiles) || ids[r2.DefaultSortOrderID] == 0 {
		t.Errorf("files by sort order id %v: want %d of order %d and the new ones of order %d", ids, len(r.DataFiles), r.DefaultSortOrderID, r2.DefaultSortOrderID)
	}
}

// TestSortedTableSaysWhatItHolds: a table with sort_by is a
// sink.MemoryHolder, and its staged rows' runs show in HeldBytes until
// the batch is written (the job counts them in batch.memory_budget).
func TestSortedTableSaysWhatItHolds(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.SortBy = []sink.TableSort{{Column: "level", Direction: "asc", Nulls: "last"}}
	tb := openTestTable(t, cfg)
	var holder sink.MemoryHolder = tb
	b := testBatch(0, 0, 99)
	if _, err := holder.Stage(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if n := holder.HeldBytes("logs", 0, ""); n <= 0 {
		t.Errorf("HeldBytes %d after staging 100 sorted rows", n)
	}
	if err := tb.Write(context.Background(), &sink.Batch{Topic: "logs", Partition: 0, First: 0, Last: 99, Schema: testSchema, Staged: 100}); err != nil {
		t.Fatal(err)
	}
	if n := holder.HeldBytes("logs", 0, ""); n != 0 {
		t.Errorf("HeldBytes %d once the batch is written", n)
	}
	if n := totalRecords(t, tb); n != 100 {
		t.Errorf("%d rows in the table, want 100", n)
	}
}
