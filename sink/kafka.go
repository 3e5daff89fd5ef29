package sink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"

	"github.com/logstore/logstore/internal/clock"
	"github.com/logstore/logstore/internal/confkey"
	"github.com/logstore/logstore/internal/kafka/producer"
	"github.com/logstore/logstore/sink/cycle"
)

// The headers every produced record carries, naming the input record it
// came from, so a consumer can drop the repeats an at-least-once retry
// produces.
const (
	HeaderSourceTopic     = "logstore.source.topic"
	HeaderSourcePartition = "logstore.source.partition"
	HeaderSourceOffset    = "logstore.source.offset"
)

// Kafka produces every row of a batch to a topic and returns once the
// brokers acknowledged all of them with acks=all. With delivery
// at_least_once, a batch written again (after a crash or a rebalance) is
// produced again, and the logstore.source.* headers let consumers drop the
// repeats. With exactly_once, Write does nothing: the job calls
// Transact, which produces the batch's rows with the commit of its next
// offset in the member's next transaction (kafkacycle.go), so a
// read_committed consumer sees each row once. Either way a produce is never written twice by a retry (the
// producer is idempotent), and keyless rows go to partitions led in the
// member's zone (partitioner rack-aware).
type Kafka struct {
	p       *producer.Producer
	cfg     *KafkaOutputConfig
	brokers []string
	cycle   *cycle.Owner[*TxnPart] // exactly_once: the member's transactions

	// at_least_once: the rows each open batch (stageKey, files.go)
	// staged, produced and not yet known to be written; Write waits for
	// them.
	mu     sync.Mutex
	staged map[stageKey]*stagedRows
	// exactly_once: the records each open batch staged, held for its
	// transaction (kafkaheld.go).
	held map[stageKey]*KafkaHeld

	// topicMax is the output topic's max.message.bytes, read at
	// Preflight; 0 when unknown. A record over it less its framing is
	// refused before any output has its row (CheckRows).
	topicMax atomic.Int64
	// jsonPerRow is a little over the JSON bytes of a row the last
	// encoding made: the next one's buffer.
	jsonPerRow atomic.Int64
	log        *slog.Logger
}

// stagedRows is what an open batch staged and the brokers have not all
// acknowledged, oldest first, and its records' bytes.
type stagedRows struct {
	sends []*stagedSend
	bytes int64
}

// stagedSend is one Stage's records on their way, and the buffers they
// are made of.
type stagedSend struct {
	sent    *producer.Sent
	records []producer.Record
	bytes   int64
	bufs    *recordBuffers
}

// recordBuffers are what a batch's records are made of: the records, their
// JSON values (or copied values), their source headers. A Stage's, once
// the brokers acknowledged its records (the producer reads a record's
// bytes until its Send's Wait returns), go to the next Stage rather than
// to the collector: a catch-up's output otherwise allocates about its own
// size again (about 340 MB for the bench's 600,000 rows).
type recordBuffers struct {
	msgs      []producer.Record
	values    []byte
	ends      []int
	headers   []producer.Header
	digits    []byte
	digitEnds []int
}

var recordBufferPool = sync.Pool{New: func() any { return new(recordBuffers) }}

// maxPooledValues is the most value bytes a pooled recordBuffers keeps: a
// batch of outsized rows does not pin its buffer for the next.
const maxPooledValues = 8 << 20

func getRecordBuffers() *recordBuffers { return recordBufferPool.Get().(*recordBuffers) }

// put gives rb back for the next batch's records; nothing may read the
// records made of it afterwards.
func (rb *recordBuffers) put() {
	if rb == nil || cap(rb.values) > maxPooledValues {
		return
	}
	clear(rb.msgs) // let go of what keys point to
	clear(rb.headers)
	recordBufferPool.Put(rb)
}

// KafkaDeps is what the Kafka sink takes from the job.
type KafkaDeps struct {
	// Dial opens connections with the input cluster's TLS and SASL; nil
	// is plain TCP.
	Dial producer.DialFunc
	// Rack is the member's zone, and RackMatched says it is one of the
	// brokers' racks: the default partitioner is rack-aware only then.
	Rack        string
	RackMatched bool
	// Stats counts produced bytes by locality; nil counts nothing.
	Stats *producer.Stats
	// TransactionalID is the producer's with delivery exactly_once: one
	// per member, the same across its restarts when it can be.
	TransactionalID string
	// CommitInterval is how long a member's transaction waits for more of
	// its partitions' batches (sinks.commit_interval).
	CommitInterval time.Duration
	Log            *slog.Logger
}

// newKafka makes the producer. brokers are the output cluster's bootstrap
// servers. cfg must have had SetDefaults.
func newKafka(cfg *KafkaOutputConfig, brokers []string, deps KafkaDeps) (*Kafka, error) {
	if len(brokers) == 0 {
		return nil, confkey.Errorf("kafka.brokers", "no brokers for the output topic %q", cfg.Topic)
	}
	codec, err := kafkaCodec(cfg.Compression)
	if err != nil {
		return nil, err
	}
	part := cfg.partitioner(deps.RackMatched)
	log := deps.Log
	if log == nil {
		log = slog.Default()
	}
	if part == producer.RackAware && !deps.RackMatched {
		log.Warn("sinks.kafka.partitioner is rack-aware but the member's zone matches no broker rack: keyless rows go to every partition", "rack", deps.Rack)
	}
	txnID := ""
	if cfg.Delivery == DeliveryExactlyOnce {
		if txnID = deps.TransactionalID; txnID == "" {
			return nil, confkey.Errorf("kafka.delivery", "exactly_once needs a consumer group to commit offsets in (a replay has none); use at_least_once")
		}
	}
	p, err := producer.New(producer.Config{
		Brokers:        brokers,
		Dial:           deps.Dial,
		ClientID:       "logstore",
		Rack:           deps.Rack,
		Partitioner:    part,
		Compression:    codec,
		BatchRecords:   cfg.BatchSize,
		BatchBytes:     int(cfg.BatchBytes),
		Linger:         cfg.BatchTimeout,
		RequestTimeout: cfg.WriteTimeout,
		MaxAttempts:    cfg.MaxAttempts,
		MetadataMaxAge: cfg.MetadataMaxAge,
		Stats:          deps.Stats,
		Log:            log,

		TransactionalID:    txnID,
		TransactionTimeout: cfg.TransactionTimeout,
	})
	if err != nil {
		return nil, err
	}
	log.Info("kafka sink", "topic", cfg.Topic, "partitioner", part.String(), "rack", deps.Rack, "delivery", cfg.Delivery, "transactional_id", txnID)
	k := &Kafka{p: p, cfg: cfg, brokers: brokers, staged: make(map[stageKey]*stagedRows), held: make(map[stageKey]*KafkaHeld), log: log}
	k.cycle = newTxnCycle(k, deps.CommitInterval)
	return k, nil
}

// partitioner is where keyless rows go: as sinks.kafka.partitioner says,
// and by default in the member's zone when it matched a broker rack.
func (k *KafkaOutputConfig) partitioner(rackMatched bool) producer.Partitioner {
	if k.Partitioner == PartitionerRackAware || k.Partitioner == "" && rackMatched {
		return producer.RackAware
	}
	return producer.Sticky
}

// kafkaCodec is the record-batch compression a sinks.kafka.compression
// value names.
func kafkaCodec(name string) (compress.Compression, error) {
	switch name {
	case "none":
		return compress.None, nil
	case "gzip":
		return compress.Gzip, nil
	case "snappy":
		return compress.Snappy, nil
	case "lz4":
		return compress.Lz4, nil
	case "zstd":
		return compress.Zstd, nil
	}
	return 0, confkey.Errorf("kafka.compression", "%q is not one of none, gzip, snappy, lz4, zstd", name)
}

// Write produces the batch's rows and waits for all acknowledgements,
// those of the rows Stage produced before too. A record the brokers refuse
// for its size (over the topic's max.message.bytes though under
// batch_bytes) is its row's fault: it comes back as a RowError, for the
// dead letters. With exactly_once it does nothing: the rows go in
// Transact.
func (k *Kafka) Write(ctx context.Context, b *Batch) error {
	if k.ExactlyOnce() {
		return nil
	}
	if err := k.waitStaged(ctx, stageKey{b.Topic, b.Partition, b.Prefix}, 0); err != nil {
		return err
	}
	if len(b.Rows) == 0 {
		return nil
	}
	return k.produce(ctx, b)
}

func (k *Kafka) produce(ctx context.Context, b *Batch) error {
	rb := getRecordBuffers()
	defer rb.put() // Produce returns once nothing reads the records
	recs, err := k.records(b, rb)
	if err != nil {
		return err
	}
	return k.produceErr(b, k.p.Produce(ctx, k.cfg.Topic, recs))
}

// produceErr is what Write reports for a produce of b's rows that ended
// with err.
func (k *Kafka) produceErr(b *Batch, err error) error {
	if err == nil {
		return nil
	}
	var perr *producer.Error
	if errors.As(err, &perr) {
		if refused := tooLargeRows(b, perr); refused != nil {
			return refused
		}
		return fmt.Errorf("kafka: producing %s: %w", b.Name(), err)
	}
	return fmt.Errorf("kafka: producing %s to %q: %w", b.Name(), k.cfg.Topic, err)
}

// tooLargeRows names the rows of b whose records failed for their size
// alone, or nil when any record failed for another reason (which a retry
// may fix).
func tooLargeRows(b *Batch, perr *producer.Error) RowErrors {
	var out RowErrors
	for _, r := range perr.Records {
		if !tooLarge(r.Err) {
			return nil
		}
		out = append(out, &RowError{Topic: b.Topic, Partition: b.Partition, Index: r.Index, Offset: sourceOffset(b, r.Index),
			Err: fmt.Errorf("kafka: the output topic refused the record for its size (its max.message.bytes): %w", r.Err)})
	}
	return out
}

func tooLarge(err error) bool {
	return errors.Is(err, kafka.MessageSizeTooLarge) || errors.Is(err, kafka.RecordListTooLarge)
}

// stagedInFlight bounds the bytes of records an open batch has staged and
// not seen acknowledged: Stage waits for the oldest beyond it, so a
// partition never runs far ahead of what the brokers take. The bytes
// count in batch.memory_budget (HeldBytes) until acknowledged. More
// (4x) kept the garbage collector busier with no faster catch-up.
func (k *Kafka) stagedInFlight() int64 { return max(k.cfg.BatchBytes, 1<<20) }

// Stage produces rows of the open batch at once, so the batch need not
// keep them: at least once allows producing before the cut, and a batch
// read again is produced again (the logstore.source.* headers tell the
// repeats). It does not wait for the brokers: Write, at the cut, waits
// for every staged row, so the cut is committed only once all are
// written. With exactly_once it produces nothing: it encodes the rows
// into their records and holds them for the batch's transaction
// (kafkaheld.go), skipping those before b.KafkaFrom.
func (k *Kafka) Stage(ctx context.Context, b *Batch) (full bool, err error) {
	if len(b.Rows) == 0 {
		return false, nil
	}
	key := stageKey{b.Topic, b.Partition, b.Prefix}
	if k.ExactlyOnce() {
		return false, k.stageHeld(key, b)
	}
	// Settle what is already written, and wait for room.
	if err := k.waitStaged(ctx, key, k.stagedInFlight()); err != nil {
		return false, err
	}
	rb := getRecordBuffers()
	recs, err := k.records(b, rb)
	if err != nil {
		rb.put()
		return false, err
	}
	if k.cfg.Value == "original" {
		// The records' values are the input's bytes, which the batch
		// lets go of once staged: keep a copy while they are on their way.
		var n int
		for i := range recs {
			n += len(recs[i].Value)
		}
		buf := slices.Grow(rb.values[:0], n)
		for i := range recs {
			buf = append(buf, recs[i].Value...)
			recs[i].Value = buf[len(buf)-len(recs[i].Value) : len(buf) : len(buf)]
		}
		rb.values = buf
	}
	sent, err := k.p.Send(ctx, k.cfg.Topic, recs)
	if err != nil {
		rb.put()
		return false, k.produceErr(b, err)
	}
	var n int64
	for i := range recs {
		n += recordSize(&recs[i])
	}
	k.mu.Lock()
	st := k.staged[key]
	if st == nil {
		st = &stagedRows{}
		k.staged[key] = st
	}
	st.sends = append(st.sends, &stagedSend{sent: sent, records: recs, bytes: n, bufs: rb})
	st.bytes += n
	k.mu.Unlock()
	return false, nil
}

// WaitStaged waits until every row of b's open batch that Stage sent is
// written. The worker calls it before an output that records the batch's
// position (the table's snapshot) commits: that output must not hold a
// batch whose rows are still on their way to this one, or a stop between
// the two would start the next run past rows Kafka never got.
func (k *Kafka) WaitStaged(ctx context.Context, b *Batch) error {
	if k.ExactlyOnce() {
		return nil
	}
	return k.waitStaged(ctx, stageKey{b.Topic, b.Partition, b.Prefix}, 0)
}

// waitStaged waits until the open batch's staged rows on their way are
// at most room bytes, oldest first; room 0 waits for all. Records that
// failed are produced again, and waitStaged reports the failure: a later
// call waits for them again, until they are written (Stage gave them to
// the brokers, so the batch holds them no more; they may then follow rows
// staged after them, as at least once allows). A record the brokers
// refuse for its size fails the batch with the way out: its row is no
// longer in the batch to go to the dead letters.
func (k *Kafka) waitStaged(ctx context.Context, key stageKey, room int64) error {
	k.mu.Lock()
	st := k.staged[key]
	k.mu.Unlock()
	if st == nil {
		return nil
	}
	// Only the partition's worker adds to st.sends, and it is here.
	sends := st.sends
	var again []*stagedSend
	var failed error
	i := 0
	for ; i < len(sends); i++ {
		s := sends[i]
		if room > 0 && failed == nil {
			k.mu.Lock()
			over := st.bytes > room
			k.mu.Unlock()
			select {
			case <-s.sent.Done():
			default:
				if !over {
					goto done // the rest is on its way, and there is room
				}
			}
		}
		if err := s.sent.Wait(ctx); err != nil {
			if ctx.Err() != nil {
				failed = ctx.Err()
				break
			}
			again = append(again, s)
			if err = k.sendAgain(ctx, key, s, err); failed == nil || !errors.Is(failed, errStagedTooLarge) {
				failed = err
			}
			continue
		}
		k.mu.Lock()
		st.bytes -= s.bytes
		k.mu.Unlock()
		s.bufs.put() // every record acknowledged: nothing reads them now
		s.bufs, s.records = nil, nil
	}
done:
	k.mu.Lock()
	st.sends = append(again, sends[i:]...)
	if len(st.sends) == 0 && k.staged[key] == st {
		delete(k.staged, key)
	}
	k.mu.Unlock()
	return failed
}

var errStagedTooLarge = errors.New("the output topic refused a staged record for its size")

// sendAgain produces the records of s that failed with err again, and
// says what failed.
func (k *Kafka) sendAgain(ctx context.Context, key stageKey, s *stagedSend, err error) error {
	var perr *producer.Error
	if !errors.As(err, &perr) {
		// Nothing was sent: all of them again.
		perr = &producer.Error{}
		for i := range s.records {
			perr.Records = append(perr.Records, producer.RecordError{Index: i, Err: err})
		}
	}
	again := make([]producer.Record, len(perr.Records))
	for i, r := range perr.Records {
		if tooLarge(r.Err) {
			return fmt.Errorf("kafka: %w (%s/%d to %q): its max.message.bytes is below sinks.kafka.batch_bytes (%d); lower batch_bytes to it, so such rows go to the dead letters: %w",
				errStagedTooLarge, key.topic, key.partition, k.cfg.Topic, k.cfg.BatchBytes, r.Err)
		}
		again[i] = s.records[r.Index]
	}
	sent, serr := k.p.Send(ctx, k.cfg.Topic, again)
	if serr != nil {
		// s stays as it was: the next wait fails the same way and tries again.
		return fmt.Errorf("kafka: producing %d rows of %s/%d to %q again: %w", len(again), key.topic, key.partition, k.cfg.Topic, serr)
	}
	s.sent, s.records = sent, again
	return fmt.Errorf("kafka: producing rows of %s/%d to %q (%d of them are produced again): %w", key.topic, key.partition, k.cfg.Topic, len(again), err)
}

// HeldBytes is what the open batch's staged records on their way hold in
// memory (sink.MemoryHolder).
func (k *Kafka) HeldBytes(topic string, partition int, prefix string) int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	key := stageKey{topic, partition, prefix}
	var n int64
	if st := k.staged[key]; st != nil {
		n += st.bytes
	}
	return n + k.held[key].Bytes()
}

// ExactlyOnce says whether the sink writes in transactions
// (sinks.kafka.delivery: exactly_once).
func (k *Kafka) ExactlyOnce() bool { return k.cfg.Delivery == DeliveryExactlyOnce }

// Producer is the sink's producer, for what must go in its transactions
// (the dead letters) or read what they commit (the group's offsets).
func (k *Kafka) Producer() *producer.Producer { return k.p }

// Discard forgets the staged rows of the open batch: they may still be
// written (at least once), and whoever reads the batch again produces
// them again.
func (k *Kafka) Discard(topic string, partition int, prefix string) {
	k.mu.Lock()
	delete(k.staged, stageKey{topic, partition, prefix})
	delete(k.held, stageKey{topic, partition, prefix})
	k.mu.Unlock()
}

// Close ends the member's cycle and stops the producer.
func (k *Kafka) Close() error {
	k.cycle.Close()
	return k.p.Close()
}

// records is kafkaRecords with its JSON buffer sized from the rows this
// output encoded before, so it is made once, not grown (a log line's JSON
// is over the first guess of 256 bytes).
func (k *Kafka) records(b *Batch, rb *recordBuffers) ([]producer.Record, error) {
	recs, err := kafkaRecordsInto(k.cfg, b, int(k.jsonPerRow.Load()), rb)
	if err == nil && len(recs) > 0 && k.cfg.Value != "original" {
		var n int
		for i := range recs {
			n += len(recs[i].Value)
		}
		k.jsonPerRow.Store(int64(n/len(recs) + n/len(recs)/8))
	}
	return recs, err
}

// kafkaRecords turns a batch into the records Write produces: key from the
// key column, value per `value`, and the source headers.
func kafkaRecords(cfg *KafkaOutputConfig, b *Batch) ([]producer.Record, error) {
	return kafkaRecordsInto(cfg, b, 0, new(recordBuffers))
}

// kafkaRecordsInto is kafkaRecords made of rb's buffers, with perRow bytes
// of JSON buffer for each row at first (0: 256) where rb's is smaller.
func kafkaRecordsInto(cfg *KafkaOutputConfig, b *Batch, perRow int, rb *recordBuffers) ([]producer.Record, error) {
	if perRow <= 0 {
		perRow = 256
	}
	keyCol := -1
	if cfg.Key != "" {
		if keyCol = b.Schema.Index(cfg.Key); keyCol < 0 {
			return nil, confkey.Errorf("kafka.key", "%q is not an output column", cfg.Key)
		}
	}
	original := cfg.Value == "original"
	if original && len(b.Sources) < len(b.Rows) {
		return nil, fmt.Errorf("kafka: value: original needs the source records, and batch %s has %d for %d rows", b.Name(), len(b.Sources), len(b.Rows))
	}
	msgs := resized(rb.msgs, len(b.Rows))
	clear(msgs)
	rb.msgs = msgs
	// One buffer for every JSON value, cut into the messages at the end.
	var buf []byte
	ends := resized(rb.ends, len(b.Rows))
	rb.ends = ends
	var enc *rowJSON
	if !original {
		enc = newRowJSON(b.Schema)
		// About what the rows' JSON takes, so buf is made once.
		buf = slices.Grow(rb.values[:0], perRow*len(b.Rows))
		defer func() { rb.values = buf[:0] }()
	}
	for i, r := range b.Rows {
		m := &msgs[i]
		if keyCol >= 0 {
			m.Key = keyBytes(r[keyCol])
		}
		if original {
			m.Value = b.Sources[i].Value
		} else {
			var err error
			if buf, err = enc.append(buf, r); err != nil {
				return nil, &RowError{Topic: b.Topic, Partition: b.Partition, Index: i, Offset: sourceOffset(b, i), Err: err}
			}
			ends[i] = len(buf)
		}
	}
	rb.sourceHeaders(msgs, b.Topic, b.Partition, func(i int) int64 { return sourceOffset(b, i) })
	start := 0
	var refused RowErrors
	for i := range msgs {
		m := &msgs[i]
		if !original {
			m.Value = buf[start:ends[i]:ends[i]]
			start = ends[i]
		}
		// A record over batch_bytes is refused here, named, so it goes to
		// the dead letters (CheckRows usually took it out before).
		if size := recordSize(m); size > cfg.BatchBytes {
			refused = append(refused, &RowError{Topic: b.Topic, Partition: b.Partition, Index: i, Offset: sourceOffset(b, i),
				Err: fmt.Errorf("kafka: a record of %d bytes is over sinks.kafka.batch_bytes (%d)", size, cfg.BatchBytes)})
		}
	}
	if refused != nil {
		return nil, refused
	}
	return msgs, nil
}

// recordSize is a record's key, value and header bytes, what batch_bytes
// bounds.
func recordSize(m *producer.Record) int64 {
	n := len(m.Key) + len(m.Value)
	for _, h := range m.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return int64(n)
}

// keyBytes is a key column's value as record key bytes; null is no key.
func keyBytes(v any) []byte {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		return []byte(x)
	case []byte:
		return bytes.Clone(x) // a row's bytes may be reused once it is staged
	case time.Time:
		return x.UTC().AppendFormat(nil, time.RFC3339Nano)
	case map[string]string:
		b, _ := appendJSONValue(nil, StringMap, x)
		return b
	}
	return fmt.Append(nil, v)
}

// topicAppearsWithin is how long the start waits for an output topic the
// brokers do not know yet.
const topicAppearsWithin = 5 * time.Second

// Preflight asks the output cluster for the topic's metadata; a missing
// topic fails here rather than at the first batch (the producer does not
// create topics).
func (k *Kafka) Preflight(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// A topic created a moment ago may not be known to every broker yet
	// (KRaft's metadata reaches them one by one): ask again for a while.
	for deadline := time.Now().Add(topicAppearsWithin); ; {
		_, err := k.p.Partitions(ctx, k.cfg.Topic)
		if err == nil {
			break
		}
		if !errors.Is(err, kafka.UnknownTopicOrPartition) {
			return fmt.Errorf("kafka sink: reading metadata of topic %q from %v: %w", k.cfg.Topic, k.brokers, err)
		}
		if time.Now().After(deadline) || !clock.Sleep(ctx, 250*time.Millisecond) {
			return fmt.Errorf("kafka sink: output topic %q does not exist on %v; create it or fix sinks.kafka.topic", k.cfg.Topic, k.brokers)
		}
	}
	k.readTopicMax(ctx)
	if k.ExactlyOnce() {
		// Before the job reads where its partitions stand: a restarted
		// static member fences its predecessor and aborts its open
		// transaction here, instead of waiting for its timeout.
		if err := k.p.InitTxn(ctx); err != nil {
			return fmt.Errorf("kafka sink: initialising transactions (sinks.kafka.delivery: exactly_once): %w", err)
		}
	}
	return nil
}

// recordFraming is what a record batch of one record adds to the record's
// key, value and header bytes, at most: the batch header (61 bytes), the
// record's lengths and deltas (21) and its three headers' lengths (30).
const recordFraming = 61 + 21 + 3*10

// readTopicMax reads the output topic's max.message.bytes, so a row whose
// record the topic would refuse goes to the dead letters before any
// output has it: with staging (and exactly_once's held records) the
// brokers' refusal comes after the files hold the row, too late to take it
// out. Not allowed to read it, the job goes on with batch_bytes as the
// only limit, and says so.
func (k *Kafka) readTopicMax(ctx context.Context) {
	cfg, err := k.p.TopicConfig(ctx, k.cfg.Topic, "max.message.bytes")
	if err == nil {
		v, ok := cfg["max.message.bytes"]
		n, perr := strconv.ParseInt(v, 10, 64)
		switch {
		case ok && perr == nil && n > recordFraming:
			k.topicMax.Store(n)
			if n < k.cfg.BatchBytes {
				k.log.Info("kafka sink: the output topic's max.message.bytes is below sinks.kafka.batch_bytes; rows whose record is over it go to the dead letters",
					"topic", k.cfg.Topic, "max.message.bytes", n, "batch_bytes", k.cfg.BatchBytes)
			}
			return
		case !ok:
			err = errors.New("the answer has no max.message.bytes")
		default:
			err = fmt.Errorf("max.message.bytes is %q", v)
		}
	}
	k.log.Warn("kafka sink: could not read the output topic's max.message.bytes; a row whose record is over it but under sinks.kafka.batch_bytes stops its partition with an error. "+
		"Grant DescribeConfigs on the topic (Amazon MSK with IAM: "+mskDescribeTopicConfigAction+"), or keep batch_bytes at or under the topic's max.message.bytes",
		"topic", k.cfg.Topic, "err", err)
}

// mskDescribeTopicConfigAction is the IAM action Amazon MSK checks for
// DescribeConfigs on a topic.
const mskDescribeTopicConfigAction = "kafka-cluster:DescribeTopicDynamicConfiguration"

// recordLimit is the most key, value and header bytes a record may hold:
// batch_bytes, and the output topic's max.message.bytes less the framing
// when it is known.
func (k *Kafka) recordLimit() (limit int64, what string) {
	limit, what = k.cfg.BatchBytes, "sinks.kafka.batch_bytes"
	if m := k.topicMax.Load(); m > 0 && m-recordFraming < limit {
		limit, what = m-recordFraming, fmt.Sprintf("the output topic's max.message.bytes (%d) less %d bytes of framing", m, recordFraming)
	}
	return limit, what
}

// sourceHeaders gives each of msgs the logstore.source.* headers of
// partition of topic, msgs[i] of source offset offset(i): one slice for
// every header and one buffer for every offset's digits.
func sourceHeaders(msgs []producer.Record, topic string, partition int, offset func(int) int64) {
	new(recordBuffers).sourceHeaders(msgs, topic, partition, offset)
}

// sourceHeaders is the package's sourceHeaders made of rb's buffers.
func (rb *recordBuffers) sourceHeaders(msgs []producer.Record, topic string, partition int, offset func(int) int64) {
	t, p := []byte(topic), []byte(strconv.Itoa(partition))
	headers := resized(rb.headers, 3*len(msgs))
	digits := rb.digits[:0]
	offsets := resized(rb.digitEnds, len(msgs)) // where each offset's digits end
	for i := range msgs {
		digits = strconv.AppendInt(digits, offset(i), 10)
		offsets[i] = len(digits)
	}
	at := 0
	for i := range msgs {
		h := headers[3*i : 3*i+3 : 3*i+3]
		h[0] = producer.Header{Key: HeaderSourceTopic, Value: t}
		h[1] = producer.Header{Key: HeaderSourcePartition, Value: p}
		h[2] = producer.Header{Key: HeaderSourceOffset, Value: digits[at:offsets[i]:offsets[i]]}
		at = offsets[i]
		msgs[i].Headers = h
	}
	rb.headers, rb.digits, rb.digitEnds = headers, digits, offsets
}

// resized is s with length n, reusing its array when it is large enough.
func resized[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
