package sink

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/logstore/logstore/internal/testkit"
)

// readersScript reads the files below argv[1] as each reader does with its
// defaults and prints, per reader, every row's trace_id, service and dt
// (the last two from the folders), sorted.
const readersScript = `
import json, sys
import duckdb
import pyarrow.dataset as ds
import pyarrow.parquet as pq

root = sys.argv[1]

def rows(table):
    cols = table.to_pydict()
    return sorted([t, s, str(d) if d is not None else None] for t, s, d in zip(cols["trace_id"], cols["service"], cols["dt"]))

out = {}
for name, read in [
    ("pyarrow.parquet.read_table", lambda: pq.read_table(root)),
    ("pyarrow.dataset hive", lambda: ds.dataset(root, format="parquet", partitioning="hive").to_table()),
    ("duckdb read_parquet **/*.parquet", lambda: duckdb.sql(
        "select trace_id, service, cast(dt as varchar) as dt from read_parquet('%s/**/*.parquet')" % root).fetch_arrow_table()),
]:
    try:
        out[name] = rows(read())
    except Exception as e:
        out[name] = "%s: %s" % (type(e).__name__, e)
print(json.dumps(out))
`

// TestPartitionedFilesReadByReadersWithDefaults: a partitioned output
// with dead letters beside it reads whole, with every row's partition
// values, through pyarrow (read_table and the dataset API) and DuckDB's
// **/*.parquet glob with their defaults. The files once held the partition
// column as well as its folder: pyarrow failed ("Field service has
// incompatible types: string vs dictionary"), and the glob took the dead
// letters under _errors/ for data.
func TestPartitionedFilesReadByReadersWithDefaults(t *testing.T) {
	py := testkit.PyarrowPython(t)
	if err := exec.Command(py, "-c", "import duckdb").Run(); err != nil {
		t.Fatalf("%s has no duckdb: run scripts/setup.sh", py)
	}
	out := t.TempDir()
	cfg := testFilesConfig(t, "file://"+out)
	cfg.PartitionBy = []PartitionColumn{{Name: "service", Column: "service"}, {Name: "dt", Column: "event_time"}}
	if err := (&Config{Files: cfg}).CheckSchema(logSchema); err != nil {
		t.Fatal(err)
	}
	f, err := newFiles(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	rows := logRows(time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC), 7200) // two days
	rows[7][2] = nil                                                      // a null: Hive's null folder
	rows[8][2] = "a b/c"                                                  // escaped in its folder
	b := &Batch{Topic: "logs", Partition: 0, First: 0, Last: int64(len(rows) - 1), Schema: logSchema, Rows: rows}
	if err := f.Write(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	dead := NewDeadLetterBatch("logs", 0, 0, int64(len(rows)-1), []DeadLetterRow{{Reason: "bad json", Source: Source{Offset: 3, Value: []byte("x{")}}})
	if err := f.WriteDeadLetters(context.Background(), dead); err != nil {
		t.Fatal(err)
	}

	var want [][]any
	for _, r := range rows {
		svc := r[2]
		want = append(want, []any{r[8], svc, r[0].(time.Time).Format(DefaultTimeFormat)})
	}
	slices.SortFunc(want, func(a, b []any) int {
		switch {
		case a[0].(string) < b[0].(string):
			return -1
		case a[0].(string) > b[0].(string):
			return 1
		}
		return 0
	})
	wantJSON, _ := json.Marshal(want)

	script := filepath.Join(t.TempDir(), "readers.py")
	if err := os.WriteFile(script, []byte(readersScript), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, err := exec.Command(py, script, out).Output()
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal(stdout, &got); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if len(got) != 3 {
		t.Fatalf("readers: %s", stdout)
	}
	var wantRows any
	json.Unmarshal(wantJSON, &wantRows)
	for reader, raw := range got {
		var rows any
		json.Unmarshal(raw, &rows)
		if !reflect.DeepEqual(rows, wantRows) {
			n := 0
			if l, ok := rows.([]any); ok {
				n = len(l)
			}
			t.Errorf("%s read %.600s (%d rows), want %d rows with their service and dt", reader, raw, n, len(want))
		}
	}
}

// TestFolderNamedAfterAColumnItDoesNotHold: a folder named after a column
// whose value it does not hold whole (a timestamp's day under the
// timestamp's name) would be read as that column by every reader of
// Hive-style folders: refused, naming the key, unless
// keep_partition_columns asks for it.
func TestFolderNamedAfterAColumnItDoesNotHold(t *testing.T) {
	for _, by := range [][]PartitionColumn{
		{{Name: "event_time", Column: "event_time"}},
		{{Name: "service", Column: "host"}},
	} {
		c := &Config{Files: &FilesConfig{URL: "file:///x", PartitionBy: by}}
		c.SetDefaults()
		err := c.CheckSchema(logSchema)
		if err == nil || !strings.Contains(err.Error(), "files.partition_by[0].name") || !strings.Contains(err.Error(), "keep_partition_columns") {
			t.Errorf("%v: %v", by, err)
		}
		c.Files.KeepPartitionColumns = true
		if err := c.CheckSchema(logSchema); err != nil {
			t.Errorf("%v with keep_partition_columns: %v", by, err)
		}
	}
}

// TestKeepPartitionColumnsKeepsTheOldLayout: keep_partition_columns
// writes the folder's column into the files too, and a pending cut whose
// layout an older version recorded (no drop_partition_columns) is
// written so as well; the current layout leaves it out.
func TestKeepPartitionColumnsKeepsTheOldLayout(t *testing.T) {
	rows := logRows(time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC), 10)
	for _, tc := range []struct {
		name     string
		keep     bool
		old      bool // re-cut under a layout without drop_partition_columns
		wantCols int
	}{
		{"default", false, false, len(logSchema.Fields) - 1},
		{"keep_partition_columns", true, false, len(logSchema.Fields)},
		{"an older version's pending cut", false, true, len(logSchema.Fields)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			cfg := testFilesConfig(t, "file://"+out)
			cfg.PartitionBy = []PartitionColumn{{Name: "service", Column: "service"}}
			cfg.KeepPartitionColumns = tc.keep
			f, err := newFiles(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if tc.old {
				layout := strings.Replace(f.Layout(), `,"drop_partition_columns":true`, "", 1)
				if layout == f.Layout() {
					t.Fatalf("layout %s records no drop_partition_columns", layout)
				}
				if f, err = f.WithLayout(layout); err != nil {
					t.Fatal(err)
				}
			}
			b := &Batch{Topic: "logs", First: 0, Last: 9, Schema: logSchema, Rows: rows}
			if err := f.Write(context.Background(), b); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(out, "service=cart", "logs-0-0-9.parquet")
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			if n := len(pf.Schema().Fields()); n != tc.wantCols {
				t.Errorf("%d columns in the file, want %d", n, tc.wantCols)
			}
			got := readParquetFile(t, logSchema, path)
			if len(got) != 2 || got[0][2] != "cart" {
				t.Errorf("read back %v", got)
			}
		})
	}
}
