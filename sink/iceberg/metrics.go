package iceberg

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"math"
	"unicode/utf8"

	"github.com/apache/iceberg-go"
	"github.com/parquet-go/parquet-go/format"
)

// truncateLength is how much of a string or binary bound a data file's
// metrics keep: Iceberg's default metrics mode, truncate(16), which Spark
// and Flink write too. Log lines are long; a bound of the whole line would
// grow every manifest by it and prune no better.
const truncateLength = 16

// metrics are a data file's column metrics in Iceberg's terms, keyed by
// field id; the bounds in Iceberg's single-value serialization.
type metrics struct {
	sizes, values, nulls map[int]int64
	lower, upper         map[int][]byte
}

// fileMetrics turns the Parquet writer's footer into the file's metrics:
// each column chunk's value count, null count and min/max, merged over
// the row groups, with no second pass over the rows. Bounds are for
// top-level primitive columns, as Spark's writer gives them (a map's keys
// and values get their sizes only); a column whose statistics are missing
// or hold a NaN gets no bounds, which a reader takes as "may hold
// anything", never as "holds nothing".
func fileMetrics(footer *format.FileMetaData, schema *iceberg.Schema) metrics {
	m := metrics{sizes: map[int]int64{}, values: map[int]int64{}, nulls: map[int]int64{}, lower: map[int][]byte{}, upper: map[int][]byte{}}
	if footer == nil {
		return m
	}
	noBounds := map[int]bool{}
	for _, rg := range footer.RowGroups {
		for _, cc := range rg.Columns {
			md := &cc.MetaData
			id, typ, top := leafField(md.PathInSchema, schema)
			if id == 0 {
				continue
			}
			m.sizes[id] += md.TotalCompressedSize
			if !top {
				continue
			}
			st := &md.Statistics
			m.values[id] += md.NumValues
			m.nulls[id] += st.NullCount
			if md.NumValues == st.NullCount {
				continue // only nulls: nothing to bound
			}
			lo, hi := st.MinValue, st.MaxValue
			if lo == nil || hi == nil || !wellFormed(typ, lo) || !wellFormed(typ, hi) {
				noBounds[id] = true
				continue
			}
			if cur, ok := m.lower[id]; !ok || compareBound(typ, lo, cur) < 0 {
				m.lower[id] = lo
			}
			if cur, ok := m.upper[id]; !ok || compareBound(typ, hi, cur) > 0 {
				m.upper[id] = hi
			}
		}
	}
	for id := range noBounds {
		delete(m.lower, id)
		delete(m.upper, id)
	}
	for id, lo := range m.lower {
		f, _ := schema.FindFieldByID(id)
		m.lower[id] = truncateLower(f.Type, lo)
		if up := truncateUpper(f.Type, m.upper[id]); up != nil {
			m.upper[id] = up
		} else {
			delete(m.upper, id) // no value of 16 characters is above it: no upper bound
		}
	}
	return m
}

// leafField is the field id and type of a Parquet leaf column; top says
// it is a top-level column. 0 when the table has no such field.
func leafField(path []string, schema *iceberg.Schema) (id int, typ iceberg.Type, top bool) {
	if len(path) == 0 {
		return 0, nil, false
	}
	f, ok := schema.FindFieldByName(path[0])
	if !ok {
		return 0, nil, false
	}
	if len(path) == 1 {
		if _, prim := f.Type.(iceberg.PrimitiveType); prim {
			return f.ID, f.Type, true
		}
		return 0, nil, false
	}
	if mt, ok := f.Type.(*iceberg.MapType); ok && len(path) == 3 {
		switch path[2] {
		case "key":
			return mt.KeyID, mt.KeyType, false
		case "value":
			return mt.ValueID, mt.ValueType, false
		}
	}
	return 0, nil, false
}

// wellFormed says b is a bound of typ's width, and not a NaN (Iceberg's
// float bounds leave NaN out; a NaN bound would make readers skip files
// wrongly).
func wellFormed(typ iceberg.Type, b []byte) bool {
	switch typ.(type) {
	case iceberg.BooleanType:
		return len(b) == 1
	case iceberg.Int32Type, iceberg.DateType:
		return len(b) == 4
	case iceberg.Int64Type, iceberg.TimestampType, iceberg.TimestampTzType, iceberg.TimeType:
		return len(b) == 8
	case iceberg.Float32Type:
		return len(b) == 4 && !math.IsNaN(float64(math.Float32frombits(binary.LittleEndian.Uint32(b))))
	case iceberg.Float64Type:
		return len(b) == 8 && !math.IsNaN(math.Float64frombits(binary.LittleEndian.Uint64(b)))
	case iceberg.StringType, iceberg.BinaryType:
		return true
	}
	return false // a type the sink does not write: no bounds rather than wrong ones
}

// compareBound orders two serialized values of typ.
func compareBound(typ iceberg.Type, a, b []byte) int {
	switch typ.(type) {
	case iceberg.Int32Type, iceberg.DateType:
		return cmp.Compare(int32(binary.LittleEndian.Uint32(a)), int32(binary.LittleEndian.Uint32(b)))
	case iceberg.Int64Type, iceberg.TimestampType, iceberg.TimestampTzType, iceberg.TimeType:
		return cmp.Compare(int64(binary.LittleEndian.Uint64(a)), int64(binary.LittleEndian.Uint64(b)))
	case iceberg.Float32Type:
		return cmp.Compare(math.Float32frombits(binary.LittleEndian.Uint32(a)), math.Float32frombits(binary.LittleEndian.Uint32(b)))
	case iceberg.Float64Type:
		return cmp.Compare(math.Float64frombits(binary.LittleEndian.Uint64(a)), math.Float64frombits(binary.LittleEndian.Uint64(b)))
	}
	return bytes.Compare(a, b) // booleans, and strings and binaries in unsigned byte order (UTF-8's is code point order)
}

// truncateLower is a lower bound of at most truncateLength characters
// (strings) or bytes (binary): a prefix is never above the value.
func truncateLower(typ iceberg.Type, b []byte) []byte {
	switch typ.(type) {
	case iceberg.StringType:
		return bytes.Clone(b[:prefixLen(b)])
	case iceberg.BinaryType:
		return bytes.Clone(b[:min(len(b), truncateLength)])
	}
	return bytes.Clone(b)
}

// truncateUpper is an upper bound of at most truncateLength characters or
// bytes: the value itself when it is that short, else its prefix with the
// last character (byte) that can be incremented incremented and what
// follows it dropped, as Iceberg's UnicodeUtil.truncateStringMax and
// BinaryUtil.truncateBinaryMax do. nil when there is none (every
// character is the last code point, every byte 0xff).
func truncateUpper(typ iceberg.Type, b []byte) []byte {
	switch typ.(type) {
	case iceberg.StringType:
		n := prefixLen(b)
		if n == len(b) {
			return bytes.Clone(b)
		}
		runes := []rune(string(b[:n]))
		for i := len(runes) - 1; i >= 0; i-- {
			next := runes[i] + 1
			if next >= 0xD800 && next <= 0xDFFF { // surrogates are not characters
				next = 0xE000
			}
			if next <= utf8.MaxRune {
				runes[i] = next
				return []byte(string(runes[:i+1]))
			}
		}
		return nil
	case iceberg.BinaryType:
		if len(b) <= truncateLength {
			return bytes.Clone(b)
		}
		out := bytes.Clone(b[:truncateLength])
		for i := len(out) - 1; i >= 0; i-- {
			if out[i] < 0xff {
				out[i]++
				return out[:i+1]
			}
		}
		return nil
	}
	return bytes.Clone(b)
}

// prefixLen is the byte length of b's first truncateLength characters.
func prefixLen(b []byte) int {
	n := 0
	for chars := 0; chars < truncateLength && n < len(b); chars++ {
		_, size := utf8.DecodeRune(b[n:])
		n += size
	}
	return n
}

// apply records m in a data file's description.
func (m metrics) apply(b *iceberg.DataFileBuilder) {
	b.ColumnSizes(m.sizes).ValueCounts(m.values).NullValueCounts(m.nulls).LowerBoundValues(m.lower).UpperBoundValues(m.upper)
}
