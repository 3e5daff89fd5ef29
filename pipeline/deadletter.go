package pipeline

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/logstore/logstore/pipeline/record"
	"github.com/logstore/logstore/sink"
)

// RejectedRecord is a record that could not become a row, with the reason.
type RejectedRecord struct {
	Reason string
	Record record.Record // the original record: topic, partition, offset, key, value, headers
}

// deadLetterWriter stores one batch's dead letters durably. It is called
// with the batch's cut (first, last), before the batch's offsets are
// committed, so a dead letter is never lost; a writer that names its output
// after (first, last) is also never duplicated.
type deadLetterWriter interface {
	writeDeadLetters(ctx context.Context, b *deadBatch) error
}

// deadBatch is one batch's dead letters, named like the batch.
type deadBatch struct {
	Topic       string
	Partition   int
	First, Last int64
	Prefix      string
	Letters     []RejectedRecord
}

// headerError carries a dead letter's reason on the Kafka destination; the
// source position travels in the same headers as the Kafka sink's output.
const headerError = "logstore.error"

// kafkaDeadLetters produces each dead letter, original key and value, to a
// topic; the reason and the source position travel in headers. Guarantee: at
// least once (a crash between produce and commit produces it again; the
// source headers identify repeats).
type kafkaDeadLetters struct {
	w *kafka.Writer
}

func newKafkaDeadLetters(conn *Clients, topic string) *kafkaDeadLetters {
	return &kafkaDeadLetters{w: &kafka.Writer{
		Addr:         kafka.TCP(conn.Brokers...),
		Transport:    conn.Transport,
		Topic:        topic,
		Balancer:     &kafka.Hash{},
		RequiredAcks: kafka.RequireAll,
		BatchTimeout: 20 * time.Millisecond,
		// The dead-letter topic may not exist on a fresh cluster.
		AllowAutoTopicCreation: true,
	}}
}

func (k *kafkaDeadLetters) writeDeadLetters(ctx context.Context, b *deadBatch) error {
	msgs := make([]kafka.Message, len(b.Letters))
	for i, dl := range b.Letters {
		r := &dl.Record
		headers := make([]kafka.Header, 0, len(r.Headers)+4)
		headers = append(headers, r.Headers...)
		headers = append(headers,
			kafka.Header{Key: headerError, Value: []byte(dl.Reason)},
			kafka.Header{Key: sink.HeaderSourceTopic, Value: []byte(r.Topic)},
			kafka.Header{Key: sink.HeaderSourcePartition, Value: []byte(strconv.Itoa(r.Partition))},
			kafka.Header{Key: sink.HeaderSourceOffset, Value: []byte(strconv.FormatInt(r.Offset, 10))},
		)
		msgs[i] = kafka.Message{Key: r.Key, Value: r.Value, Headers: headers, Time: r.Time}
	}
	if err := k.w.WriteMessages(ctx, msgs...); err != nil {
		return fmt.Errorf("dead-letter topic %s: %w", k.w.Topic, err)
	}
	return nil
}

func (k *kafkaDeadLetters) Close() error { return k.w.Close() }

// fileDeadLetters writes a batch's dead letters as Parquet under the files
// sink's _errors/ folder, named after the batch. Guarantee: exactly once,
// like the batch's own files.
type fileDeadLetters struct{ files *sink.Files }

func (f fileDeadLetters) writeDeadLetters(ctx context.Context, b *deadBatch) error {
	letters := make([]sink.DeadLetterRow, len(b.Letters))
	for i, dl := range b.Letters {
		r := &dl.Record
		letters[i] = sink.DeadLetterRow{Reason: dl.Reason, Source: sink.Source{Offset: r.Offset, Key: r.Key, Value: r.Value, Timestamp: r.Time}}
	}
	batch := sink.NewDeadLetterBatch(b.Topic, b.Partition, b.First, b.Last, letters)
	batch.Prefix = b.Prefix
	return f.files.WriteDeadLetters(ctx, batch)
}
