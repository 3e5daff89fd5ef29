package producer

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/segmentio/kafka-go/compress"
)

// Header is one record header.
type Header struct {
	Key   string
	Value []byte
}

// Record is one record to produce. Key nil is no key (a keyless record is
// placed by the partitioner); a zero Time is the time of encoding.
type Record struct {
	Key, Value []byte
	Headers    []Header
	Time       time.Time
	// Partition is the record's own partition when Pinned (replay keeps
	// captured partitions); one the topic does not have, or none, lets the
	// partitioner choose.
	Partition int32
	Pinned    bool
}

// Offsets inside a v2 record batch (the magic 2 format, KIP-98): the fields
// an idempotent producer writes after the batch is encoded, and where the
// CRC-32C begins.
const (
	batchLengthAt   = 8
	batchCRCAt      = 17
	batchAttrsAt    = 21
	batchProducerAt = 43 // producer id (8), epoch (2), base sequence (4)
	batchHeaderLen  = 61
	// batchTransactional is the attributes' bit of a transaction's batch.
	batchTransactional = 1 << 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// recordSize is a record's bytes on the wire before compression, the
// measure batches are cut by: what a broker's max.message.bytes counts
// too, less the batch header.
func recordSize(r *Record) int {
	n := len(r.Key) + len(r.Value) + 21 // length, attributes, deltas, key and value lengths at their widest
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value) + 10
	}
	return n
}

// encodeBatch writes records as one v2 record batch, preceded by its int32
// size as a Produce request's records field carries it, compressed with c.
// The producer fields are left at -1; stamp sets them. A transactional
// batch is marked so: read_committed consumers keep it back until its
// transaction's marker, and drop it if the marker aborts.
func encodeBatch(buf *bytes.Buffer, records []Record, c compress.Compression, transactional bool, now time.Time) error {
	buf.Reset()
	var head [4 + batchHeaderLen]byte
	buf.Write(head[:]) // filled in below
	first := now.UnixMilli()
	if !records[0].Time.IsZero() {
		first = records[0].Time.UnixMilli()
	}
	maxTS := first

	var w interface {
		Write([]byte) (int, error)
	} = buf
	var closer interface{ Close() error }
	if c == compress.Lz4 {
		f := newLZ4Frame(buf)
		w, closer = f, f
	} else if c != compress.None {
		codec := c.Codec()
		if codec == nil {
			return fmt.Errorf("compression %d is not known", c)
		}
		cw := codec.NewWriter(buf)
		w, closer = cw, cw
	}
	var rec []byte
	for i := range records {
		r := &records[i]
		ts := first
		if !r.Time.IsZero() {
			ts = r.Time.UnixMilli()
		}
		maxTS = max(maxTS, ts)
		rec = appendRecord(rec[:0], r, ts-first, int64(i))
		if _, err := w.Write(rec); err != nil {
			return err
		}
	}
	if closer != nil {
		if err := closer.Close(); err != nil {
			return err
		}
	}

	b := buf.Bytes()
	binary.BigEndian.PutUint32(b[0:], uint32(len(b)-4))
	h := b[4:]
	// base offset 0 (the broker assigns offsets)
	binary.BigEndian.PutUint32(h[batchLengthAt:], uint32(len(h)-12))
	binary.BigEndian.PutUint32(h[12:], 0xffffffff) // partition leader epoch: -1, the broker's to set
	h[16] = 2                                      // magic
	attrs := uint16(c) & 7
	if transactional {
		attrs |= batchTransactional
	}
	binary.BigEndian.PutUint16(h[batchAttrsAt:], attrs)
	binary.BigEndian.PutUint32(h[23:], uint32(len(records)-1)) // last offset delta
	binary.BigEndian.PutUint64(h[27:], uint64(first))
	binary.BigEndian.PutUint64(h[35:], uint64(maxTS))
	binary.BigEndian.PutUint32(h[57:], uint32(len(records)))
	stamp(b, -1, -1, -1)
	return nil
}

// stamp writes the producer id, epoch and base sequence into an encoded
// batch (with its size prefix) and computes its CRC again: a batch sent
// again after the producer id changed keeps its records and compression.
func stamp(b []byte, producerID int64, epoch int16, seq int32) {
	h := b[4:]
	binary.BigEndian.PutUint64(h[batchProducerAt:], uint64(producerID))
	binary.BigEndian.PutUint16(h[batchProducerAt+8:], uint16(epoch))
	binary.BigEndian.PutUint32(h[batchProducerAt+10:], uint32(seq))
	binary.BigEndian.PutUint32(h[batchCRCAt:], crc32.Checksum(h[batchAttrsAt:], castagnoli))
}

// appendRecord appends one record of a v2 batch: its varint length, then
// attributes, timestamp and offset deltas, key, value and headers.
func appendRecord(dst []byte, r *Record, tsDelta, offDelta int64) []byte {
	body := 1 + varintLen(tsDelta) + varintLen(offDelta) +
		bytesFieldLen(r.Key) + bytesFieldLen(r.Value) + varintLen(int64(len(r.Headers)))
	for _, h := range r.Headers {
		body += varintLen(int64(len(h.Key))) + len(h.Key) + bytesFieldLen(h.Value)
	}
	dst = binary.AppendVarint(dst, int64(body))
	dst = append(dst, 0) // record attributes: none defined
	dst = binary.AppendVarint(dst, tsDelta)
	dst = binary.AppendVarint(dst, offDelta)
	dst = appendBytesField(dst, r.Key)
	dst = appendBytesField(dst, r.Value)
	dst = binary.AppendVarint(dst, int64(len(r.Headers)))
	for _, h := range r.Headers {
		dst = binary.AppendVarint(dst, int64(len(h.Key)))
		dst = append(dst, h.Key...)
		dst = appendBytesField(dst, h.Value)
	}
	return dst
}

// appendBytesField writes a varint length and the bytes; nil is length -1.
func appendBytesField(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	return append(binary.AppendVarint(dst, int64(len(b))), b...)
}

func bytesFieldLen(b []byte) int {
	if b == nil {
		return 1
	}
	return varintLen(int64(len(b))) + len(b)
}

func varintLen(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}
