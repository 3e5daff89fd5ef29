package sink

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/logstore/logstore/internal/confkey"
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
// brokers acknowledged all of them with acks=all. Delivery is at least once:
// a batch written again is produced again, and the logstore.source.*
// headers let consumers drop the repeats.
type Kafka struct {
	w       *kafka.Writer
	cfg     *KafkaOutputConfig
	brokers []string
}

// newKafka makes the producer. brokers are the output cluster's bootstrap
// servers; transport carries TLS and SASL (nil is plain TCP on a transport
// of its own: kafka-go's shared default keeps a failed metadata answer for
// every later client in the process). cfg must have had SetDefaults.
func newKafka(cfg *KafkaOutputConfig, brokers []string, transport kafka.RoundTripper) (*Kafka, error) {
	if len(brokers) == 0 {
		return nil, confkey.Errorf("kafka.brokers", "no brokers for the output topic %q", cfg.Topic)
	}
	codec, err := kafkaCodec(cfg.Compression)
	if err != nil {
		return nil, err
	}
	if transport == nil {
		transport = &kafka.Transport{}
	}
	w := &kafka.Writer{
		Addr:         kafka.TCP(brokers...),
		Topic:        cfg.Topic,
		Balancer:     &kafka.Murmur2Balancer{}, // the Java client's partitioner: same key, same partition
		MaxAttempts:  cfg.MaxAttempts,
		BatchSize:    cfg.BatchSize,
		BatchBytes:   cfg.BatchBytes,
		BatchTimeout: cfg.BatchTimeout,
		WriteTimeout: cfg.WriteTimeout,
		RequiredAcks: kafka.RequireAll,
		Compression:  codec,
		Transport:    transport,
	}
	return &Kafka{w: w, cfg: cfg, brokers: brokers}, nil
}

func kafkaCodec(name string) (kafka.Compression, error) {
	switch name {
	case "none":
		return 0, nil
	case "gzip":
		return kafka.Gzip, nil
	case "snappy":
		return kafka.Snappy, nil
	case "lz4":
		return kafka.Lz4, nil
	case "zstd":
		return kafka.Zstd, nil
	}
	return 0, confkey.Errorf("kafka.compression", "%q is not one of none, gzip, snappy, lz4, zstd", name)
}

// Write produces the batch's rows and waits for all acknowledgements.
func (k *Kafka) Write(ctx context.Context, b *Batch) error {
	if len(b.Rows) == 0 {
		return nil
	}
	msgs, err := kafkaMessages(k.cfg, b)
	if err != nil {
		return err
	}
	if err := k.w.WriteMessages(ctx, msgs...); err != nil {
		var werr kafka.WriteErrors
		if errors.As(err, &werr) {
			return fmt.Errorf("kafka: producing %s: %d of %d records failed, first: %w", b.Name(), werr.Count(), len(msgs), firstError(werr))
		}
		return fmt.Errorf("kafka: producing %s to %q: %w", b.Name(), k.cfg.Topic, err)
	}
	return nil
}

// Stage produces rows of the open batch at once, so the batch need not
// keep them: at least once allows producing before the cut, and a batch read
// again is produced again (the logstore.source.* headers tell the repeats).
func (k *Kafka) Stage(ctx context.Context, b *Batch) (full bool, err error) {
	return false, k.Write(ctx, b)
}

// Discard has nothing to drop: staged rows are already produced.
func (k *Kafka) Discard(string, int, string) {}

func firstError(errs kafka.WriteErrors) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Close flushes and closes the producer.
func (k *Kafka) Close() error { return k.w.Close() }

// kafkaMessages turns a batch into the records Write produces: key from the
// key column, value per `value`, and the source headers.
func kafkaMessages(cfg *KafkaOutputConfig, b *Batch) ([]kafka.Message, error) {
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
	msgs := make([]kafka.Message, len(b.Rows))
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
		m.Headers = []kafka.Header{
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
		// kafka-go refuses the whole call for one record over batch_bytes;
		// name every such record instead, so they go to the dead letters.
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

// recordSize is a record's key, value and header bytes, a little under
// what kafka-go counts against batch_bytes.
func recordSize(m *kafka.Message) int64 {
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

// Preflight asks the output cluster for the topic's metadata; a missing
// topic fails here rather than after MaxAttempts at the first batch (the
// writer does not create topics).
func (k *Kafka) Preflight(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	brokers := k.brokers
	c := &kafka.Client{Addr: k.w.Addr, Transport: k.w.Transport}
	md, err := c.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{k.cfg.Topic}})
	if err != nil {
		return fmt.Errorf("kafka sink: reading metadata of topic %q from %v: %w", k.cfg.Topic, brokers, err)
	}
	for _, t := range md.Topics {
		if t.Name == k.cfg.Topic && t.Error == nil && len(t.Partitions) > 0 {
			return nil
		}
		if t.Name == k.cfg.Topic && t.Error != nil {
			return fmt.Errorf("kafka sink: output topic %q on %v: %w; create it or fix sinks.kafka.topic", k.cfg.Topic, brokers, t.Error)
		}
	}
	return fmt.Errorf("kafka sink: output topic %q does not exist on %v; create it or fix sinks.kafka.topic", k.cfg.Topic, brokers)
}
