package sink

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/logstore/logstore/internal/testkit"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"
	"github.com/parquet-go/parquet-go/format"
)

// collidingText is the k-th of values that share their length and their
// first and last 8 bytes and differ in the 8 between: the values a
// dictionary's cache of recent values keyed on a value's length and ends
// (third_party/parquet-go/PATCHES.md) cannot tell apart by its key. The
// differing bytes are within the first 16, so the column index, which
// keeps 16 bytes of a bound, still tells them apart.
func collidingText(k int) string { return fmt.Sprintf("svc-core%08x-req.end", uint32(k)*2654435761) }

// dictionaryRows are rows of two optional string columns for
// TestParquetDictionaryValuesAndBoundsReadBackExactly, rowGroup rows to a
// row group:
//   - coll: 40 colliding values, in an order that differs from row group
//     to row group (so a value's dictionary index does too), the empty
//     string and nulls;
//   - fall: a few values, then distinct ones until the dictionary outgrows
//     dictionary_max_bytes and the column falls back to PLAIN, then
//     distinct ones still, mixed with the dictionary's earlier values,
//     colliding ones, the empty string and nulls.
func dictionaryRows(n, rowGroup int) []Row {
	rows := make([]Row, n)
	for i := range rows {
		g, r := i/rowGroup, i%rowGroup
		var coll, fall any
		switch {
		case r%13 == 0:
		case r%11 == 0:
			coll = ""
		default:
			coll = collidingText((r*r + r/3 + 7*g) % 40)
		}
		switch {
		case r%17 == 0:
		case r < 3*writeChunkRows:
			fall = []string{"GET /api/v1/orders", "GET /api/v1/users", "POST /api/v1/orders", ""}[r%4]
		case r%5 == 0:
			fall = collidingText(r % 9)
		case r%7 == 0:
			fall = []string{"GET /api/v1/orders", "", "POST /api/v1/orders"}[r%3]
		default:
			fall = fmt.Sprintf("GET /api/v1/orders/%08d?g=%d", r*7919%100_000_000, g)
		}
		rows[i] = Row{coll, fall}
	}
	return rows
}

// Through the project's writer, text columns whose dictionary meets values
// of the same length and ends, the empty string, nulls, a fallback to
// PLAIN mid-row-group and a new dictionary in every row group read back
// exactly in pyarrow; every page's column-index bounds and every chunk's
// statistics are those of the values written. A dictionary that gave a
// value another's index (a cache keyed on less than the whole value, one
// that outlived a row group) reads back the other value and fails here.
func TestParquetDictionaryValuesAndBoundsReadBackExactly(t *testing.T) {
	s := &Schema{Fields: []Field{{Name: "coll", Type: String}, {Name: "fall", Type: String}}}
	const rowGroup = 2500
	rows := dictionaryRows(4*rowGroup-700, rowGroup)
	cfg := testParquetConfig()
	cfg.RowGroupRows = rowGroup
	cfg.PageBytes = 2 << 10
	cfg.DictionaryMaxBytes = 4 << 10
	data := encodeParquet(t, s, cfg, rows)

	if n := checkDictionaryFile(t, s, data, rows); n != 4 {
		t.Fatalf("%d row groups, want 4", n)
	}
}

// A dictionary of tens of thousands of values, past the 4,096 whose page
// bounds a patched parquet-go marks in a bitset on the stack (then on the
// heap, then not at all: third_party/parquet-go/PATCHES.md), still gives
// every page's bounds and reads back exactly.
func TestParquetLargeDictionaryBoundsReadBackExactly(t *testing.T) {
	s := &Schema{Fields: []Field{{Name: "key", Type: String}}}
	rows := make([]Row, 60_000)
	for i := range rows {
		rows[i] = Row{fmt.Sprintf("k%07d", uint32(i*i+i)*2654435761%50_000)}
		switch {
		case i%101 == 0:
			rows[i][0] = nil
		case i < 3*writeChunkRows:
			rows[i][0] = fmt.Sprintf("k%07d", i%5)
		}
	}
	cfg := testParquetConfig()
	cfg.PageBytes = 2 << 10
	cfg.DictionaryMaxBytes = 1 << 20
	checkDictionaryFile(t, s, encodeParquet(t, s, cfg, rows), rows)
}

// checkDictionaryFile reads data back with pyarrow and parquet-go and
// compares every value with rows, every page's column-index bounds and
// every chunk's statistics with the values written, and that each string
// column is dictionary-encoded, falling back to PLAIN if it is named
// "fall". It returns the number of row groups.
func checkDictionaryFile(t *testing.T, s *Schema, data []byte, rows []Row) int {
	t.Helper()
	sameAsPyarrow(t, s, data, rows)
	f, got := decodeParquet(t, s, data)
	sameRows(t, got, rows)
	base := 0
	for g, rg := range f.RowGroups() {
		n := int(rg.NumRows())
		for c, cc := range rg.ColumnChunks() {
			name := s.Fields[c].Name
			values := make([]any, n)
			for i := range values {
				values[i] = rows[base+i][c]
			}
			md := f.Metadata().RowGroups[g].Columns[c].MetaData
			var dictPages, plainPages int
			for _, es := range md.EncodingStats {
				switch {
				case es.PageType == format.DictionaryPage:
				case es.Encoding == format.RLEDictionary:
					dictPages += int(es.Count)
				case es.Encoding == format.Plain:
					plainPages += int(es.Count)
				}
			}
			if dictPages == 0 || (plainPages > 0) != (name == "fall") {
				t.Errorf("row group %d %s: %d RLE_DICTIONARY and %d PLAIN data pages (%v), want a fallback to PLAIN: %v", g, name, dictPages, plainPages, md.EncodingStats, name == "fall")
			}
			checkPageBounds(t, fmt.Sprintf("row group %d %s", g, name), cc, values)
			checkChunkStatistics(t, fmt.Sprintf("row group %d %s", g, name), md.Statistics, values)
		}
		base += n
	}
	return len(f.RowGroups())
}

// A dictionary made from a page's values (as a reader or a copy makes it,
// through parquet-go's init) gives every value, new or already there,
// colliding or empty, an index that holds it, before and after a Reset.
func TestParquetDictionaryFromValuesGivesEachValueItsIndex(t *testing.T) {
	var data []byte
	offsets := []uint32{0}
	for _, v := range []string{"", "alpha", collidingText(1), collidingText(2), "b"} {
		data = append(data, v...)
		offsets = append(offsets, uint32(len(data)))
	}
	d := parquet.String().Type().NewDictionary(0, len(offsets)-1, encoding.ByteArrayValues(data, offsets))
	insert := func(values ...string) {
		t.Helper()
		pv := make([]parquet.Value, len(values))
		for i, v := range values {
			pv[i] = parquet.ValueOf(v)
		}
		indexes := make([]int32, len(values))
		d.Insert(indexes, pv)
		for i, v := range values {
			if got := string(d.Index(indexes[i]).ByteArray()); got != v {
				t.Errorf("%q got index %d, which holds %q", v, indexes[i], got)
			}
		}
	}
	some := []string{collidingText(2), collidingText(1), "", "new", collidingText(2), "b", "new", collidingText(3), "alpha", ""}
	insert(some...)
	insert(some...)
	d.Reset()
	insert("new", collidingText(3), "", "x", collidingText(2), "new", "")
	insert(some...)
	if d.Len() != 8 {
		t.Errorf("the dictionary holds %d values after the Reset, want 8", d.Len())
	}
}

// textBounds are the smallest and largest non-null values, byte-wise, and
// the number of nulls; ok is false when all are null.
func textBounds(values []any) (lo, hi string, nulls int64, ok bool) {
	for _, v := range values {
		s, isText := v.(string)
		switch {
		case !isText:
			nulls++
		case !ok:
			lo, hi, ok = s, s, true
		case s < lo:
			lo = s
		case s > hi:
			hi = s
		}
	}
	return lo, hi, nulls, ok
}

// checkPageBounds compares each page's column-index entry with the values
// of the page's rows. The index keeps the first 16 bytes of a bound
// (parquet.DefaultColumnIndexSizeLimit), the upper one rounded up.
func checkPageBounds(t *testing.T, where string, cc parquet.ColumnChunk, values []any) {
	t.Helper()
	ci, err := cc.ColumnIndex()
	if err != nil {
		t.Fatalf("%s: column index: %v", where, err)
	}
	oi, err := cc.OffsetIndex()
	if err != nil {
		t.Fatalf("%s: offset index: %v", where, err)
	}
	if ci.NumPages() != oi.NumPages() || ci.NumPages() < 2 {
		t.Fatalf("%s: %d pages in the column index, %d in the offset index: want the same, several", where, ci.NumPages(), oi.NumPages())
	}
	limit := parquet.DefaultColumnIndexSizeLimit
	for p := range ci.NumPages() {
		first, end := oi.FirstRowIndex(p), int64(len(values))
		if p+1 < oi.NumPages() {
			end = oi.FirstRowIndex(p + 1)
		}
		lo, hi, nulls, ok := textBounds(values[first:end])
		if ci.NullPage(p) != !ok || ci.NullCount(p) != nulls {
			t.Errorf("%s page %d (rows %d-%d): null page %v with %d nulls, want %v with %d", where, p, first, end-1, ci.NullPage(p), ci.NullCount(p), !ok, nulls)
		}
		if !ok {
			continue
		}
		wantMin, wantMax := []byte(lo), []byte(hi)
		if len(wantMin) > limit {
			wantMin = wantMin[:limit]
		}
		if len(wantMax) > limit {
			wantMax = append([]byte(nil), wantMax[:limit]...)
			for i := len(wantMax) - 1; i >= 0; i-- {
				if wantMax[i]++; wantMax[i] != 0 {
					break
				}
			}
		}
		if gotMin, gotMax := ci.MinValue(p).ByteArray(), ci.MaxValue(p).ByteArray(); !bytes.Equal(gotMin, wantMin) || !bytes.Equal(gotMax, wantMax) {
			t.Errorf("%s page %d (rows %d-%d): column index bounds %q..%q, want %q..%q", where, p, first, end-1, gotMin, gotMax, wantMin, wantMax)
		}
	}
}

// checkChunkStatistics compares a column chunk's statistics, which keep
// whole values, with its values.
func checkChunkStatistics(t *testing.T, where string, st format.Statistics, values []any) {
	t.Helper()
	lo, hi, nulls, _ := textBounds(values)
	if !bytes.Equal(st.MinValue, []byte(lo)) || !bytes.Equal(st.MaxValue, []byte(hi)) || st.NullCount != nulls {
		t.Errorf("%s: statistics %q..%q with %d nulls, want %q..%q with %d", where, st.MinValue, st.MaxValue, st.NullCount, lo, hi, nulls)
	}
}

// sameAsPyarrow reads data with pyarrow (scripts/verify_parquet.py), an
// independent reader, and compares every value of s's string columns with
// rows.
func sameAsPyarrow(t *testing.T, s *Schema, data []byte, rows []Row) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "file.parquet")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(testkit.PyarrowPython(t), filepath.Join("..", "scripts", "verify_parquet.py"), path, "--rows")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pyarrow could not read the file: %v", err)
	}
	var read struct {
		Rows []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal(out, &read); err != nil {
		t.Fatalf("verify_parquet.py output: %v", err)
	}
	if len(read.Rows) != len(rows) {
		t.Fatalf("pyarrow read %d rows, want %d", len(read.Rows), len(rows))
	}
	bad := 0
	for i, r := range rows {
		for c, f := range s.Fields {
			if g, w := read.Rows[i][f.Name], r[c]; g != w {
				if bad++; bad <= 10 {
					t.Errorf("row %d %s: pyarrow read %#v, wrote %#v", i, f.Name, g, w)
				}
			}
		}
	}
}
