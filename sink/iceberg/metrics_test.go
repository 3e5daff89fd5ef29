package iceberg

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/logstore/logstore/sink"
)

// dataFilesOf lists the current snapshot's data files.
func dataFilesOf(t *testing.T, tb *Table) []iceberg.DataFile {
	t.Helper()
	tbl, err := tb.cat.LoadTable(context.Background(), tb.ident)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var dfs []iceberg.DataFile
	for _, task := range tasks {
		dfs = append(dfs, task.File)
	}
	return dfs
}

func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
func le64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

// TestDataFileMetricsPerColumnType: every data file is registered with
// value and null counts and lower/upper bounds for each column type, taken
// from the Parquet footer, strings and binaries truncated to 16 as
// Iceberg's truncate(16) does.
func TestDataFileMetricsPerColumnType(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.PartitionBy = nil // one file
	tb := openTestTable(t, cfg)
	b := testBatch(0, 0, 9)
	b.Rows[9][10] = `{"n":9,"msg":"a long line of the log"}` // doc: 38 characters
	b.Rows[9][9] = bytes.Repeat([]byte{0xde, 0xff}, 10)      // raw: 20 bytes
	b.Rows[4][5] = nil                                       // ratio: one null
	if err := tb.Write(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	dfs := dataFilesOf(t, tb)
	if len(dfs) != 1 {
		t.Fatalf("%d data files, want 1", len(dfs))
	}
	df := dfs[0]
	id := func(name string) int {
		i := testSchema.Index(name)
		if i < 0 {
			t.Fatalf("no column %s", name)
		}
		return i + 1
	}
	micros := func(ts time.Time) []byte { return le64(uint64(ts.UnixMicro())) }
	tsLast := t0.Add(9 * 7 * time.Hour)
	for _, tc := range []struct {
		col          string
		nulls        int64
		lower, upper []byte
	}{
		{"ts", 0, micros(t0), micros(tsLast)},
		{"ts_ms", 0, micros(t0.Truncate(time.Millisecond)), micros(tsLast.Truncate(time.Millisecond))},
		{"level", 2, []byte(""), []byte("warn")},
		{"seq", 0, le64(0), le64(9)},
		{"code", 0, le32(0), le32(9)},
		{"ratio", 1, le64(math.Float64bits(0)), le64(math.Float64bits(2.25))},
		{"ratio32", 0, le32(math.Float32bits(0)), le32(math.Float32bits(4.5))},
		{"ok", 0, []byte{0}, []byte{1}},
		{"day", 0, le32(uint32(t0.Unix() / 86400)), le32(uint32(t0.Unix() / 86400))},
		// 0xde 0xff … truncated to 16 bytes; its upper bound increments
		// the last byte below 0xff (the 15th, 0xde) and drops the rest.
		{"raw", 0, []byte{0xde, 0}, append(bytes.Repeat([]byte{0xde, 0xff}, 7), 0xdf)},
		// `{"n":9,"msg":"a ` is 16 characters; ' ' + 1 is '!'.
		{"doc", 0, []byte(`{"n":0}`), []byte(`{"n":9,"msg":"a!`)},
	} {
		i := id(tc.col)
		if got := df.ValueCounts()[i]; got != 10 {
			t.Errorf("%s: value count %d, want 10", tc.col, got)
		}
		if got := df.NullValueCounts()[i]; got != tc.nulls {
			t.Errorf("%s: null count %d, want %d", tc.col, got, tc.nulls)
		}
		if got := df.LowerBoundValues()[i]; !bytes.Equal(got, tc.lower) {
			t.Errorf("%s: lower bound %x, want %x", tc.col, got, tc.lower)
		}
		if got := df.UpperBoundValues()[i]; !bytes.Equal(got, tc.upper) {
			t.Errorf("%s: upper bound %x, want %x", tc.col, got, tc.upper)
		}
		if df.ColumnSizes()[i] <= 0 {
			t.Errorf("%s: no column size", tc.col)
		}
	}
	if _, ok := df.LowerBoundValues()[id("attrs")]; ok {
		t.Errorf("attrs, a map, has a bound")
	}
}

// TestBoundTruncation: truncate(16) of strings counts characters, not
// bytes; an upper bound that cannot be incremented is dropped, never
// kept below the value.
func TestBoundTruncation(t *testing.T) {
	s, bin := iceberg.PrimitiveTypes.String, iceberg.PrimitiveTypes.Binary
	maxRune := string(rune(0x10FFFF))
	for _, tc := range []struct {
		name         string
		typ          iceberg.Type
		in           string
		lower, upper string // upper "<none>": no upper bound
	}{
		{"short string kept", s, "warn", "warn", "warn"},
		{"16 characters kept", s, strings.Repeat("a", 16), strings.Repeat("a", 16), strings.Repeat("a", 16)},
		{"17 characters", s, strings.Repeat("a", 16) + "b", strings.Repeat("a", 16), strings.Repeat("a", 15) + "b"},
		{"multibyte counts as one", s, strings.Repeat("é", 20), strings.Repeat("é", 16), strings.Repeat("é", 15) + "ê"},
		{"last code point carries", s, strings.Repeat("a", 15) + maxRune + "x", strings.Repeat("a", 15) + maxRune, strings.Repeat("a", 14) + "b"},
		{"before the surrogates", s, strings.Repeat("a", 15) + string(rune(0xD7FF)) + "x", strings.Repeat("a", 15) + string(rune(0xD7FF)), strings.Repeat("a", 15) + string(rune(0xE000))},
		{"nothing to increment", s, strings.Repeat(maxRune, 17), strings.Repeat(maxRune, 16), "<none>"},
		{"binary 16 kept", bin, strings.Repeat("\xff", 16), strings.Repeat("\xff", 16), strings.Repeat("\xff", 16)},
		{"binary carries", bin, "\x01" + strings.Repeat("\xff", 16), "\x01" + strings.Repeat("\xff", 15), "\x02"},
		{"binary all 0xff", bin, strings.Repeat("\xff", 17), strings.Repeat("\xff", 16), "<none>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(truncateLower(tc.typ, []byte(tc.in))); got != tc.lower {
				t.Errorf("lower %q, want %q", got, tc.lower)
			}
			up := truncateUpper(tc.typ, []byte(tc.in))
			got := string(up)
			if up == nil {
				got = "<none>"
			}
			if got != tc.upper {
				t.Errorf("upper %q, want %q", got, tc.upper)
			}
		})
	}
}

// TestTimeFilterPlansOnlyFilesInRange: a 15-minute query over an hour of
// data in a day-partitioned table plans the files whose ts range meets it,
// not every file of the day (pyiceberg plan_files, by the bounds).
func TestTimeFilterPlansOnlyFilesInRange(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.PartitionBy = []sink.TablePartition{{Column: "ts", Transform: "day"}}
	tb := openTestTable(t, cfg)
	hour := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	// Twelve batches of five minutes each: one file each, one partition.
	for k := range 12 {
		b := testBatch(0, int64(k*10), int64(k*10+9))
		for j := range b.Rows {
			ts := hour.Add(time.Duration(k)*5*time.Minute + time.Duration(j)*30*time.Second)
			b.Rows[j][0], b.Rows[j][1] = ts, ts
		}
		if err := tb.Write(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	where := fmt.Sprintf("ts >= '%s' and ts < '%s'", hour.Add(20*time.Minute).Format("2006-01-02T15:04:05-07:00"), hour.Add(35*time.Minute).Format("2006-01-02T15:04:05-07:00"))
	r := readTable(t, cfg, "--plan-only", "--where", where)
	if r.AllFiles != 12 {
		t.Fatalf("%d files in the table, want 12", r.AllFiles)
	}
	if len(r.Files) != 3 {
		t.Errorf("%s plans %d of %d files, want the 3 whose range meets it (08:20-08:25, 08:25-08:30, 08:30-08:35)", where, len(r.Files), r.AllFiles)
	}
	if n := readTable(t, cfg, "--count-only", "--where", where).Count; n != 30 {
		t.Errorf("%s reads %d rows, want 30", where, n)
	}
}
