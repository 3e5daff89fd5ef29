package sink

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/logstore/logstore/internal/kafka/producer"
)

// With exactly_once the Kafka output stages too (issue 45): Stage encodes
// the open batch's rows into their records' bytes and holds them, and the
// batch's transaction produces them. The worker then lets go of the
// decoded rows as at least once does, so the files sink stages its spool
// files and a batch is cut by max_rows, max_age and max_bytes rather than
// by the decoded rows' memory; what the batch holds for Kafka is its
// records' bytes, counted in batch.memory_budget (HeldBytes), in buffers
// the garbage collector does not walk.

// KafkaHeld is what the exactly-once Kafka output staged of one batch:
// its records' keys and values, held (not produced) until the batch's
// transaction. The worker takes it at the cut (TakeHeld) and hands it back
// in the batch (Batch.Held).
type KafkaHeld struct {
	chunks []heldChunk
	rows   int
	bytes  int64 // the records' sizes (recordSize), what the budget counts
}

// heldChunk is one Stage's records: their keys and values one after the
// other in buf, and where each ends. Neither holds a pointer, so a batch's
// held rows cost the garbage collector nothing to mark.
type heldChunk struct {
	buf  []byte
	recs []heldRecord
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
	from.Rows = b.Rows[skip:]
	if len(b.Sources) >= skip {
		from.Sources = b.Sources[skip:]
	}
	c, bytes, err := k.heldChunk(&from)
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
	h.bytes += bytes
	return nil
}

// heldChunk encodes b's rows into one chunk, and what its records hold.
func (k *Kafka) heldChunk(b *Batch) (heldChunk, int64, error) {
	recs, err := kafkaRecords(k.cfg, b)
	if err != nil {
		return heldChunk{}, 0, err
	}
	var n int
	for i := range recs {
		n += len(recs[i].Key) + len(recs[i].Value)
	}
	if int64(n) > int64(^uint32(0)>>1) {
		return heldChunk{}, 0, fmt.Errorf("kafka: a staged chunk of %s holds over 2 GiB", b.Name())
	}
	var bytes int64
	c := heldChunk{buf: make([]byte, 0, n), recs: make([]heldRecord, 0, len(recs))}
	for i := range recs {
		r := &recs[i]
		hr := heldRecord{offset: sourceOffset(b, i), keyLen: -1}
		if r.Key != nil {
			hr.keyLen = int32(len(r.Key))
			c.buf = append(c.buf, r.Key...)
		}
		c.buf = append(c.buf, r.Value...)
		hr.end = int32(len(c.buf))
		c.recs = append(c.recs, hr)
		bytes += recordSize(r)
	}
	return c, bytes, nil
}

// records is c's records as the producer takes them, with the source
// headers of partition of topic. Their keys and values are c's bytes.
func (c *heldChunk) records(topic, partition []byte) []producer.Record {
	msgs := make([]producer.Record, len(c.recs))
	headers := make([]producer.Header, 3*len(c.recs))
	var digits []byte
	ends := make([]int, len(c.recs))
	at := 0
	for i, r := range c.recs {
		m := &msgs[i]
		start := at
		if r.keyLen >= 0 {
			m.Key = c.buf[at : at+int(r.keyLen) : at+int(r.keyLen)]
			start += int(r.keyLen)
		}
		m.Value = c.buf[start:r.end:r.end]
		at = int(r.end)
		digits = strconv.AppendInt(digits, r.offset, 10)
		ends[i] = len(digits)
		h := headers[3*i : 3*i+3 : 3*i+3]
		h[0] = producer.Header{Key: HeaderSourceTopic, Value: topic}
		h[1] = producer.Header{Key: HeaderSourcePartition, Value: partition}
		h[2].Key = HeaderSourceOffset
		m.Headers = h
	}
	from := 0
	for i := range msgs {
		msgs[i].Headers[2].Value = digits[from:ends[i]:ends[i]]
		from = ends[i]
	}
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
	topic, partition := []byte(b.Topic), []byte(strconv.Itoa(b.Partition))
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
		sent, err := k.p.Send(ctx, k.cfg.Topic, c.records(topic, partition))
		if err != nil {
			failed = fmt.Errorf("kafka: producing %s to %q: %w", b.Name(), k.cfg.Topic, err)
			break
		}
		if sent == nil {
			continue
		}
		window = append(window, send{sent, c, len(c.buf)})
		inFlight += len(c.buf)
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
