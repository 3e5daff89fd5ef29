package sink

import (
	"bytes"
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"unsafe"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// SortKey is one column of the order of rows within a file (a table's
// sort_by). Columns compare as Iceberg orders them: strings and bytes by
// their bytes (so strings by code point), numbers by value with NaN last,
// false before true, times by instant.
type SortKey struct {
	Column     string
	Descending bool
	NullsFirst bool
}

// sortRunBytes bounds the rows a sorted file holds in memory before it
// writes them, sorted, as one row group of its spool file (a run): without
// it a file's rows would all be in memory until the file closes. A file of
// more than one run is merged into its final order when it closes
// (sortFile), reading one page per run and column at a time.
const sortRunBytes = 16 << 20

// rowOrder is a writer's SortKeys resolved to its leaf columns.
type rowOrder struct {
	keys     []sortLeaf
	runBytes int
	spare    [][]parquet.Value // the other set of pending slices (writeRun)
	perm     []int32
	starts   [][]int32 // per repeated leaf, where each run row's values start
	slab     []byte    // the pending rows' bytes while a file is merged (writeParquetRow)
}

type sortLeaf struct {
	leaf       int
	descending bool
	nullsFirst bool
}

// newRowOrder resolves keys against the writer's columns. A map column has
// no order.
func newRowOrder(cols []parquetColumn, keys []SortKey, runBytes int) (*rowOrder, error) {
	o := &rowOrder{runBytes: runBytes}
	for _, k := range keys {
		i := slices.IndexFunc(cols, func(c parquetColumn) bool { return c.field.Name == k.Column })
		if i < 0 {
			return nil, fmt.Errorf("parquet: sort column %q is not a column of the file", k.Column)
		}
		if cols[i].field.Type == StringMap {
			return nil, fmt.Errorf("parquet: sort column %q is a map, which has no order", k.Column)
		}
		o.keys = append(o.keys, sortLeaf{leaf: cols[i].leaf, descending: k.Descending, nullsFirst: k.NullsFirst})
	}
	return o, nil
}

// compare orders two rows by their key values: a(i) and b(i) are the
// values of key i.
func (o *rowOrder) compare(a, b func(i int) parquet.Value) int {
	for i, k := range o.keys {
		x, y := a(i), b(i)
		switch xn, yn := x.IsNull(), y.IsNull(); {
		case xn && yn:
			continue
		case xn || yn:
			// Where nulls go does not turn with the direction (Iceberg's
			// null-order is absolute).
			if xn == k.nullsFirst {
				return -1
			}
			return 1
		}
		c := compareValues(x, y)
		if k.descending {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

func compareValues(x, y parquet.Value) int {
	switch x.Kind() {
	case parquet.Boolean:
		return cmp.Compare(b2i(x.Boolean()), b2i(y.Boolean()))
	case parquet.Int32:
		return cmp.Compare(x.Int32(), y.Int32())
	case parquet.Int64:
		return cmp.Compare(x.Int64(), y.Int64())
	case parquet.Float:
		return compareFloats(float64(x.Float()), float64(y.Float()))
	case parquet.Double:
		return compareFloats(x.Double(), y.Double())
	default:
		return bytes.Compare(x.ByteArray(), y.ByteArray())
	}
}

// compareFloats is cmp.Compare with NaN after every number, as Iceberg
// sorts it (cmp.Compare puts it first).
func compareFloats(a, b float64) int {
	if an, bn := math.IsNaN(a), math.IsNaN(b); an || bn {
		return cmp.Compare(b2i(an), b2i(bn))
	}
	return cmp.Compare(a, b)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// writeRun writes the pending rows (a run) in their order, as row groups
// of their own: every row group of a sorted writer's file is sorted, which
// is what sortFile merges. The sort is stable, so rows equal by the keys
// keep the order they came in, and the same rows make the same file.
func (pw *ParquetWriter) writeRun() error {
	o, n := pw.order, pw.pendingRows
	if n == 0 {
		return nil
	}
	run := pw.pending
	if o.spare == nil {
		o.spare = make([][]parquet.Value, len(run))
	}
	pw.pending, o.spare = o.spare, run
	if len(o.starts) != len(run) {
		o.starts = make([][]int32, len(run))
	}
	for leaf, vals := range run {
		o.starts[leaf] = o.starts[leaf][:0]
		if len(vals) == n {
			continue // one value a row: row i is vals[i]
		}
		for i, v := range vals {
			if v.RepetitionLevel() == 0 {
				o.starts[leaf] = append(o.starts[leaf], int32(i))
			}
		}
		o.starts[leaf] = append(o.starts[leaf], int32(len(vals)))
	}
	o.perm = o.perm[:0]
	for i := range n {
		o.perm = append(o.perm, int32(i))
	}
	slices.SortStableFunc(o.perm, func(a, b int32) int {
		return o.compare(func(k int) parquet.Value { return run[o.keys[k].leaf][a] },
			func(k int) parquet.Value { return run[o.keys[k].leaf][b] })
	})
	for start := 0; start < n; start += writeChunkRows {
		chunk := o.perm[start:min(start+writeChunkRows, n)]
		for leaf, vals := range run {
			dst := pw.pending[leaf]
			if st := o.starts[leaf]; len(st) > 0 {
				for _, r := range chunk {
					dst = append(dst, vals[st[r]:st[r+1]]...)
				}
			} else {
				for _, r := range chunk {
					dst = append(dst, vals[r])
				}
			}
			pw.pending[leaf] = dst
		}
		pw.pendingRows = len(chunk)
		if err := pw.writePending(); err != nil {
			return err
		}
	}
	for leaf := range run {
		clear(run[leaf])
		run[leaf] = run[leaf][:0]
	}
	pw.pendingRows, pw.pendingBytes = 0, 0
	if pw.groupRows > 0 {
		return pw.cutRowGroup()
	}
	return nil
}

// runHeldBytes is what a sorted writer holds in memory for its run: every
// value slot of the pending and spare slices, used or not (they stay
// allocated until the file closes), and the text the pending values point
// to. An unsorted writer holds a chunk of writeChunkRows at most, one of
// the open file's fixed costs.
func (pw *ParquetWriter) runHeldBytes() int64 {
	if pw.order == nil {
		return 0
	}
	var slots, used int
	for _, vals := range pw.pending {
		slots, used = slots+cap(vals), used+len(vals)
	}
	for _, vals := range pw.order.spare {
		slots += cap(vals)
	}
	text := max(pw.pendingBytes-8*used, 0) // add counts 8 a value beside its text
	return int64(slots)*int64(unsafe.Sizeof(parquet.Value{})) + int64(text)
}

// sortFile makes a closed sorted file of more than one run (row group)
// one sorted sequence: a merge of its runs, written with the same settings
// to a new spool file, which replaces sf. The merge keeps an earlier run's
// row before a later run's equal one, so the file is the stable sort of
// its rows.
func (f *Files) sortFile(sf *SpoolFile, footer *format.FileMetaData, s *Schema) (*SpoolFile, *ParquetWriter, error) {
	if footer == nil || len(footer.RowGroups) < 2 {
		return sf, nil, nil
	}
	src, err := parquet.OpenFile(sf, sf.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, nil, fmt.Errorf("parquet: reading back %s to sort it: %w", sf.Name(), err)
	}
	out, err := f.spool.Create()
	if err != nil {
		return nil, nil, err
	}
	pw, err := newParquetWriter(out, s, f.cfg.Parquet, f.pages)
	if err != nil {
		out.Remove()
		return nil, nil, err
	}
	order, err := newRowOrder(pw.cols, f.cfg.SortBy, 0)
	if err != nil {
		out.Remove()
		return nil, nil, err
	}
	if err := mergeRuns(src.RowGroups(), order, pw); err != nil {
		pw.abandon()
		out.Remove()
		return nil, nil, fmt.Errorf("parquet: sorting %s: %w", sf.Name(), err)
	}
	if err := pw.Close(); err != nil {
		pw.abandon()
		out.Remove()
		return nil, nil, err
	}
	sf.Remove()
	return out, pw, nil
}

// mergeRuns writes the rows of sorted row groups to pw in one order.
func mergeRuns(groups []parquet.RowGroup, o *rowOrder, pw *ParquetWriter) error {
	h := &runHeap{order: o}
	defer func() {
		for _, r := range h.runs {
			r.rows.Close()
		}
	}()
	for i, g := range groups {
		r := &runCursor{rows: g.Rows(), index: i, buf: make([]parquet.Row, 64)}
		if ok, err := r.next(o); err != nil {
			return err
		} else if ok {
			h.runs = append(h.runs, r)
		} else {
			r.rows.Close()
		}
	}
	heap.Init(h)
	for h.Len() > 0 {
		r := h.runs[0]
		if err := o.writeParquetRow(pw, r.row); err != nil {
			return err
		}
		ok, err := r.next(o)
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(h, 0)
		} else {
			r.rows.Close()
			heap.Pop(h)
		}
	}
	return nil
}

// runCursor is a run's next row and its key values.
type runCursor struct {
	rows  parquet.Rows
	index int
	buf   []parquet.Row
	n, at int
	row   parquet.Row
	key   []parquet.Value
}

func (r *runCursor) next(o *rowOrder) (bool, error) {
	if r.at == r.n {
		n, err := r.rows.ReadRows(r.buf)
		if n == 0 {
			if err == nil || errors.Is(err, io.EOF) {
				return false, nil
			}
			return false, err
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return false, err
		}
		r.n, r.at = n, 0
	}
	// The values point into the reader's buffers until its next read,
	// which comes once the writer has copied every row of this one.
	r.row = r.buf[r.at]
	r.at++
	r.key = r.key[:0]
	for _, k := range o.keys {
		r.key = append(r.key, r.row[slices.IndexFunc(r.row, func(v parquet.Value) bool { return v.Column() == k.leaf })])
	}
	return true, nil
}

type runHeap struct {
	order *rowOrder
	runs  []*runCursor
}

func (h *runHeap) Len() int { return len(h.runs) }
func (h *runHeap) Less(i, j int) bool {
	a, b := h.runs[i], h.runs[j]
	if c := h.order.compare(func(k int) parquet.Value { return a.key[k] }, func(k int) parquet.Value { return b.key[k] }); c != 0 {
		return c < 0
	}
	return a.index < b.index
}
func (h *runHeap) Swap(i, j int) { h.runs[i], h.runs[j] = h.runs[j], h.runs[i] }
func (h *runHeap) Push(x any)    { h.runs = append(h.runs, x.(*runCursor)) }
func (h *runHeap) Pop() any {
	r := h.runs[len(h.runs)-1]
	h.runs = h.runs[:len(h.runs)-1]
	return r
}

// writeParquetRow appends to pw a row read from a file pw's schema
// wrote, values and levels as they are. Its bytes are copied into one
// buffer for the pending rows (the reader reuses its own), a copy a row
// would otherwise cost an allocation per value (Row.Clone).
func (o *rowOrder) writeParquetRow(pw *ParquetWriter, row parquet.Row) error {
	for _, v := range row {
		if !v.IsNull() && v.Kind() == parquet.ByteArray {
			start := len(o.slab)
			o.slab = append(o.slab, v.ByteArray()...)
			v = parquet.ByteArrayValue(o.slab[start:len(o.slab):len(o.slab)]).Level(v.RepetitionLevel(), v.DefinitionLevel(), v.Column())
			pw.pendingBytes += len(v.ByteArray())
		}
		pw.pending[v.Column()] = append(pw.pending[v.Column()], v)
		pw.pendingBytes += 8
	}
	pw.pendingRows++
	if pw.pendingRows >= writeChunkRows || pw.pendingBytes >= pw.chunkBytes || pw.groupRows+int64(pw.pendingRows) >= pw.rowGroupRows {
		// The column writers have copied what they keep: the buffer's
		// bytes are free again (a grown buffer's old array stays with
		// the values that point into it).
		o.slab = o.slab[:0]
		return pw.writePending()
	}
	return nil
}
