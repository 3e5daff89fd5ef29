package sink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"unsafe"

	"github.com/pierrec/lz4/v4"

	"github.com/logstore/logstore/internal/confkey"
	"github.com/logstore/logstore/internal/kafka/producer"
)

// With exactly_once the Kafka output stages too (issue 45): Stage encodes
// the open batch's rows into their records' bytes and holds them, and the
// batch's transaction produces them. The worker then lets go of the
// decoded rows as at least once does, so the files sink stages its spool
// files and a batch is cut by max_rows, max_age and max_bytes rather than
// by the decoded rows' memory; what the batch holds for Kafka is its
// records' keys and values as LZ4 blocks, counted in batch.memory_budget
// (HeldBytes), in buffers the garbage collector does not walk.

// KafkaHeld is what the exactly-once Kafka output staged of one batch:
// its records' keys and values, held (not produced) until the batch's
// transaction. The worker takes it at the cut (TakeHeld) and hands it back
// in the batch (Batch.Held).
type KafkaHeld struct {
	chunks []heldChunk
	rows   int
	bytes  int64 // what its chunks hold in memory, which the budget counts
}

// heldChunk is one Stage's records: their keys and values one after the
// other in buf, and where each ends. Neither holds a pointer, so a batch's
// held rows cost the garbage collector nothing to mark.
type heldChunk struct {
	buf  []byte
	recs []heldRecord
	// raw is buf's length before compression: a chunk is held as an LZ4
	// block (log lines shrink to about a seventh), 0 when it did not
	// shrink and buf is the bytes themselves.
	raw int
}

type heldRecord struct {
	offset int64 // the source record's
	keyLen int32 // -1: no key
	end    int32 // in buf, of the value; the key ends where the value starts
}

// Rows is how many records it holds.
func (h *KafkaHeld) Rows() int {
	if h == nil {
		return 0
	}
	return h.rows
}

// Bytes is what its records hold, as the memory budget counts them.
func (h *KafkaHeld) Bytes() int64 {
	if h == nil {
		return 0
	}
	return h.bytes
}

// stageHeld holds b's rows from b.KafkaFrom on as one chunk of the open
// batch's records. A row whose record is over batch_bytes comes back as
// a RowError (CheckRows usually took it out before), and nothing is held
// then.
func (k *Kafka) stageHeld(key stageKey, b *Batch) error {
	skip := 0
	for skip < len(b.Rows) && sourceOffset(b, skip) >= 0 && sourceOffset(b, skip) < b.KafkaFrom {
		skip++
	}
	if skip == len(b.Rows) {
		return nil
	}
	from := *b
	from.Rows, from.Sources = b.Rows[skip:], b.Sources[skip:] // skip ≤ len(b.Sources): sourceOffset is -1 past them
	c, n, err := k.heldChunk(&from)
	if refused := AsRowErrors(err); refused != nil {
		for _, e := range refused {
			e.Index += skip
		}
		return RowErrors(refused)
	}
	if err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	h := k.held[key]
	if h == nil {
		h = &KafkaHeld{}
		k.held[key] = h
	}
	h.chunks = append(h.chunks, c)
	h.rows += len(c.recs)
	h.bytes += n
	return nil
}

// heldChunk encodes b's rows into one chunk, and what it holds in memory:
// each row's key and value straight into one scratch buffer, copied once
// into the chunk at its size (kafkaRecords would make the producer's
// records and headers too, only to be dropped).
func (k *Kafka) heldChunk(b *Batch) (heldChunk, int64, error) {
	cfg := k.cfg
	keyCol := -1
	if cfg.Key != "" {
		if keyCol = b.Schema.Index(cfg.Key); keyCol < 0 {
			return heldChunk{}, 0, confkey.Errorf("kafka.key", "%q is not an output column", cfg.Key)
		}
	}
	original := cfg.Value == "original"
	if original && len(b.Sources) < len(b.Rows) {
		return heldChunk{}, 0, fmt.Errorf("kafka: value: original needs the source records, and batch %s has %d for %d rows", b.Name(), len(b.Sources), len(b.Rows))
	}
	var enc *rowJSON
	if !original {
		enc = newRowJSON(b.Schema)
	}
	scratch := heldScratch.Get().(*[]byte)
	defer heldScratch.Put(scratch)
	buf := (*scratch)[:0]
	recs := make([]heldRecord, len(b.Rows))
	// The source headers' keys and the topic's and partition's values are
	// the same for every record; the offset's digits are its own.
	headers := int64(len(HeaderSourceTopic) + len(b.Topic) + len(HeaderSourcePartition) + len(strconv.Itoa(b.Partition)) + len(HeaderSourceOffset))
	var refused RowErrors
	var digits [20]byte
	for i, r := range b.Rows {
		start := len(buf)
		hr := &recs[i]
		hr.offset, hr.keyLen = sourceOffset(b, i), -1
		if keyCol >= 0 {
			if key := keyBytes(r[keyCol]); key != nil {
				hr.keyLen = int32(len(key))
				buf = append(buf, key...)
			}
		}
		if original {
			buf = append(buf, b.Sources[i].Value...)
		} else {
			var err error
			if buf, err = enc.append(buf, r); err != nil {
				return heldChunk{}, 0, &RowError{Topic: b.Topic, Partition: b.Partition, Index: i, Offset: hr.offset, Err: err}
			}
		}
		if len(buf) > int(^uint32(0)>>1) {
			return heldChunk{}, 0, fmt.Errorf("kafka: a staged chunk of %s holds over 2 GiB", b.Name())
		}
		hr.end = int32(len(buf))
		size := int64(len(buf)-start) + headers + int64(len(strconv.AppendInt(digits[:0], hr.offset, 10)))
		if size > cfg.BatchBytes {
			refused = append(refused, &RowError{Topic: b.Topic, Partition: b.Partition, Index: i, Offset: hr.offset,
				Err: fmt.Errorf("kafka: a record of %d bytes is over sinks.kafka.batch_bytes (%d)", size, cfg.BatchBytes)})
		}
	}
	*scratch = buf
	if refused != nil {
		return heldChunk{}, 0, refused
	}
	c := heldChunk{recs: recs}
	z := heldCompressors.Get().(*heldCompressor)
	defer heldCompressors.Put(z)
	if bound := lz4.CompressBlockBound(len(buf)); cap(z.dst) < bound {
		z.dst = make([]byte, bound)
	}
	if n, err := z.CompressBlock(buf, z.dst[:cap(z.dst)]); err == nil && n > 0 && n < len(buf)*7/8 {
		c.buf, c.raw = bytes.Clone(z.dst[:n]), len(buf)
	} else {
		c.buf = bytes.Clone(buf)
	}
	// What the chunk holds in memory, which the budget counts (the
	// records' sizes are what batch_bytes bounds).
	return c, int64(len(c.buf)) + int64(len(c.recs))*int64(unsafe.Sizeof(heldRecord{})), nil
}

// heldScratch is the buffers heldChunk encodes into before the chunk
// takes its bytes at their size.
var heldScratch = sync.Pool{New: func() any { return new([]byte) }}

// heldCompressor compresses held chunks: LZ4's fast block compressor
// (about 0.1 CPU-s per million log lines, a tenth of the JSON's
// encoding) with its buffer.
type heldCompressor struct {
	lz4.Compressor
	dst []byte
}

var heldCompressors = sync.Pool{New: func() any { return new(heldCompressor) }}

// bytes is c's keys and values as they were encoded: buf, or buf
// decompressed into new storage.
func (c *heldChunk) bytes() ([]byte, error) {
	if c.raw == 0 {
		return c.buf, nil
	}
	out := make([]byte, c.raw)
	n, err := lz4.UncompressBlock(c.buf, out)
	if err == nil && n != c.raw {
		err = fmt.Errorf("%d bytes, want %d", n, c.raw)
	}
	if err != nil {
		return nil, fmt.Errorf("kafka: decompressing a held chunk: %w", err)
	}
	return out, nil
}

// records is c's records as the producer takes them, with the source
// headers of partition of topic. Their keys and values are in buf, c's
// bytes.
func (c *heldChunk) records(buf []byte, topic string, partition int) []producer.Record {
	msgs := make([]producer.Record, len(c.recs))
	at := 0
	for i, r := range c.recs {
		m := &msgs[i]
		start := at
		if r.keyLen >= 0 {
			m.Key = buf[at : at+int(r.keyLen) : at+int(r.keyLen)]
			start += int(r.keyLen)
		}
		m.Value = buf[start:r.end:r.end]
		at = int(r.end)
	}
	sourceHeaders(msgs, topic, partition, func(i int) int64 { return c.recs[i].offset })
	return msgs
}

// heldInFlight bounds what a transaction's produce of held records has
// on its way before it waits for the oldest: the records the producer
// takes are made from the held bytes as they go, not all at once.
const heldInFlight = 4 << 20

// produceHeld produces b's held records and then its rows, in order, and
// waits for every one. A held record the brokers refuse for its size is
// no longer a row of the batch (its files have it): the error says what
// to change, and the transaction is tried again (the files have the row). Refused rows of b.Rows
// come back as their RowErrors.
func (k *Kafka) produceHeld(ctx context.Context, b *Batch) error {
	type send struct {
		sent  *producer.Sent
		chunk *heldChunk
		bytes int
	}
	var window []send
	var inFlight int
	wait := func(s send) error {
		inFlight -= s.bytes
		err := s.sent.Wait(ctx)
		if err == nil {
			return nil
		}
		var perr *producer.Error
		if errors.As(err, &perr) && perr.Records[0].Index < len(s.chunk.recs) && tooLarge(perr.Records[0].Err) {
			return fmt.Errorf("kafka: %w (%s/%d offset %d to %q): its max.message.bytes was lowered since the job started; raise it again, or restart the job (a start reads the limit, and rows over it go to the dead letters): %w",
				errStagedTooLarge, b.Topic, b.Partition, s.chunk.recs[perr.Records[0].Index].offset, k.cfg.Topic, err)
		}
		return fmt.Errorf("kafka: producing %s to %q: %w", b.Name(), k.cfg.Topic, err)
	}
	var failed error
	for i := range b.Held.chunks {
		c := &b.Held.chunks[i]
		buf, err := c.bytes()
		if err != nil {
			failed = err
			break
		}
		sent, err := k.p.Send(ctx, k.cfg.Topic, c.records(buf, b.Topic, b.Partition))
		if err != nil {
			failed = fmt.Errorf("kafka: producing %s to %q: %w", b.Name(), k.cfg.Topic, err)
			break
		}
		if sent == nil {
			continue
		}
		window = append(window, send{sent, c, len(buf)})
		inFlight += len(buf)
		for inFlight > heldInFlight && len(window) > 1 {
			if err := wait(window[0]); err != nil && failed == nil {
				failed = err
			}
			window = window[1:]
		}
		if failed != nil {
			break
		}
	}
	for _, s := range window {
		if err := wait(s); err != nil && failed == nil {
			failed = err
		}
	}
	if failed != nil || len(b.Rows) == 0 {
		return failed
	}
	return k.produce(ctx, b)
}

// TakeHeld hands over what the exactly-once output staged of the open
// batch of partition (nil: nothing): the batch holds it from its cut on,
// in Batch.Held, and the next batch stages anew.
func (k *Kafka) TakeHeld(topic string, partition int, prefix string) *KafkaHeld {
	key := stageKey{topic, partition, prefix}
	k.mu.Lock()
	defer k.mu.Unlock()
	h := k.held[key]
	delete(k.held, key)
	return h
}
