package wire

import (
	"encoding/binary"
	"fmt"
)

// Kafka's flexible versions (KIP-482), which ConsumerGroupHeartbeat and
// OffsetCommit v8+ use: lengths are unsigned varints of length+1 (0 is
// null), and every struct ends in a tagged-field section, which this
// member never sends and skips when it reads.

// flexWriter appends a flexible request's fields.
type flexWriter struct{ b []byte }

func (w *flexWriter) int16(v int16) { w.b = binary.BigEndian.AppendUint16(w.b, uint16(v)) }
func (w *flexWriter) int32(v int32) { w.b = binary.BigEndian.AppendUint32(w.b, uint32(v)) }
func (w *flexWriter) int64(v int64) { w.b = binary.BigEndian.AppendUint64(w.b, uint64(v)) }

// count writes an array or string length; -1 is null.
func (w *flexWriter) count(n int) { w.b = binary.AppendUvarint(w.b, uint64(n+1)) }

func (w *flexWriter) string(s string) {
	w.count(len(s))
	w.b = append(w.b, s...)
}

// nullableString writes "" as null: every nullable string this member
// sends means "not set" when empty.
func (w *flexWriter) nullableString(s string) {
	if s == "" {
		w.count(-1)
		return
	}
	w.string(s)
}

func (w *flexWriter) uuid(id [16]byte) { w.b = append(w.b, id[:]...) }

// tags ends a struct with no tagged fields.
func (w *flexWriter) tags() { w.b = append(w.b, 0) }

// flexReader reads a flexible answer: fixed-size fields as reader does,
// lengths as varints.
type flexReader struct{ reader }

func (r *flexReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.buf)
	if n <= 0 {
		r.err = fmt.Errorf("%w: a broken varint", ErrMalformed)
		r.buf = nil
		return 0
	}
	r.buf = r.buf[n:]
	return v
}

// count reads an array or string length: -1 for null. A length that
// cannot fit in what is left (each item at least min bytes) is an error,
// so a forged one cannot make the reader allocate without bound.
func (r *flexReader) count(min int) int {
	n := int(r.uvarint()) - 1
	if n > 0 && n*min > len(r.buf) {
		r.take(n * min) // records the error
		return -1
	}
	return n
}

func (r *flexReader) string() string {
	n := r.count(1)
	if n < 0 {
		return ""
	}
	return string(r.take(n))
}

func (r *flexReader) uuid() (id [16]byte) {
	copy(id[:], r.take(16))
	return id
}

// tags skips a tagged-field section.
func (r *flexReader) tags() {
	n := r.uvarint()
	for i := uint64(0); i < n && r.err == nil; i++ {
		r.uvarint() // tag
		r.take(int(r.uvarint()))
	}
}
