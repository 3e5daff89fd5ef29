package sink

import (
	"bytes"
	"cmp"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"
)

// sortedLogRows is logRows with some nulls and NaNs in the sort columns.
func sortedLogRows(n int) []Row {
	rows := logRows(time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC), n)
	for i, r := range rows {
		if i%13 == 0 {
			r[2] = nil // service
		}
		if i%17 == 0 {
			r[6] = nil // latency_ms
		}
	}
	return rows
}

// byServiceLatency is the order sort_by [service asc nulls last, latency_ms
// desc nulls first] means, stable.
func byServiceLatency(rows []Row) []Row {
	want := slices.Clone(rows)
	nulls := func(a, b any, first bool) (int, bool) {
		switch {
		case a == nil && b == nil:
			return 0, true
		case a == nil:
			return map[bool]int{true: -1, false: 1}[first], true
		case b == nil:
			return map[bool]int{true: 1, false: -1}[first], true
		}
		return 0, false
	}
	slices.SortStableFunc(want, func(a, b Row) int {
		if c, done := nulls(a[2], b[2], false); !done {
			c = cmp.Compare(a[2].(string), b[2].(string))
			if c != 0 {
				return c
			}
		} else if c != 0 {
			return c
		}
		if c, done := nulls(a[6], b[6], true); !done {
			return -cmp.Compare(a[6].(float64), b[6].(float64))
		} else {
			return c
		}
	})
	return want
}

// TestFilesSortByOrdersEachFile: with sort_by, each file holds its rows in
// the order the keys say (nulls where they say, ties in arrival order),
// also when the rows are more than one run of a file (row_group_rows
// small here) and so merged at close, and a batch staged in chunks makes
// the same bytes as one written at once: a re-cut still overwrites with the
// same files.
func TestFilesSortByOrdersEachFile(t *testing.T) {
	rows := sortedLogRows(3000)
	write := func(chunk int) (string, []byte) {
		out := t.TempDir()
		cfg := testFilesConfig(t, out)
		cfg.Parquet.RowGroupRows = 400  // eight runs per file
		cfg.Parquet.PageBytes = 4 << 10 // a read of 64 rows crosses pages
		cfg.SortBy = []SortKey{{Column: "service"}, {Column: "latency_ms", Descending: true, NullsFirst: true}}
		writeInChunks(t, cfg, &Batch{Topic: "logs", Partition: 0, First: 0, Last: 2999, Schema: logSchema, Rows: rows}, chunk)
		names := listFiles(t, out)
		if len(names) != 1 {
			t.Fatalf("files %v: want one", names)
		}
		data, err := os.ReadFile(filepath.Join(out, names[0]))
		if err != nil {
			t.Fatal(err)
		}
		return filepath.Join(out, names[0]), data
	}
	path, whole := write(0)
	got := readParquetFile(t, logSchema, path)
	want := byServiceLatency(rows)
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("row %d: %v\nwant %v", i, got[i][:7], want[i][:7])
		}
	}
	if _, staged := write(250); !bytes.Equal(staged, whole) {
		t.Error("the batch staged in chunks of 250 makes other bytes than written at once")
	}
}

// TestParquetSortedRunIsOneRowGroup: a file of one run is written sorted
// as it is, without the merge's second pass.
func TestParquetSortedRunIsOneRowGroup(t *testing.T) {
	cfg := &ParquetConfig{}
	cfg.setDefaults()
	var buf bytes.Buffer
	pw, err := newParquetWriter(&buf, logSchema, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pw.order, err = newRowOrder(pw.cols, []SortKey{{Column: "level"}}, sortRunBytes); err != nil {
		t.Fatal(err)
	}
	rows := sortedLogRows(500)
	for _, r := range rows {
		if err := pw.WriteRow(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(pw.Footer().RowGroups); n != 1 {
		t.Errorf("%d row groups, want 1", n)
	}
	got, err := readParquet(bytes.NewReader(buf.Bytes()), int64(buf.Len()), logSchema)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.IsSortedFunc(got, func(a, b Row) int { return cmp.Compare(a[1].(string), b[1].(string)) }) || len(got) != len(rows) {
		t.Errorf("%d rows, not sorted by level", len(got))
	}
	if _, err := newRowOrder(pw.cols, []SortKey{{Column: "labels"}}, 1); err == nil {
		t.Error("a map column took an order")
	}
}

// TestFilesHeldBytesIsTheSortRun: a sorted file's staged rows are held in
// memory until their run is written, and HeldBytes says so (the job
// counts it in its budget); an unsorted file's are encoded as they come,
// and nothing is held once the batch is written.
func TestFilesHeldBytesIsTheSortRun(t *testing.T) {
	rows := sortedLogRows(2000)
	for _, sorted := range []bool{false, true} {
		cfg := testFilesConfig(t, t.TempDir())
		if sorted {
			cfg.SortBy = []SortKey{{Column: "service"}}
		}
		f, err := newFiles(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		var held []int64
		for first := 0; first < len(rows); first += 500 {
			b := &Batch{Topic: "logs", Partition: 0, Schema: logSchema, Rows: rows[first : first+500], Staged: first}
			if _, err := f.Stage(context.Background(), b); err != nil {
				t.Fatal(err)
			}
			held = append(held, f.HeldBytes("logs", 0, ""))
		}
		if !sorted && slices.Max(held) != 0 {
			t.Errorf("unsorted: held %v, want none", held)
		}
		if sorted && (!slices.IsSorted(held) || held[0] < 500*64) {
			t.Errorf("sorted: held %v after each 500 rows, want it to grow with the run", held)
		}
		if err := f.Write(context.Background(), &Batch{Topic: "logs", Partition: 0, Last: int64(len(rows) - 1), Schema: logSchema, Staged: len(rows)}); err != nil {
			t.Fatal(err)
		}
		if n := f.HeldBytes("logs", 0, ""); n != 0 {
			t.Errorf("sorted %v: %d bytes held after the batch was written", sorted, n)
		}
		f.Close()
	}
}
