package sink

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// parquetMagic opens and ends every Parquet file.
const parquetMagic = "PAR1"

// errNotConcatenable is a part whose layout concatParquet does not copy
// (encrypted, bloom filters, a page index inside its row groups): the
// caller stores the parts as they are instead.
var errNotConcatenable = errors.New("parquet: a part cannot be concatenated byte for byte")

// concatPart is one finished Parquet file to concatenate.
type concatPart struct {
	r    io.ReaderAt
	size int64
}

// concatParquet writes to dst one Parquet file that holds the row groups
// of parts, in their order, each copied byte for byte: pages are not
// decoded, re-encoded or compressed again, so joining files costs a copy
// of their bytes. Every part must have the same schema (the caller's
// rule: parts of one staged schema). A column chunk carries its own
// encodings and dictionary, so parts whose writers chose differently
// (dictionary in one, delta in another) join as they are.
//
// What moves is fixed up: each row group's and column chunk's page
// offsets, and the page index (column indexes copied as they are, offset
// indexes with their pages' offsets moved), written after the row groups
// as a writer writes it. It returns the file's footer and size.
func concatParquet(dst io.Writer, parts []concatPart) (*format.FileMetaData, int64, error) {
	if len(parts) == 0 {
		return nil, 0, errors.New("parquet: nothing to concatenate")
	}
	footers := make([]*format.FileMetaData, len(parts))
	for i, p := range parts {
		md, err := readFooter(p.r, p.size)
		if err != nil {
			return nil, 0, err
		}
		footers[i] = md
	}
	out := &offsetWriter{w: dst}
	if _, err := io.WriteString(out, parquetMagic); err != nil {
		return nil, 0, err
	}
	merged := *footers[0]
	merged.RowGroups, merged.NumRows = nil, 0
	deltas := make([]int64, len(parts))
	for i, p := range parts {
		start, end, err := rowGroupSpan(footers[i], p.size)
		if err != nil {
			return nil, 0, err
		}
		delta := out.n - start
		deltas[i] = delta
		if _, err := io.Copy(out, io.NewSectionReader(p.r, start, end-start)); err != nil {
			return nil, 0, fmt.Errorf("parquet: copying row groups: %w", err)
		}
		for _, rg := range footers[i].RowGroups {
			rg.Columns = append([]format.ColumnChunk(nil), rg.Columns...)
			for c := range rg.Columns {
				moveChunk(&rg.Columns[c], delta)
			}
			if rg.FileOffset > 0 {
				rg.FileOffset += delta
			}
			rg.Ordinal = int16(len(merged.RowGroups))
			merged.RowGroups = append(merged.RowGroups, rg)
			merged.NumRows += rg.NumRows
		}
	}
	// The page index, after every row group: column indexes then offset
	// indexes, as parquet-go and parquet-mr write them.
	var buf []byte
	var protocol thrift.CompactProtocol
	for pass := range 2 {
		g := 0
		for i, p := range parts {
			for range footers[i].RowGroups {
				rg := &merged.RowGroups[g]
				g++
				for c := range rg.Columns {
					cc := &rg.Columns[c]
					off, length := cc.ColumnIndexOffset, int64(cc.ColumnIndexLength)
					if pass == 1 {
						off, length = cc.OffsetIndexOffset, int64(cc.OffsetIndexLength)
					}
					if off <= 0 || length <= 0 {
						continue
					}
					buf = growBytes(buf, int(length))
					if _, err := p.r.ReadAt(buf, off-deltas[i]); err != nil {
						return nil, 0, fmt.Errorf("parquet: reading a page index: %w", err)
					}
					at := out.n
					if pass == 0 {
						if _, err := out.Write(buf); err != nil {
							return nil, 0, err
						}
						cc.ColumnIndexOffset = at
						continue
					}
					var index format.OffsetIndex
					if err := thrift.Unmarshal(&protocol, buf, &index); err != nil {
						return nil, 0, fmt.Errorf("parquet: reading an offset index: %w", err)
					}
					for l := range index.PageLocations {
						index.PageLocations[l].Offset += deltas[i]
					}
					b, err := thrift.Marshal(&protocol, &index)
					if err != nil {
						return nil, 0, err
					}
					if _, err := out.Write(b); err != nil {
						return nil, 0, err
					}
					cc.OffsetIndexOffset, cc.OffsetIndexLength = at, int32(len(b))
				}
			}
		}
	}
	footer, err := thrift.Marshal(&protocol, &merged)
	if err != nil {
		return nil, 0, err
	}
	footer = binary.LittleEndian.AppendUint32(footer, uint32(len(footer)))
	footer = append(footer, parquetMagic...)
	if _, err := out.Write(footer); err != nil {
		return nil, 0, err
	}
	return &merged, out.n, nil
}

// moveChunk moves a column chunk's offsets by delta; the page index's
// offsets are the page index pass's (they still point into the part, as
// delta from where its row groups were).
func moveChunk(cc *format.ColumnChunk, delta int64) {
	if cc.FileOffset > 0 {
		cc.FileOffset += delta
	}
	md := &cc.MetaData
	md.DataPageOffset += delta
	if md.DictionaryPageOffset > 0 {
		md.DictionaryPageOffset += delta
	}
	if md.IndexPageOffset > 0 {
		md.IndexPageOffset += delta
	}
	if cc.ColumnIndexOffset > 0 {
		cc.ColumnIndexOffset += delta
	}
	if cc.OffsetIndexOffset > 0 {
		cc.OffsetIndexOffset += delta
	}
}

// rowGroupSpan is where a file's row groups' pages are: from the first
// page of its first column chunk to the end of its last, in one run as
// writers lay them out. Layouts the copy cannot move as one run are
// errNotConcatenable.
func rowGroupSpan(md *format.FileMetaData, size int64) (start, end int64, err error) {
	start, end = size, 0
	for _, rg := range md.RowGroups {
		for _, cc := range rg.Columns {
			m := cc.MetaData
			if cc.FilePath != "" || len(cc.EncryptedColumnMetadata) > 0 || m.BloomFilterOffset > 0 {
				return 0, 0, errNotConcatenable
			}
			first := m.DataPageOffset
			if m.DictionaryPageOffset > 0 && m.DictionaryPageOffset < first {
				first = m.DictionaryPageOffset
			}
			start, end = min(start, first), max(end, first+m.TotalCompressedSize)
		}
	}
	if len(md.RowGroups) == 0 || start < int64(len(parquetMagic)) || end > size || start >= end {
		return 0, 0, errNotConcatenable
	}
	for _, rg := range md.RowGroups {
		for _, cc := range rg.Columns {
			if inside(cc.ColumnIndexOffset, start, end) || inside(cc.OffsetIndexOffset, start, end) {
				return 0, 0, errNotConcatenable
			}
		}
	}
	return start, end, nil
}

func inside(off, start, end int64) bool { return off > 0 && off >= start && off < end }

// readFooter reads a Parquet file's metadata from its end.
func readFooter(r io.ReaderAt, size int64) (*format.FileMetaData, error) {
	var tail [8]byte
	if size < 12 {
		return nil, fmt.Errorf("parquet: a file of %d bytes has no footer", size)
	}
	if _, err := r.ReadAt(tail[:], size-8); err != nil {
		return nil, fmt.Errorf("parquet: reading the footer: %w", err)
	}
	if string(tail[4:]) != parquetMagic {
		return nil, errNotConcatenable // an encrypted footer ("PARE") or not Parquet
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	if n > size-12 {
		return nil, fmt.Errorf("parquet: a footer of %d bytes in a file of %d", n, size)
	}
	b := make([]byte, n)
	if _, err := r.ReadAt(b, size-8-n); err != nil {
		return nil, fmt.Errorf("parquet: reading the footer: %w", err)
	}
	md := new(format.FileMetaData)
	if err := thrift.Unmarshal(new(thrift.CompactProtocol), b, md); err != nil {
		return nil, fmt.Errorf("parquet: decoding the footer: %w", err)
	}
	return md, nil
}

func growBytes(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

// offsetWriter counts the bytes written through it: the offsets of
// what concatParquet writes next.
type offsetWriter struct {
	w io.Writer
	n int64
}

func (c *offsetWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
