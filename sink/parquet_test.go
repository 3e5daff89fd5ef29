package sink

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// allTypes has one column of every type, optional, plus required ones.
var allTypes = &Schema{Fields: []Field{
	{Name: "ts_ms", Type: Timestamp, Unit: time.Millisecond, Required: true},
	{Name: "s", Type: String},
	{Name: "i32", Type: Int32},
	{Name: "i64", Type: Int64},
	{Name: "f32", Type: Float32},
	{Name: "f64", Type: Float64},
	{Name: "b", Type: Bool},
	{Name: "ts_us", Type: Timestamp, Unit: time.Microsecond},
	{Name: "d", Type: Date},
	{Name: "raw", Type: Bytes},
	{Name: "doc", Type: JSON},
	{Name: "labels", Type: StringMap},
	{Name: "req_labels", Type: StringMap, Required: true},
	{Name: "req_s", Type: String, Required: true},
}}

func allTypesRows() []Row {
	t0 := time.Date(2026, 11, 29, 7, 5, 3, 123456789, time.UTC)
	day := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	return []Row{
		{t0, "héllo", int32(-7), int64(1) << 40, float32(1.5), 2.25, true, t0, day, []byte{0, 1, 2}, `{"a":[1,2]}`,
			map[string]string{"b": "2", "a": "1", "": "empty key", "null": MapNull}, map[string]string{"k": "v"}, "x"},
		{t0.Add(time.Second), nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, map[string]string{}, ""},
		{t0.Add(2 * time.Second), "", int32(math.MaxInt32), int64(math.MinInt64), float32(math.Inf(-1)), math.NaN(), false,
			time.Date(1969, 12, 31, 23, 59, 59, 999999000, time.UTC), time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC), []byte{}, `null`,
			map[string]string{}, map[string]string{"a": ""}, "y"},
	}
}

func testParquetConfig() *ParquetConfig {
	c := &ParquetConfig{}
	c.setDefaults()
	return c
}

func encodeParquet(t testing.TB, s *Schema, cfg *ParquetConfig, rows []Row) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := newParquetWriter(&buf, s, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		if err := w.WriteRow(r); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// decodeParquet reads a file back into Rows of s with parquet-go, undoing
// the column mapping by hand, so the test checks the levels we wrote.
func decodeParquet(t testing.TB, s *Schema, data []byte) (*parquet.File, []Row) {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := readParquet(bytes.NewReader(data), int64(len(data)), s)
	if err != nil {
		t.Fatal(err)
	}
	return f, rows
}

// expected is what a row reads back as: timestamps at their unit.
func expected(s *Schema, rows []Row) []Row {
	out := make([]Row, len(rows))
	for i, r := range rows {
		out[i] = append(Row{}, r...)
		for j, f := range s.Fields {
			if ts, ok := r[j].(time.Time); ok && f.Type == Timestamp {
				unit := f.Unit
				if unit == 0 {
					unit = time.Microsecond
				}
				out[i][j] = ts.Truncate(unit)
			}
		}
	}
	return out
}

func sameRows(t *testing.T, got, want []Row) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d rows, want %d", len(got), len(want))
	}
	for i := range want {
		for j := range want[i] {
			g, w := got[i][j], want[i][j]
			if gf, ok := g.(float64); ok && math.IsNaN(gf) {
				if wf, ok := w.(float64); ok && math.IsNaN(wf) {
					continue
				}
			}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("row %d column %d: got %#v, want %#v", i, j, g, w)
			}
		}
	}
}

func TestParquetRoundTrip(t *testing.T) {
	rows := allTypesRows()
	// Every level of the Go zstd encoder (the reference's 1, 3, 7 and 19
	// map to its four), gzip's ends; the others have none.
	levels := map[string][]int{"zstd": {1, 3, 7, 19}, "gzip": {1, 9}, "snappy": {0}, "none": {0}}
	for _, codec := range ParquetCompressions {
		for _, level := range levels[codec] {
			for _, dict := range []bool{true, false} {
				cfg := testParquetConfig()
				cfg.Compression, cfg.CompressionLevel = codec, level
				cfg.Dictionary = &dict
				if err := cfg.validate(); err != nil {
					t.Fatal(err)
				}
				data := encodeParquet(t, allTypes, cfg, rows)
				f, got := decodeParquet(t, allTypes, data)
				sameRows(t, got, expected(allTypes, rows))
				want := map[string]format.CompressionCodec{"zstd": format.Zstd, "snappy": format.Snappy, "gzip": format.Gzip, "none": format.Uncompressed}[codec]
				for _, cc := range f.Metadata().RowGroups[0].Columns {
					if cc.MetaData.Codec != want {
						t.Errorf("%s %d: column %v codec %v", codec, level, cc.MetaData.PathInSchema, cc.MetaData.Codec)
					}
				}
			}
		}
	}
}

// TestParquetZstdCompressesRandomIDs: a column of random hex ids (trace
// ids), whose values never repeat, compresses to about half at every zstd
// level, as the reference zstd does: the Go encoder alone stores a block
// whose bytes it finds no match in raw at its fastest level (and at its
// default level, a page without the length prefixes' matches).
func TestParquetZstdCompressesRandomIDs(t *testing.T) {
	ids := &Schema{Fields: []Field{{Name: "trace_id", Type: String, Required: true}}}
	r := rand.New(rand.NewPCG(1, 2))
	rows := make([]Row, 20_000)
	for i := range rows {
		var raw [16]byte
		binary.LittleEndian.PutUint64(raw[:], r.Uint64())
		binary.LittleEndian.PutUint64(raw[8:], r.Uint64())
		rows[i] = Row{hex.EncodeToString(raw[:])}
	}
	for _, level := range []int{1, 3} {
		cfg := testParquetConfig()
		cfg.CompressionLevel = level
		f, got := decodeParquet(t, ids, encodeParquet(t, ids, cfg, rows))
		sameRows(t, got, rows)
		cc := f.Metadata().RowGroups[0].Columns[0].MetaData
		if ratio := float64(cc.TotalCompressedSize) / float64(cc.TotalUncompressedSize); ratio > 0.6 {
			t.Errorf("level %d: %d bytes of ids compressed to %d (%.2f), want about half: hex digits take 4 bits of 8",
				level, cc.TotalUncompressedSize, cc.TotalCompressedSize, ratio)
		}
	}
}

func TestParquetSchemaTypes(t *testing.T) {
	data := encodeParquet(t, allTypes, testParquetConfig(), allTypesRows())
	f, _ := decodeParquet(t, allTypes, data)
	got := f.Schema().String()
	for _, want := range []string{
		"required int64 ts_ms (TIMESTAMP(isAdjustedToUTC=true,unit=MILLIS));",
		"optional binary s (STRING);",
		"optional int32 i32",
		"optional int64 i64",
		"optional float f32;",
		"optional double f64;",
		"optional boolean b;",
		"optional int64 ts_us (TIMESTAMP(isAdjustedToUTC=true,unit=MICROS));",
		"optional int32 d (DATE);",
		"optional binary raw;",
		"optional binary doc (STRING);",
		"optional group labels (MAP) {",
		"required group req_labels (MAP) {",
		"repeated group key_value {",
		"required binary key (STRING);",
		"optional binary value (STRING);",
		"required binary req_s (STRING);",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("schema lacks %q:\n%s", want, got)
		}
	}
	// Columns keep the config's order, not parquet-go's sorted one.
	var names []string
	for _, fl := range f.Schema().Fields() {
		names = append(names, fl.Name())
	}
	var want []string
	for _, fl := range allTypes.Fields {
		want = append(want, fl.Name)
	}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("column order %v, want %v", names, want)
	}
}

func TestParquetStatisticsAndDictionary(t *testing.T) {
	for _, dict := range []bool{true, false} {
		cfg := testParquetConfig()
		cfg.Dictionary = &dict
		data := encodeParquet(t, allTypes, cfg, allTypesRows())
		f, _ := decodeParquet(t, allTypes, data)
		for _, cc := range f.Metadata().RowGroups[0].Columns {
			md := cc.MetaData
			path := strings.Join(md.PathInSchema, ".")
			if md.Statistics.NullCount == 0 && path == "s" {
				t.Errorf("%s: no null count in statistics", path)
			}
			if path == "i64" && (len(md.Statistics.MinValue) == 0 || len(md.Statistics.MaxValue) == 0) {
				t.Errorf("%s: no min/max statistics", path)
			}
			hasDict := md.DictionaryPageOffset != 0
			text := path == "s" || path == "doc" || strings.HasPrefix(path, "labels.") || strings.HasPrefix(path, "req_labels.") || path == "req_s"
			if text && hasDict != dict {
				t.Errorf("dictionary=%v: %s has dictionary page %v", dict, path, hasDict)
			}
			if !text && hasDict {
				t.Errorf("%s: dictionary page on a non-text column", path)
			}
		}
	}
}

func TestParquetRowGroups(t *testing.T) {
	cfg := testParquetConfig()
	cfg.RowGroupRows = 10
	rows := make([]Row, 35)
	for i := range rows {
		rows[i] = Row{time.UnixMilli(int64(i)).UTC(), "m"}
	}
	s := &Schema{Fields: []Field{{Name: "ts", Type: Timestamp, Unit: time.Millisecond}, {Name: "m", Type: String}}}
	data := encodeParquet(t, s, cfg, rows)
	f, got := decodeParquet(t, s, data)
	if n := len(f.RowGroups()); n != 4 {
		t.Errorf("%d row groups, want 4", n)
	}
	sameRows(t, got, rows)

	// By size: a row group closes once its estimate passes row_group_bytes.
	// The text is random hex (it compresses about 2:1): the estimate counts
	// what is written, after compression.
	cfg = testParquetConfig()
	cfg.RowGroupBytes = 64 << 10
	cfg.PageBytes = 8 << 10
	rng := rand.New(rand.NewPCG(1, 2))
	rows = make([]Row, 500)
	for i := range rows {
		var b strings.Builder
		for range 1000 {
			b.WriteByte("0123456789abcdef"[rng.IntN(16)])
		}
		rows[i] = Row{time.UnixMilli(int64(i)).UTC(), b.String()}
	}
	data = encodeParquet(t, s, cfg, rows)
	f, got = decodeParquet(t, s, data)
	if n := len(f.RowGroups()); n < 5 {
		t.Errorf("%d row groups for ~500 KB with 64 KiB row groups", n)
	}
	sameRows(t, got, rows)
}

func TestParquetRefusesBadValues(t *testing.T) {
	s := &Schema{Fields: []Field{{Name: "need", Type: String, Required: true}, {Name: "n", Type: Int64}}}
	for _, tc := range []struct {
		row  Row
		want string
	}{
		{Row{nil, int64(1)}, `column "need" (string): null in a required column`},
		{Row{"x", 1}, `column "n" (int64): holds int`},
		{Row{"x"}, "row has 1 values, the schema 2 columns"},
	} {
		w, err := newParquetWriter(io.Discard, s, testParquetConfig(), nil)
		if err != nil {
			t.Fatal(err)
		}
		err = w.WriteRow(tc.row)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("WriteRow(%v) = %v, want %q", tc.row, err, tc.want)
		}
		// The writer still takes good rows after a refused one.
		if err := w.WriteRow(Row{"ok", nil}); err != nil {
			t.Errorf("after a refused row: %v", err)
		}
	}
}

func TestParquetDeterministic(t *testing.T) {
	a := encodeParquet(t, allTypes, testParquetConfig(), allTypesRows())
	for range 5 {
		if b := encodeParquet(t, allTypes, testParquetConfig(), allTypesRows()); !bytes.Equal(a, b) {
			t.Fatal("the same rows gave different bytes; a re-run would not overwrite with the same file")
		}
	}
}

// TestParquetStringsAreUTF8: every STRING written is valid UTF-8, invalid
// bytes each replaced by U+FFFD, while a bytes column keeps its bytes.
func TestParquetStringsAreUTF8(t *testing.T) {
	s := &Schema{Fields: []Field{
		{Name: "s", Type: String}, {Name: "doc", Type: JSON}, {Name: "m", Type: StringMap}, {Name: "raw", Type: Bytes},
	}}
	rows := []Row{
		{"a\xffb", "{\"k\": \"\xc3\"}", map[string]string{"k\xfe": "v\xed\xa0\x80", "ok": "é"}, []byte("a\xffb")},
		{"héllo 🎉", `{"k": "é"}`, map[string]string{"a\xff": "1", "a\xfe": "2"}, []byte{}},
	}
	want := []Row{
		{"a\uFFFDb", "{\"k\": \"\uFFFD\"}", map[string]string{"k\uFFFD": "v\uFFFD\uFFFD\uFFFD", "ok": "é"}, []byte("a\xffb")},
		// Two keys that repair to the same text: the one sorting last wins.
		{"héllo 🎉", `{"k": "é"}`, map[string]string{"a\uFFFD": "1"}, []byte{}},
	}
	_, got := decodeParquet(t, s, encodeParquet(t, s, testParquetConfig(), rows))
	sameRows(t, got, want)
}

// TestParquetRefusesOutOfRangeTime: an instant outside 0001..9999 is a row
// error (a dead letter), never a wrapped-around number in the file.
func TestParquetRefusesOutOfRangeTime(t *testing.T) {
	s := &Schema{Fields: []Field{{Name: "ts", Type: Timestamp, Unit: time.Microsecond}, {Name: "d", Type: Date}}}
	for _, tc := range []struct {
		row  Row
		want string
	}{
		{Row{time.Unix(9300000000000, 0).UTC(), nil}, `column "ts" (timestamp): 296675-04-08T21:20:00Z is outside`},
		{Row{nil, time.Date(0, 12, 31, 0, 0, 0, 0, time.UTC)}, `column "d" (date): 0000-12-31T00:00:00Z is outside 0001-01-01..9999-12-31`},
		{Row{MaxTime.Add(time.Nanosecond), nil}, `is outside 0001-01-01..9999-12-31`},
	} {
		w, err := newParquetWriter(io.Discard, s, testParquetConfig(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WriteRow(tc.row); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("WriteRow(%v) = %v, want %q", tc.row, err, tc.want)
		}
	}
	_, got := decodeParquet(t, s, encodeParquet(t, s, testParquetConfig(), []Row{{MinTime, MaxTime.Truncate(24 * time.Hour)}, {MaxTime, MinTime}}))
	sameRows(t, got, []Row{{MinTime, time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)}, {MaxTime.Truncate(time.Microsecond), MinTime}})
}

// TestParquetDictionaryStaysUnderItsLimit: a column of distinct values
// falls back to plain encoding once its dictionary passes
// dictionary_max_bytes, so an open file's dictionary stays near that size
// (parquet-go checks the limit only when it writes a page, and a page of
// dictionary indexes holds tens of thousands of rows).
func TestParquetDictionaryStaysUnderItsLimit(t *testing.T) {
	s := &Schema{Fields: []Field{{Name: "id", Type: String, Required: true}}}
	cfg := testParquetConfig()
	cfg.DictionaryMaxBytes = 16 << 10
	rows := make([]Row, 20000)
	for i := range rows {
		// The first chunk repeats (so the column starts with a dictionary,
		// see TestParquetDistinctTextHasNoDictionary), the rest does not.
		rows[i] = Row{fmt.Sprintf("%032x", i*7919)}
		if i < writeChunkRows {
			rows[i] = Row{fmt.Sprintf("%032x", i%4)}
		}
	}
	f, got := decodeParquet(t, s, encodeParquet(t, s, cfg, rows))
	sameRows(t, got, rows)
	pages := f.RowGroups()[0].ColumnChunks()[0].Pages()
	defer pages.Close()
	p, err := pages.ReadPage()
	if err != nil {
		t.Fatal(err)
	}
	d := p.Dictionary()
	if d == nil {
		t.Fatal("the first page is not dictionary-encoded")
	}
	// 32-byte values: the limit and a chunk of rows past it at most.
	if n, most := d.Len(), (int(cfg.DictionaryMaxBytes)+cfg.PageBytes/4)/32; n > most {
		t.Errorf("the dictionary holds %d values (%d bytes), the limit is %d bytes", n, 32*n, cfg.DictionaryMaxBytes)
	}
}

// TestParquetDictionaryPagesByValues: a dictionary column's pages hold
// dictPageValues values whatever the length of its text. Before, a page
// was cut at every dictionary_max_bytes of the values' text: 100,000
// templated messages of ~60 bytes made 261 pages of ~380 values, each its
// own zstd frame, header and page-index entry; the dictionary's limit is
// now checked on the dictionary itself
// (TestParquetDictionaryStaysUnderItsLimit).
func TestParquetDictionaryPagesByValues(t *testing.T) {
	s := &Schema{Fields: []Field{{Name: "message", Type: String, Required: true}}}
	cfg := testParquetConfig()
	rows := make([]Row, 100000)
	for i := range rows {
		rows[i] = Row{fmt.Sprintf("request to the inventory service completed with code %03d", 200+(i*7)%5)}
	}
	f, got := decodeParquet(t, s, encodeParquet(t, s, cfg, rows))
	sameRows(t, got, rows)
	index, err := f.RowGroups()[0].ColumnChunks()[0].OffsetIndex()
	if err != nil {
		t.Fatal(err)
	}
	per := dictPageValues(cfg.PageBytes)
	if n, most := index.NumPages(), (len(rows)+per-1)/per; n > most {
		t.Errorf("%d data pages for %d rows of 5 values; want at most %d (%d values a page)", n, len(rows), most, per)
	}
}

// A text column whose first values are all distinct (ids) is written
// DELTA_LENGTH_BYTE_ARRAY with no dictionary, so zstd sees its text end to
// end; one that repeats (a level) keeps its dictionary; both read back the
// same. Before distinctText, the ids were RLE_DICTIONARY then PLAIN.
func TestParquetDistinctTextHasNoDictionary(t *testing.T) {
	s := &Schema{Fields: []Field{{Name: "trace_id", Type: String}, {Name: "level", Type: String, Required: true}}}
	rows := make([]Row, 5000)
	for i := range rows {
		rows[i] = Row{fmt.Sprintf("%016x%016x", uint64(i)*0x9E3779B97F4A7C15, uint64(i)), []string{"INFO", "WARN", "ERROR"}[i%3]}
		if i%50 == 0 {
			rows[i][0] = nil
		}
	}
	// distinct_text: its default; dictionary; and empty, as in a layout
	// an older version recorded, whose re-cut must write what it wrote.
	for _, distinct := range []string{"", DistinctTextDeltaLength, DistinctTextDictionary} {
		cfg := testParquetConfig()
		if cfg.DistinctText != DistinctTextDeltaLength {
			t.Fatalf("distinct_text defaults to %q", cfg.DistinctText)
		}
		cfg.DistinctText = distinct
		f, got := decodeParquet(t, s, encodeParquet(t, s, cfg, rows))
		sameRows(t, got, rows)
		for _, rg := range f.Metadata().RowGroups {
			ids, level := rg.Columns[0].MetaData.Encoding, rg.Columns[1].MetaData.Encoding
			delta := !slices.Contains(ids, format.RLEDictionary) && slices.Contains(ids, format.DeltaLengthByteArray)
			if want := distinct == DistinctTextDeltaLength; delta != want {
				t.Errorf("distinct_text %q: trace_id's encodings are %v, want DELTA_LENGTH_BYTE_ARRAY without a dictionary: %v", distinct, ids, want)
			}
			if !slices.Contains(level, format.RLEDictionary) {
				t.Errorf("distinct_text %q: level's encodings are %v, want RLE_DICTIONARY", distinct, level)
			}
		}
	}
}

// An integer column whose first values repeat (a status code, the Kafka
// partition) is written with a dictionary; one of distinct values (an
// offset) stays PLAIN; all read back the same. A layout an older version
// recorded (FewIntegers false) writes them all PLAIN, as it did.
func TestParquetFewIntegersHaveADictionary(t *testing.T) {
	s := &Schema{Fields: []Field{{Name: "status", Type: Int32, Required: true}, {Name: "offset", Type: Int64, Required: true}, {Name: "retries", Type: Int64}}}
	rows := make([]Row, 5000)
	for i := range rows {
		rows[i] = Row{[]int32{200, 201, 404, 500, 503}[i*7%5], int64(1_000_000 + i), int64(i % 3)}
		if i%10 == 0 {
			rows[i][2] = nil
		}
	}
	for _, few := range []bool{true, false} {
		cfg := testParquetConfig()
		if !cfg.FewIntegers {
			t.Fatal("FewIntegers is not on by default")
		}
		cfg.FewIntegers = few
		f, got := decodeParquet(t, s, encodeParquet(t, s, cfg, rows))
		sameRows(t, got, rows)
		for _, rg := range f.Metadata().RowGroups {
			for i, want := range []bool{few, false, few} {
				encodings := rg.Columns[i].MetaData.Encoding
				if dict := slices.Contains(encodings, format.RLEDictionary); dict != want {
					t.Errorf("FewIntegers %v: %s's encodings are %v, want RLE_DICTIONARY: %v", few, s.Fields[i].Name, encodings, want)
				}
			}
		}
	}
}

// Integer, timestamp and date columns whose values step by small
// differences (times, offsets, counters, also falling, also wrapping
// around the int64 range) are written DELTA_BINARY_PACKED and read back
// exactly; random values stay PLAIN. sorted_integers: plain, and empty as
// in a layout an older version recorded, write them all PLAIN, as it did.
func TestParquetSortedIntegersAreDeltaPacked(t *testing.T) {
	s := &Schema{Fields: []Field{
		{Name: "ts", Type: Timestamp, Unit: time.Millisecond, Required: true},
		{Name: "at", Type: Timestamp, Unit: time.Microsecond},
		{Name: "day", Type: Date},
		{Name: "offset", Type: Int64, Required: true},
		{Name: "seq", Type: Int32},
		{Name: "falling", Type: Int32, Required: true},
		{Name: "edge", Type: Int64, Required: true},
		{Name: "random", Type: Int64},
	}}
	rnd := rand.New(rand.NewPCG(7, 33))
	start := time.Date(2026, 11, 29, 23, 59, 0, 0, time.UTC)
	rows := make([]Row, 5000)
	for i := range rows {
		at := start.Add(time.Duration(i*72+rnd.IntN(5000)) * time.Millisecond)
		edge := int64(math.MinInt64 + i) // to MaxInt64 and back: the differences wrap
		if i%2 == 1 {
			edge = math.MaxInt64 - int64(i)
		}
		rows[i] = Row{at.Truncate(time.Millisecond), at.Add(time.Duration(rnd.IntN(1000)) * time.Microsecond), at.Truncate(24 * time.Hour),
			int64(1<<40 + i), int32(i*2 + rnd.IntN(3)), int32(-i * 7), edge, int64(rnd.Uint64())}
		if i%9 == 0 {
			rows[i][1], rows[i][2], rows[i][4], rows[i][7] = nil, nil, nil, nil
		}
	}
	if def := testParquetConfig().SortedIntegers; def != SortedIntegersDelta {
		t.Fatalf("sorted_integers defaults to %q", def)
	}
	for _, sorted := range []string{SortedIntegersDelta, SortedIntegersPlain, ""} {
		cfg := testParquetConfig()
		cfg.SortedIntegers = sorted
		f, got := decodeParquet(t, s, encodeParquet(t, s, cfg, rows))
		sameRows(t, got, rows)
		var delta []string // the columns with a DELTA_BINARY_PACKED chunk
		for _, rg := range f.Metadata().RowGroups {
			for i, c := range rg.Columns {
				if slices.Contains(c.MetaData.Encoding, format.DeltaBinaryPacked) && !slices.Contains(delta, s.Fields[i].Name) {
					delta = append(delta, s.Fields[i].Name)
				}
			}
		}
		want := []string{"ts", "at", "day", "offset", "seq", "falling", "edge"}
		if sorted != SortedIntegersDelta {
			want = nil
		}
		if !slices.Equal(delta, want) {
			t.Errorf("sorted_integers %q: DELTA_BINARY_PACKED columns %v, want %v", sorted, delta, want)
		}
	}
}

// A map's entries are written in key order whatever order Go iterates it
// in, small maps (insertion sort) and large ones alike: the same row always
// makes the same bytes.
func TestParquetMapSameBytesEveryTime(t *testing.T) {
	s := &Schema{Fields: []Field{{Name: "m", Type: StringMap}}}
	for _, n := range []int{2, 5, 12, 13, 40} {
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprintf("k%03d", (i*7)%n)] = strconv.Itoa(i)
		}
		first := encodeParquet(t, s, testParquetConfig(), []Row{{m}})
		for range 5 {
			if again := encodeParquet(t, s, testParquetConfig(), []Row{{m}}); !bytes.Equal(first, again) {
				t.Fatalf("%d entries: the same map made different bytes", n)
			}
		}
		_, got := decodeParquet(t, s, first)
		sameRows(t, got, []Row{{m}})
	}
}

// TestParquetSharedMapsSortedOnce: rows the decoder made (ValidText), whose
// maps are shared between rows and never written, give the same file as
// the same rows with maps of their own, through the cache of sorted
// entries: many maps, some repeated near each other, some far apart (the
// cache's slots are reused), empty and one-entry maps, two map columns.
func TestParquetSharedMapsSortedOnce(t *testing.T) {
	s := &Schema{Fields: []Field{{Name: "a", Type: StringMap}, {Name: "n", Type: Int64, Required: true}, {Name: "b", Type: StringMap}}}
	rnd := rand.New(rand.NewPCG(7, 11))
	shared := make([]map[string]string, 300)
	for i := range shared {
		m := map[string]string{}
		for j := range i % 15 {
			m[fmt.Sprintf("k%d", rnd.IntN(40))] = fmt.Sprint(i, "-", j)
		}
		shared[i] = m
	}
	var rows, copies []Row
	for i := range 5000 {
		a, b := shared[rnd.IntN(len(shared))], shared[rnd.IntN(8)]
		if i%3 == 0 {
			a = shared[i%len(shared)] // far apart: the slot was reused since
		}
		rows = append(rows, Row{a, int64(i), b})
		copies = append(copies, Row{maps.Clone(a), int64(i), maps.Clone(b)})
	}
	encode := func(rows []Row, validText bool) []byte {
		var buf bytes.Buffer
		w, err := newParquetWriter(&buf, s, testParquetConfig(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range rows {
			if err := w.writeRow(r, validText); err != nil {
				t.Fatalf("row %d: %v", i, err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	want := encode(copies, false)
	if got := encode(rows, true); !bytes.Equal(got, want) {
		t.Fatal("shared maps through the cache made other bytes than maps of their own")
	}
	_, got := decodeParquet(t, s, want)
	sameRows(t, got, copies)
}

// TestParquetCodecsAreShared: files at the same compression and level
// share one codec, and with it its pooled encoders; a gzip writer is about
// a megabyte, which a codec per file would hold per open file.
func TestParquetCodecsAreShared(t *testing.T) {
	for _, c := range []struct {
		name   string
		levels [2]int // the same codec: 0 is the default level
	}{{"zstd", [2]int{3, 0}}, {"zstd", [2]int{1, 1}}, {"gzip", [2]int{6, 0}}, {"gzip", [2]int{9, 9}}} {
		a, err := parquetCodec(c.name, c.levels[0])
		if err != nil {
			t.Fatal(err)
		}
		b, _ := parquetCodec(c.name, c.levels[1])
		if a != b {
			t.Errorf("%s at levels %d and %d: two codecs", c.name, c.levels[0], c.levels[1])
		}
	}
	fast, _ := parquetCodec("zstd", 1)
	if def, _ := parquetCodec("zstd", 3); fast == def {
		t.Error("zstd levels 1 and 3 share a codec")
	}
}
