package fetch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/segmentio/kafka-go/compress"
	"github.com/segmentio/kafka-go/protocol"
)

// The layout of a v2 record batch (KIP-98), offsets from its start.
const (
	v2Attributes   = 21 // int16; the CRC covers everything from here on
	v2BaseTime     = 27 // int64, the first timestamp
	v2MaxTime      = 35 // int64
	v2RecordsStart = 61 // after the int32 record count
	v2TimeAppend   = 0x08
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// v2Records reads the records of one v2 batch straight from the fetched
// bytes: batch is the whole batch, its 12-byte offset and length prefix
// included. It checks the batch's CRC-32C, decompresses it (kafka-go's
// codecs) and calls fn for each record in order. Keys, values and header
// values alias batch (or the decompressed copy): fn copies what it keeps.
// kafka-go's decoder does the same work through paged buffers and a copy
// per key and value, a tenth of a member's CPU when it catches up; this
// reads the records where they are.
//
// A record's time is the batch's max timestamp when the broker stamped the
// batch (LogAppendTime), as Kafka's own consumer reads it, and its create
// time otherwise.
func v2Records(batch []byte, fn func(r *v2Record) error) error {
	if len(batch) < v2RecordsStart {
		return errors.New("record batch shorter than its header")
	}
	if want, got := binary.BigEndian.Uint32(batch[17:21]), crc32.Checksum(batch[v2Attributes:], castagnoli); want != got {
		return fmt.Errorf("record batch CRC-32C mismatch (computed %d, found %d)", got, want)
	}
	attributes := binary.BigEndian.Uint16(batch[v2Attributes:])
	base := int64(binary.BigEndian.Uint64(batch[0:8]))
	baseTime := int64(binary.BigEndian.Uint64(batch[v2BaseTime:]))
	maxTime := int64(binary.BigEndian.Uint64(batch[v2MaxTime:]))
	count := int(int32(binary.BigEndian.Uint32(batch[57:61])))
	data := batch[v2RecordsStart:]
	if codec := compress.Compression(attributes & 7); codec != 0 {
		buf := inflated.Get().(*[]byte)
		defer inflated.Put(buf)
		var err error
		if *buf, err = decompress(codec, data, (*buf)[:0]); err != nil {
			return err
		}
		data = *buf
	}
	rd := recordReader{b: data}
	var r v2Record
	for i := 0; i < count; i++ {
		r = v2Record{headers: r.headers[:0]}
		size := rd.varint()
		end := rd.pos + int(size)
		if rd.err == nil && (size < 0 || end > len(rd.b)) {
			rd.err = errTruncated
		}
		rd.pos++ // record attributes, unused
		timeDelta := rd.varint()
		r.Offset = base + rd.varint()
		r.Key = rd.bytes()
		r.Value = rd.bytes()
		for n := rd.varint(); n > 0 && rd.err == nil; n-- {
			key := rd.bytes()
			r.headers = append(r.headers, protocol.Header{Key: string(key), Value: rd.bytes()})
		}
		if rd.err == nil && rd.pos != end {
			rd.err = fmt.Errorf("record length %d does not match its fields", size)
		}
		if rd.err != nil {
			return fmt.Errorf("record %d of the batch at offset %d: %w", i, base, rd.err)
		}
		ms := baseTime + timeDelta
		if attributes&v2TimeAppend != 0 {
			ms = maxTime
		}
		r.Time = time.Unix(ms/1000, (ms%1000)*int64(time.Millisecond))
		if err := fn(&r); err != nil {
			return err
		}
	}
	return nil
}

// v2Record is one record of a batch as v2Records hands it out; its slices
// alias the batch and its headers are reused for the next record.
type v2Record struct {
	Offset     int64
	Time       time.Time
	Key, Value []byte // nil for null
	headers    []protocol.Header
}

var errTruncated = errors.New("truncated")

// recordReader reads a batch's records: Kafka's zigzag varints and
// varint-length byte strings. The first error sticks; reads after it
// return zeros.
type recordReader struct {
	b   []byte
	pos int
	err error
}

func (rd *recordReader) varint() int64 {
	if rd.err != nil {
		return 0
	}
	if rd.pos >= len(rd.b) {
		rd.err = errTruncated
		return 0
	}
	v, n := binary.Varint(rd.b[rd.pos:])
	if n <= 0 {
		rd.err = errors.New("bad varint")
		return 0
	}
	rd.pos += n
	return v
}

// bytes reads a length-prefixed byte string: nil for length -1 (null),
// empty and non-nil for 0.
func (rd *recordReader) bytes() []byte {
	n := rd.varint()
	if rd.err != nil || n < 0 {
		return nil
	}
	if n > int64(len(rd.b)-rd.pos) {
		rd.err = errTruncated
		return nil
	}
	out := rd.b[rd.pos : rd.pos+int(n) : rd.pos+int(n)]
	rd.pos += int(n)
	return out
}

// maxInflated bounds what one batch may decompress to, so that a hostile
// or broken batch cannot take the process's memory: Kafka's own limit on
// a batch is its max.message.bytes, 1 MiB by default and seldom above
// 100 MiB.
const maxInflated = 1 << 30

// inflated holds the buffers batches decompress into. fn copies what it
// keeps, so a buffer serves batch after batch: as many exist as batches
// are read at once, not one per partition.
var inflated = sync.Pool{New: func() any { return new([]byte) }}

// decompress appends data's decompressed bytes to dst.
func decompress(codec compress.Compression, data, dst []byte) ([]byte, error) {
	c := codec.Codec()
	if c == nil {
		return dst, fmt.Errorf("unsupported compression codec (%d)", codec)
	}
	zr := c.NewReader(bytes.NewReader(data))
	defer zr.Close()
	for {
		if len(dst) == cap(dst) {
			dst = slices.Grow(dst, max(4*len(data), cap(dst))) // logs compress about 4:1
		}
		n, err := zr.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if errors.Is(err, io.EOF) {
			return dst, nil
		}
		if err != nil {
			return dst, fmt.Errorf("decompress %s: %w", codec, err)
		}
		if len(dst) > maxInflated {
			return dst, fmt.Errorf("decompress %s: the batch inflates past %d bytes", codec, maxInflated)
		}
	}
}
