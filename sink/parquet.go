package sink

import (
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/klauspost/compress/zstd"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/compress/gzip"
	"github.com/parquet-go/parquet-go/encoding"
	"github.com/parquet-go/parquet-go/format"
)

// The Parquet types each column type becomes:
//
//	string             BYTE_ARRAY (STRING)
//	int32, int64       INT32, INT64
//	float32, float64   FLOAT, DOUBLE
//	bool               BOOLEAN
//	timestamp          INT64 (TIMESTAMP(MILLIS|MICROS, isAdjustedToUTC=true))
//	date               INT32 (DATE)
//	bytes              BYTE_ARRAY
//	json               BYTE_ARRAY (STRING): the JSON logical type reads as
//	                   binary or fails in Spark and older pyarrow, a string
//	                   reads everywhere and get_json_object/json_extract work
//	map<string,string> MAP<STRING, STRING> (key_value: required key, optional value)
//
// A column is OPTIONAL unless its Field is Required.

// parquetColumn is where one Field lands in the file.
type parquetColumn struct {
	field    Field
	leaf     int // first leaf column index; a map uses leaf (keys) and leaf+1 (values)
	optional bool
	micros   bool // timestamp unit
	goType   reflect.Type
}

// parquetSchema converts s to the file schema, in s's column order.
// Dictionary encoding applies to string, json and map columns (a writer
// writes text columns whose first values are distinct without one,
// distinctText, and integer columns whose first values repeat with one,
// fewIntegers).
func parquetSchema(s *Schema, dictionary bool) (*parquet.Schema, error) {
	root, _, err := parquetColumns(s, dictionary, nil)
	if err != nil {
		return nil, err
	}
	return parquet.NewSchema("schema", root), nil
}

// chosen, when not nil, is the encoding the writer chose for some columns
// (by index in s; nil for the default) from their first values
// (ParquetWriter.open): string and json columns whose values are mostly
// distinct are written DELTA_LENGTH_BYTE_ARRAY, without a dictionary
// (distinctText); integer columns whose values repeat, with one
// (fewIntegers); integer, timestamp and date columns whose values step by
// small differences, DELTA_BINARY_PACKED (smallSteps).
func parquetColumns(s *Schema, dictionary bool, chosen []encoding.Encoding) (orderedGroup, []parquetColumn, error) {
	if s == nil || len(s.Fields) == 0 {
		return nil, nil, fmt.Errorf("parquet: the schema has no columns")
	}
	group := make(orderedGroup, 0, len(s.Fields))
	cols := make([]parquetColumn, 0, len(s.Fields))
	seen := make(map[string]bool, len(s.Fields))
	leaf := 0
	for i, f := range s.Fields {
		if f.Name == "" || seen[f.Name] {
			return nil, nil, fmt.Errorf("parquet: column name %q is empty or repeated", f.Name)
		}
		seen[f.Name] = true
		col := parquetColumn{field: f, leaf: leaf, optional: !f.Required, goType: goTypes[f.Type]}
		var node parquet.Node
		text := func() parquet.Node {
			if dictionary {
				return parquet.Encoded(parquet.String(), &parquet.RLEDictionary)
			}
			return parquet.String()
		}
		switch f.Type {
		case String, JSON:
			node = text()
			if i < len(chosen) && chosen[i] != nil {
				node = parquet.String()
			}
		case Int32, Int64:
			node = parquet.Leaf(parquet.Int32Type)
			if f.Type == Int64 {
				node = parquet.Leaf(parquet.Int64Type)
			}
		case Float32:
			node = parquet.Leaf(parquet.FloatType)
		case Float64:
			node = parquet.Leaf(parquet.DoubleType)
		case Bool:
			node = parquet.Leaf(parquet.BooleanType)
		case Timestamp:
			switch f.Unit {
			case time.Millisecond:
				node = parquet.TimestampAdjusted(parquet.Millisecond, true)
			case time.Microsecond, 0: // Spark's and Trino's own precision
				col.micros = true
				node = parquet.TimestampAdjusted(parquet.Microsecond, true)
			default:
				return nil, nil, fmt.Errorf("parquet: column %q: timestamp unit %s is not ms or us", f.Name, f.Unit)
			}
		case Date:
			node = parquet.Date()
		case Bytes:
			node = parquet.Leaf(parquet.ByteArrayType)
		case StringMap:
			node = parquet.Map(text(), parquet.Optional(text()))
			leaf++
		default:
			return nil, nil, fmt.Errorf("parquet: column %q: unknown type %q", f.Name, f.Type)
		}
		if i < len(chosen) && chosen[i] != nil {
			node = parquet.Encoded(node, chosen[i])
		}
		if col.optional {
			node = parquet.Optional(node)
		} else {
			node = parquet.Required(node)
		}
		group = append(group, orderedField{Node: node, name: f.Name})
		cols = append(cols, col)
		leaf++
	}
	return group, cols, nil
}

// orderedGroup is a group node that keeps its fields in the given order;
// parquet.Group sorts them by name, and people read columns in the order the
// config lists them.
type orderedGroup []parquet.Field

type orderedField struct {
	parquet.Node
	name string
}

func (f orderedField) Name() string                      { return f.name }
func (f orderedField) Value(reflect.Value) reflect.Value { return reflect.Value{} }

func (g orderedGroup) ID() int                     { return 0 }
func (g orderedGroup) Type() parquet.Type          { return parquet.Group(nil).Type() }
func (g orderedGroup) Optional() bool              { return false }
func (g orderedGroup) Repeated() bool              { return false }
func (g orderedGroup) Required() bool              { return true }
func (g orderedGroup) Leaf() bool                  { return false }
func (g orderedGroup) Fields() []parquet.Field     { return g }
func (g orderedGroup) Encoding() encoding.Encoding { return nil }
func (g orderedGroup) Compression() compress.Codec { return nil }
func (g orderedGroup) GoType() reflect.Type        { return g.unordered().GoType() }
func (g orderedGroup) unordered() parquet.Group    { return maps.Collect(g.all()) }
func (g orderedGroup) String() string              { return g.print() }
func (g orderedGroup) all() func(func(string, parquet.Node) bool) {
	return func(yield func(string, parquet.Node) bool) {
		for _, f := range g {
			if !yield(f.Name(), f) {
				return
			}
		}
	}
}

func (g orderedGroup) print() string {
	var b strings.Builder
	_ = parquet.PrintSchema(&b, "", g)
	return b.String()
}

// ParquetWriter streams rows of one Schema into a Parquet file. It holds at
// most one row group in memory (encoded and compressed page by page).
//
// Rows are written column by column: WriteRow appends each value to its
// leaf column's pending values, and every writeChunkRows rows (or fewer,
// when they are large) the pending values go to parquet-go's column writers
// in one call per column. Where a chunk ends depends on the rows alone, so
// the same rows make the same pages, and the same bytes, however the caller
// splits them.
type ParquetWriter struct {
	w             *parquet.Writer // nil until the first chunk is written (open)
	out           io.Writer
	schema        *Schema
	opts          []parquet.WriterOption // w's, but for its schema
	dictionary    bool
	deltaText     bool // distinct text columns go DELTA_LENGTH_BYTE_ARRAY (distinct_text)
	fewIntegers   bool // integer columns of a few values get a dictionary (FewIntegers)
	deltaIntegers bool // integer and time columns of small steps go DELTA_BINARY_PACKED (sorted_integers)
	cols          []parquetColumn
	rowGroupBytes int64
	rowGroupRows  int64
	groupStart    int64             // Size() when the open row group began
	groupRows     int64             // rows handed to the open row group
	size          int64             // Size() as of the last chunk written
	pending       [][]parquet.Value // per leaf column, the values of the pending rows
	pendingRows   int
	pendingBytes  int   // about what the pending values hold
	chunkBytes    int   // write the pending rows once they hold this much
	mark          []int // per leaf column, len(pending) before the row being added
	dictMaxBytes  int64 // dictionary_max_bytes: a bigger dictionary goes PLAIN (0: no limit)
	// dictValues is, per leaf column, the values written since its last
	// page, counted for dictionary columns: their pages are cut at
	// dictPageValues (writePending).
	dictValues     []int
	dictPageValues int
	entries        [][2]string // a map's keys and values, sorted by key
	sorted         *sortedMaps // the entries of maps written lately; nil until a map is
	// order sorts the rows of each run (sortrows.go); nil writes them as
	// they come.
	order *rowOrder
}

// writeChunkRows is at most how many rows go to parquet-go's column
// writers at once: enough to pay the per-call cost once per many rows. A
// chunk also ends at chunkBytes (a quarter of a page or a sixteenth of a
// row group, whichever is less), so it overshoots a page or a row group by
// little.
const writeChunkRows = 128

// writeBufferBytes is an open file's buffer before its spool file.
const writeBufferBytes = 8 << 10

// newParquetWriter starts a file on out. cfg must have had SetDefaults.
// pages keeps the open row group's encoded pages: nil keeps them on the
// heap; the Files sink puts them in its spool folder (pageSpill).
func newParquetWriter(out io.Writer, s *Schema, cfg *ParquetConfig, pages parquet.BufferPool) (*ParquetWriter, error) {
	_, cols, err := parquetColumns(s, *cfg.Dictionary, nil)
	if err != nil {
		return nil, err
	}
	codec, err := parquetCodec(cfg.Compression, cfg.CompressionLevel)
	if err != nil {
		return nil, err
	}
	opts := []parquet.WriterOption{
		parquet.Compression(codec),
		parquet.MaxRowsPerRowGroup(cfg.RowGroupRows),
		parquet.PageBufferSize(cfg.PageBytes),
		parquet.DataPageVersion(cfg.DataPageVersion),
		// Min, max and null count go into the column chunk's statistics and
		// the page index, where Spark, Trino and Athena read them; not into
		// every page header as well, as parquet-mr stopped doing in 1.11
		// (PARQUET-1365): each header's bounds cost a second pass over
		// the page.
		parquet.DataPageStatistics(false),
		parquet.DictionaryMaxBytes(cfg.DictionaryMaxBytes),
		// The buffer between the writer and its spool file: 8 KiB rather
		// than parquet-go's 32 KiB. Pages pass it whole (a write larger
		// than the buffer goes straight to the file); what it gathers is
		// headers and the footer, and each open file held the 32 KiB
		// (hundreds of partitions' open files: megabytes).
		parquet.WriteBufferSize(writeBufferBytes),
	}
	if pages != nil {
		opts = append(opts, parquet.ColumnPageBuffers(pages))
	}
	leaves := 0
	for _, c := range cols {
		leaves++
		if c.field.Type == StringMap {
			leaves++
		}
	}
	pw := &ParquetWriter{
		out: out, schema: s, opts: opts, dictionary: *cfg.Dictionary,
		deltaText:     *cfg.Dictionary && cfg.DistinctText == DistinctTextDeltaLength,
		fewIntegers:   *cfg.Dictionary && cfg.FewIntegers,
		deltaIntegers: cfg.SortedIntegers == SortedIntegersDelta,
		cols:          cols, rowGroupBytes: cfg.RowGroupBytes, rowGroupRows: max(cfg.RowGroupRows, 1),
		pending: getPending(leaves), mark: make([]int, leaves),
		chunkBytes:   int(max(min(int64(cfg.PageBytes)/4, cfg.RowGroupBytes/16), 1)),
		dictMaxBytes: cfg.DictionaryMaxBytes,
		dictValues:   make([]int, leaves), dictPageValues: dictPageValues(cfg.PageBytes),
	}
	return pw, nil
}

// open starts the file's parquet-go writer once the first chunk is
// pending, choosing the encoding of text and integer columns from that
// chunk (distinctText, fewIntegers, smallSteps). The chunk ends where the
// rows alone say, so the same rows still make the same file.
func (pw *ParquetWriter) open() error {
	chosen := make([]encoding.Encoding, len(pw.cols))
	for i, c := range pw.cols {
		vals := pw.pending[c.leaf]
		switch c.field.Type {
		case String, JSON:
			if pw.deltaText && distinctText(vals) {
				chosen[i] = &parquet.DeltaLengthByteArray
			}
		case Int32, Int64, Timestamp, Date:
			switch {
			case c.field.Type != Timestamp && c.field.Type != Date && pw.fewIntegers && fewIntegers(vals):
				chosen[i] = &parquet.RLEDictionary
			case pw.deltaIntegers && smallSteps(vals):
				chosen[i] = &parquet.DeltaBinaryPacked
			}
		}
	}
	root, _, err := parquetColumns(pw.schema, pw.dictionary, chosen)
	if err != nil {
		return err
	}
	pw.w = parquet.NewWriter(pw.out, append([]parquet.WriterOption{parquet.NewSchema("schema", root)}, pw.opts...)...)
	return nil
}

// distinctMin is how many values of a column's first chunk distinctText
// needs to judge it: fewer say little about the rest of the file.
const distinctMin = 64

// distinctText says whether a text column's first values are all but
// distinct (9 in 10 or more): ids, hosts, URLs with ids in them. Such a
// column's dictionary outgrows dictionary_max_bytes and falls back to
// PLAIN, whose 4-byte length before each value breaks the text into short
// runs that zstd's match finder stops at: on the bench's 32-hex trace ids
// it spent 4-8x the CPU of the same text laid end to end, for a page 8 %
// larger. DELTA_LENGTH_BYTE_ARRAY keeps the lengths apart from the text
// (BENCHMARKS.md).
func distinctText(vals []parquet.Value) bool {
	n, distinct := countDistinct(vals, &textSets, func(v *parquet.Value) string {
		return unsafe.String(unsafe.SliceData(v.ByteArray()), len(v.ByteArray()))
	})
	return n >= distinctMin && distinct*10 >= n*9
}

// fewIntegers says whether an integer column's first values repeat: 64
// of them at least, a fifth as many distinct or fewer (a status code, the
// Kafka partition, a count). Their dictionary's indexes take zstd less
// time than their plain values, and the file fewer bytes; a column of
// timestamps or offsets stays PLAIN.
func fewIntegers(vals []parquet.Value) bool {
	n, distinct := countDistinct(vals, &intSets, (*parquet.Value).Int64)
	return n >= distinctMin && distinct*5 <= n
}

// smallSteps says whether an integer, timestamp or date column's first
// values (64 at least) go from one to the next by differences that vary
// within half the type's bits: times, offsets, counters, ids handed out
// in order. DELTA_BINARY_PACKED keeps such values as their differences,
// bit-packed at the width their spread needs, and its pages come out a
// fraction of the PLAIN page's size: zstd level 3 spent 10-20 ns a byte
// on the PLAIN pages of the bench's timestamps and offsets, 17-57x the
// delta encoding and zstd of the same values together, and the output
// is smaller (BENCHMARKS.md). The differences wrap around as the
// encoding's own do, so any values can be judged.
func smallSteps(vals []parquet.Value) bool {
	n, bits := 0, 32
	var prev, lo, hi int64
	for i := range vals {
		v := &vals[i]
		if v.IsNull() {
			continue
		}
		x := v.Int64()
		if v.Kind() == parquet.Int32 {
			bits = 16
		}
		if n > 0 {
			d := x - prev
			if v.Kind() == parquet.Int32 {
				d = int64(int32(x) - int32(prev))
			}
			if n == 1 {
				lo, hi = d, d
			}
			lo, hi = min(lo, d), max(hi, d)
		}
		prev = x
		n++
	}
	return n >= distinctMin && uint64(hi-lo) < 1<<bits
}

// countDistinct counts vals but nulls, and their distinct keys.
func countDistinct[K comparable](vals []parquet.Value, sets *setPool[K], key func(*parquet.Value) K) (n, distinct int) {
	seen := sets.get()
	defer sets.put(seen)
	for i := range vals {
		if vals[i].IsNull() {
			continue
		}
		n++
		seen[key(&vals[i])] = struct{}{}
	}
	return n, len(seen)
}

// textSets and intSets are countDistinct's sets, used again: a file's
// writer judges each text and integer column once, and with hundreds of
// partitions writing small files a set made for every column of every
// file was 5 % of what a member allocated (BenchmarkManyPartitions at 600
// partitions).
var (
	textSets setPool[string]
	intSets  setPool[int64]
)

type setPool[K comparable] struct{ sync.Pool }

func (p *setPool[K]) get() map[K]struct{} {
	if m, ok := p.Get().(map[K]struct{}); ok {
		return m
	}
	return map[K]struct{}{}
}

func (p *setPool[K]) put(m map[K]struct{}) {
	clear(m) // no key keeps a row's text alive
	p.Put(m)
}

// parquetCodec is the process's codec for a compression and level: one
// each, so that every file shares its pooled encoders (a gzip writer holds
// about a megabyte; a file of its own each would be that per open file).
func parquetCodec(name string, level int) (compress.Codec, error) {
	switch name {
	case "snappy":
		return &parquet.Snappy, nil
	case "none":
		return &parquet.Uncompressed, nil
	case "zstd", "gzip":
	default:
		return nil, fmt.Errorf("parquet: compression %q is not one of %s", name, strings.Join(ParquetCompressions, ", "))
	}
	if level == 0 {
		level = defaultCompressionLevels[name]
	}
	key := codecKey{name, level}
	sharedCodecsMu.Lock()
	defer sharedCodecsMu.Unlock()
	c := sharedCodecs[key]
	if c == nil {
		if name == "zstd" {
			c = &zstdCodec{level: zstd.EncoderLevelFromZstd(level)}
		} else {
			c = &gzip.Codec{Level: level}
		}
		sharedCodecs[key] = c
	}
	return c, nil
}

type codecKey struct {
	name  string
	level int
}

var (
	sharedCodecsMu sync.Mutex
	sharedCodecs   = map[codecKey]compress.Codec{}
)

// WriteRow appends one row. A row the format cannot hold (a value that
// does not fit its column's type, a null in a required column) is refused
// and the file stays usable; any other error is the output failing (a
// full disk), and the file is lost.
func (pw *ParquetWriter) WriteRow(r Row) error { return pw.writeRow(r, false) }

// valueError is a row the Parquet format cannot hold: a value whose Go
// type does not match its column, a null in a required column, an instant
// outside MinTime..MaxTime. Writing it again can never succeed; every
// other error of writeRow is the file's output failing.
type valueError struct{ err error }

func (e *valueError) Error() string { return e.err.Error() }
func (e *valueError) Unwrap() error { return e.err }

// writeRow is WriteRow; validText says every string in r is valid UTF-8
// already (Batch.ValidText), so it is not checked again.
func (pw *ParquetWriter) writeRow(r Row, validText bool) error {
	if len(r) != len(pw.cols) {
		return &valueError{fmt.Errorf("parquet: row has %d values, the schema %d columns", len(r), len(pw.cols))}
	}
	for i, vals := range pw.pending {
		pw.mark[i] = len(vals)
	}
	bytes := pw.pendingBytes
	for i := range pw.cols {
		c := &pw.cols[i]
		if err := pw.appendValue(c, r[i], validText); err != nil {
			for j, n := range pw.mark {
				clear(pw.pending[j][n:])
				pw.pending[j] = pw.pending[j][:n]
			}
			pw.pendingBytes = bytes
			return &valueError{fmt.Errorf("parquet: column %q (%s): %w", c.field.Name, c.field.Type, err)}
		}
	}
	pw.pendingRows++
	if pw.order != nil {
		if pw.pendingBytes >= pw.order.runBytes || int64(pw.pendingRows) >= pw.rowGroupRows {
			return pw.writeRun()
		}
		return nil
	}
	if pw.pendingRows >= writeChunkRows || pw.pendingBytes >= pw.chunkBytes || pw.groupRows+int64(pw.pendingRows) >= pw.rowGroupRows {
		return pw.writePending()
	}
	return nil
}

// writePending hands the pending rows to the column writers and cuts the
// row group once it reaches row_group_bytes or row_group_rows (parquet-go
// cuts by rows only, and only for rows written through it).
func (pw *ParquetWriter) writePending() error {
	if pw.pendingRows == 0 {
		return nil
	}
	if pw.w == nil {
		if err := pw.open(); err != nil {
			return err
		}
	}
	for i, cw := range pw.w.ColumnWriters() {
		vals := pw.pending[i]
		if _, err := cw.WriteRowValues(vals); err != nil {
			return fmt.Errorf("parquet: %w", err)
		}
		n := len(vals)
		clear(vals) // the values point into the rows' strings
		pw.pending[i] = vals[:0]
		// parquet-go checks dictionary_max_bytes only when it writes a page,
		// and a dictionary column's page fills with 4-byte indexes: tens of
		// thousands of distinct values could pile up in its dictionary
		// first. A page written as soon as the dictionary outgrows the
		// limit lets it fall back to plain in time (within a chunk's
		// values); and a page of dictPageValues indexes bounds the page
		// buffer's memory.
		if size, ok := dictionarySize(cw); ok {
			pw.dictValues[i] += n
			if pw.dictMaxBytes > 0 && size > pw.dictMaxBytes || pw.dictValues[i] >= pw.dictPageValues {
				if err := cw.Flush(); err != nil {
					return fmt.Errorf("parquet: %w", err)
				}
				pw.dictValues[i] = 0
			}
		}
	}
	pw.groupRows += int64(pw.pendingRows)
	pw.pendingRows, pw.pendingBytes = 0, 0
	pw.size = pw.w.Size()
	if pw.groupRows >= pw.rowGroupRows || pw.size-pw.groupStart >= pw.rowGroupBytes {
		return pw.cutRowGroup()
	}
	return nil
}

// cutRowGroup ends the open row group.
func (pw *ParquetWriter) cutRowGroup() error {
	if err := pw.w.Flush(); err != nil {
		return fmt.Errorf("parquet: %w", err)
	}
	pw.size = pw.w.Size()
	pw.groupStart, pw.groupRows = pw.size, 0
	clear(pw.dictValues)
	return nil
}

// dictionarySize is the bytes of cw's dictionary; ok is false for a column
// without one (or whose dictionary fell back to PLAIN). The method is the
// project's copy of parquet-go's (third_party/parquet-go, patch 0002); the
// release lacks it, and scripts/vulncheck.sh type-checks this code against
// the release. Built on the release, a dictionary column's pages are cut
// at page_bytes and its dictionary checked at their ends: upstream's way.
func dictionarySize(cw *parquet.ColumnWriter) (size int64, ok bool) {
	d, ok := any(cw).(interface{ DictionarySize() (int64, bool) })
	if !ok {
		return 0, false
	}
	return d.DictionarySize()
}

// dictPageValues is how many values a dictionary column's page holds: a
// sixty-fourth of page_bytes (2,048 at 128 KiB), whatever their text's
// length. Its page buffer (4-byte indexes and the levels) stays small in
// every open file, and the page's own costs (a zstd frame, a header, a
// page-index entry) are spread over as many values for long text as for
// short. (Cut at 16 KiB of their text, as before, a column of 60-byte
// messages had pages of 270 values; BenchmarkOpenFileMemory: 1.76 against
// 1.55-1.60 MiB per partition now, the files 0.2 % larger.)
func dictPageValues(pageBytes int) int { return max(pageBytes/64, 1024) }

// Size estimates the file size so far: bytes written plus the open row
// group before compression, so it errs high. Rows still pending (a chunk
// not yet written) are not counted yet.
func (pw *ParquetWriter) Size() int64 { return pw.size }

// Close writes the last row group and the footer.
func (pw *ParquetWriter) Close() error {
	flush := pw.writePending
	if pw.order != nil {
		flush = pw.writeRun
	}
	if err := flush(); err != nil {
		return err
	}
	if pw.w == nil { // no rows: the schema alone
		if err := pw.open(); err != nil {
			return err
		}
	}
	if err := pw.w.Close(); err != nil {
		return fmt.Errorf("parquet: %w", err)
	}
	pw.releasePending()
	return nil
}

// pendingValues keeps the per-leaf value slices of finished writers for
// the next file's: each grows to a chunk's values, and with hundreds of
// partitions writing small files, growing them again for every file was
// 12 % of what a member allocated (BenchmarkManyPartitions at 600
// partitions).
var pendingValues sync.Pool // of *[][]parquet.Value

func getPending(leaves int) [][]parquet.Value {
	if p, ok := pendingValues.Get().(*[][]parquet.Value); ok && len(*p) >= leaves {
		return (*p)[:leaves:leaves]
	}
	return make([][]parquet.Value, leaves)
}

// releasePending gives the pending slices back, emptied (their values
// point into rows' text), once; the writer takes no row after.
func (pw *ParquetWriter) releasePending() {
	if pw.pending == nil {
		return
	}
	for i, vals := range pw.pending {
		clear(vals[:cap(vals)])
		pw.pending[i] = vals[:0]
	}
	p := pw.pending
	pw.pending = nil
	pendingValues.Put(&p)
}

// Footer is the file's metadata, column chunk statistics included, once
// Close returned: what a table registers the file with, without reading
// it back.
func (pw *ParquetWriter) Footer() *format.FileMetaData {
	if pw.w == nil {
		return nil
	}
	if f := pw.w.File(); f != nil {
		return f.Metadata()
	}
	return nil
}

// abandon drops the file unfinished: the encoded pages it keeps, in memory
// or spilled to the spool folder, go back now, not when the writer is
// collected (spilled pages are files that would fill the disk meanwhile).
func (pw *ParquetWriter) abandon() {
	if pw.w != nil {
		pw.w.Reset(io.Discard)
	}
	pw.releasePending()
}

// appendValue adds one column's value of a row to its leaf columns. It
// asserts the one Go type the column's type holds (goTypes), so a row
// costs no reflection.
func (pw *ParquetWriter) appendValue(c *parquetColumn, v any, validText bool) error {
	def := 0
	if c.optional {
		def = 1
	}
	if v == nil {
		if !c.optional {
			return fmt.Errorf("null in a required column")
		}
		pw.add(c.leaf, parquet.NullValue(), 0, 0, 0)
		if c.field.Type == StringMap {
			pw.add(c.leaf+1, parquet.NullValue(), 0, 0, 0)
		}
		return nil
	}
	var val parquet.Value
	ok := true
	switch c.field.Type {
	case String, JSON:
		var x string
		if x, ok = v.(string); ok {
			if !validText {
				x = ValidText(x)
			}
			pw.add(c.leaf, parquet.ByteArrayValue(stringBytes(x)), 0, def, len(x))
			return nil
		}
	case Int32:
		var x int32
		x, ok = v.(int32)
		val = parquet.Int32Value(x)
	case Int64:
		var x int64
		x, ok = v.(int64)
		val = parquet.Int64Value(x)
	case Float32:
		var x float32
		x, ok = v.(float32)
		val = parquet.FloatValue(x)
	case Float64:
		var x float64
		x, ok = v.(float64)
		val = parquet.DoubleValue(x)
	case Bool:
		var x bool
		x, ok = v.(bool)
		val = parquet.BooleanValue(x)
	case Bytes:
		var x []byte
		if x, ok = v.([]byte); ok {
			pw.add(c.leaf, parquet.ByteArrayValue(x), 0, def, len(x))
			return nil
		}
	case Timestamp, Date:
		var x time.Time
		if x, ok = v.(time.Time); !ok {
			break
		}
		if !TimeInRange(x) {
			return fmt.Errorf("%s is outside %s..%s", x.Format(time.RFC3339Nano), MinTime.Format(time.DateOnly), MaxTime.Format(time.DateOnly))
		}
		switch {
		case c.field.Type == Date:
			val = parquet.Int32Value(int32(epochDay(x)))
		case c.micros:
			val = parquet.Int64Value(x.UnixMicro())
		default:
			val = parquet.Int64Value(x.UnixMilli())
		}
	case StringMap:
		var x map[string]string
		if x, ok = v.(map[string]string); ok {
			pw.appendMap(c, def, x, validText)
			return nil
		}
	}
	if !ok {
		return fmt.Errorf("holds %T, want %s", v, c.goType)
	}
	pw.add(c.leaf, val, 0, def, 0)
	return nil
}

// add appends a leaf column's value with its repetition and definition
// levels; n is the bytes of a byte array's content, the rest of
// pendingBytes' estimate. The levels are set on the appended value in place
// (parquet-go's inlined setters): Value.Level copies the value through the
// stack, 7 % of the hot path's CPU in BenchmarkWorkerHotPath.
func (pw *ParquetWriter) add(leaf int, v parquet.Value, rep, def, n int) {
	vals := append(pw.pending[leaf], v)
	last := &vals[len(vals)-1]
	last.SetRepetitionLevel(rep)
	last.SetDefinitionLevel(def)
	last.SetColumnIndex(leaf)
	pw.pending[leaf] = vals
	pw.pendingBytes += 8 + n
}

// appendMap writes a map as its key_value group: every key, then every
// value, keys sorted so that the same row always makes the same bytes.
func (pw *ParquetWriter) appendMap(c *parquetColumn, def int, m map[string]string, validText bool) {
	if len(m) == 0 { // present but empty: defined up to the map level
		pw.add(c.leaf, parquet.NullValue(), 0, def, 0)
		pw.add(c.leaf+1, parquet.NullValue(), 0, def, 0)
		return
	}
	var entries [][2]string
	if validText {
		// Rows from the decoder, whose maps are never written once made
		// (decode/mapcache.go): a map repeated by many rows is sorted once.
		if pw.sorted == nil {
			pw.sorted = new(sortedMaps)
		}
		entries = pw.sorted.entries(m)
	} else {
		entries = sortedEntries(pw.entries[:0], m, false)
		pw.entries = entries[:0] // cleared at the next map
	}
	for i, e := range entries {
		pw.add(c.leaf, parquet.ByteArrayValue(stringBytes(e[0])), min(i, 1), def+1, len(e[0]))
	}
	for i, e := range entries {
		// The value is optional, so a present value is one level deeper.
		if e[1] == MapNull {
			pw.add(c.leaf+1, parquet.NullValue(), min(i, 1), def+1, 0)
			continue
		}
		pw.add(c.leaf+1, parquet.ByteArrayValue(stringBytes(e[1])), min(i, 1), def+2, len(e[1]))
	}
}

// sortedEntries appends m's entries to dst, sorted by key, with invalid
// UTF-8 made valid unless validText.
func sortedEntries(dst [][2]string, m map[string]string, validText bool) [][2]string {
	clear(dst[:cap(dst)])
	entries := dst
	for k, v := range m {
		if !validText && (!isASCIIOrValid(k) || (v != MapNull && !isASCIIOrValid(v))) {
			entries = dst
			for k, v := range ValidMap(m) {
				entries = append(entries, [2]string{k, v})
			}
			break
		}
		entries = append(entries, [2]string{k, v})
	}
	// By key. Most maps are small, and an insertion sort of a few entries
	// is cheaper than a general sort's calls to a compare function; a
	// large map (a hostile record's) must not cost quadratic time.
	if len(entries) <= 12 {
		for i := 1; i < len(entries); i++ {
			for j := i; j > 0 && entries[j][0] < entries[j-1][0]; j-- {
				entries[j], entries[j-1] = entries[j-1], entries[j]
			}
		}
	} else {
		slices.SortFunc(entries, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	}
	return entries
}

// sortedMaps keeps the sorted entries of the maps a writer met lately, by
// the map's identity: 64 direct-mapped slots. A slot holds its map, so the
// map's address cannot be reused by another while the slot names it. Only
// for maps that are never written once made.
type sortedMaps struct {
	slots [64]sortedMap
}

type sortedMap struct {
	m       map[string]string
	entries [][2]string
}

func (s *sortedMaps) entries(m map[string]string) [][2]string {
	p := *(*unsafe.Pointer)(unsafe.Pointer(&m)) // the map's identity
	slot := &s.slots[(uintptr(p)>>4)*0x9E3779B97F4A7C15>>58]
	if slot.m == nil || *(*unsafe.Pointer)(unsafe.Pointer(&slot.m)) != p {
		slot.m, slot.entries = m, sortedEntries(slot.entries[:0], m, true)
	}
	return slot.entries
}

// goTypes is the Go type a Row holds for each column type.
var goTypes = map[Type]reflect.Type{
	String:    reflect.TypeFor[string](),
	JSON:      reflect.TypeFor[string](),
	Int32:     reflect.TypeFor[int32](),
	Int64:     reflect.TypeFor[int64](),
	Float32:   reflect.TypeFor[float32](),
	Float64:   reflect.TypeFor[float64](),
	Bool:      reflect.TypeFor[bool](),
	Timestamp: reflect.TypeFor[time.Time](),
	Date:      reflect.TypeFor[time.Time](),
	Bytes:     reflect.TypeFor[[]byte](),
	StringMap: reflect.TypeFor[map[string]string](),
}

// epochDay is the day number of t's UTC date, counted from 1970-01-01.
func epochDay(t time.Time) int64 {
	s := t.Unix()
	d := s / 86400
	if s%86400 < 0 {
		d--
	}
	return d
}

// stringBytes views s as bytes without copying; parquet-go copies values
// into its column buffers and never writes through them.
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
