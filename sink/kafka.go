package sink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"

	"github.com/logstore/logstore/internal/clock"
	"github.com/logstore/logstore/internal/confkey"
	"github.com/logstore/logstore/internal/kafka/producer"
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
	txn     sync.Mutex // one transaction at a time: the producer has one open
	cycle   *txnCycle  // exactly_once: the member's transactions
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
	return &Kafka{p: p, cfg: cfg, brokers: brokers, cycle: newTxnCycle(deps.CommitInterval)}, nil
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

// Write produces the batch's rows and waits for all acknowledgements. A
// record the brokers refuse for its size (over the topic's
// max.message.bytes though under batch_bytes) is its row's fault: it comes
// back as a RowError, for the dead letters. With exactly_once it does
// nothing: the rows go in Transact.
func (k *Kafka) Write(ctx context.Context, b *Batch) error {
	if len(b.Rows) == 0 || k.ExactlyOnce() {
		return nil
	}
	return k.produce(ctx, b)
}

func (k *Kafka) produce(ctx context.Context, b *Batch) error {
	recs, err := kafkaRecords(k.cfg, b)
	if err != nil {
		return err
	}
	err = k.p.Produce(ctx, k.cfg.Topic, recs)
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
		if !errors.Is(r.Err, kafka.MessageSizeTooLarge) && !errors.Is(r.Err, kafka.RecordListTooLarge) {
			return nil
		}
		out = append(out, &RowError{Topic: b.Topic, Partition: b.Partition, Index: r.Index, Offset: sourceOffset(b, r.Index),
			Err: fmt.Errorf("kafka: the output topic refused the record for its size (its max.message.bytes): %w", r.Err)})
	}
	return out
}

// Stage produces rows of the open batch at once, so the batch need not
// keep them: at least once allows producing before the cut, and a batch read
// again is produced again (the logstore.source.* headers tell the repeats).
// With exactly_once the job does not stage (the rows wait for the
// transaction); a call fails rather than produce outside one.
func (k *Kafka) Stage(ctx context.Context, b *Batch) (full bool, err error) {
	if k.ExactlyOnce() {
		return false, errors.New("kafka: exactly_once does not stage rows; they go in the batch's transaction")
	}
	return false, k.Write(ctx, b)
}

// ExactlyOnce says whether the sink writes in transactions
// (sinks.kafka.delivery: exactly_once).
func (k *Kafka) ExactlyOnce() bool { return k.cfg.Delivery == DeliveryExactlyOnce }

// Producer is the sink's producer, for what must go in its transactions
// (the dead letters) or read what they commit (the group's offsets).
func (k *Kafka) Producer() *producer.Producer { return k.p }

// Discard has nothing to drop: staged rows are already produced.
func (k *Kafka) Discard(string, int, string) {}

// Close stops the producer.
func (k *Kafka) Close() error { return k.p.Close() }

// kafkaRecords turns a batch into the records Write produces: key from the
// key column, value per `value`, and the source headers.
func kafkaRecords(cfg *KafkaOutputConfig, b *Batch) ([]producer.Record, error) {
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
	topic := []byte(b.Topic)
	partition := []byte(strconv.Itoa(b.Partition))
	msgs := make([]producer.Record, len(b.Rows))
	// One buffer for every JSON value, cut into the messages at the end.
	var buf []byte
	ends := make([]int, len(b.Rows))
	for i, r := range b.Rows {
		m := &msgs[i]
		if keyCol >= 0 {
			m.Key = keyBytes(r[keyCol])
		}
		if original {
			m.Value = b.Sources[i].Value
		} else {
			var err error
			if buf, err = appendRowJSON(buf, b.Schema, r); err != nil {
				return nil, &RowError{Topic: b.Topic, Partition: b.Partition, Index: i, Offset: sourceOffset(b, i), Err: err}
			}
			ends[i] = len(buf)
		}
		m.Headers = []producer.Header{
			{Key: HeaderSourceTopic, Value: topic},
			{Key: HeaderSourcePartition, Value: partition},
			{Key: HeaderSourceOffset, Value: strconv.AppendInt(nil, sourceOffset(b, i), 10)},
		}
	}
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
		return x
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
