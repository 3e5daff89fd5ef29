package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
	w     *kafka.Writer
	stats *Stats       // nil: not counted
	log   *slog.Logger // nil: slog.Default()
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
	err := k.w.WriteMessages(ctx, msgs...)
	if err == nil {
		return nil
	}
	if !tooLarge(err) {
		return fmt.Errorf("dead-letter topic %s: %w", k.w.Topic, err)
	}
	// Some letter is over the writer's batch_bytes or the topic's
	// max.message.bytes (the broker refuses the whole request and does not
	// say which): one at a time, and cut the ones that do not fit.
	for i := range msgs {
		if err := k.writeOne(ctx, &msgs[i], &b.Letters[i]); err != nil {
			return err
		}
	}
	return nil
}

// truncatedValueBytes is what a dead letter too big for its topic keeps of
// the record's value; the header logstore.truncated holds the full size.
const truncatedValueBytes = 1024

// headerTruncated marks a dead letter whose key, value and headers were cut
// to fit the dead-letter topic: the value's original size in bytes.
const headerTruncated = "logstore.truncated"

// writeOne produces one dead letter; one too big for the topic goes as a
// truncated letter (the reason, the source coordinates and the value's
// first KiB), then as the reason and coordinates alone. A letter even that
// does not fit is logged with its coordinates and counted
// (logstore_dead_letters_unwritable_total) instead of holding the
// partition: the record is still in the source topic until retention, and
// whole in _errors/ when dead_letter.files is on.
func (k *kafkaDeadLetters) writeOne(ctx context.Context, m *kafka.Message, dl *RejectedRecord) error {
	r := &dl.Record
	err := k.w.WriteMessages(ctx, *m)
	for _, keep := range []int{truncatedValueBytes, 0} {
		if !tooLarge(err) {
			break
		}
		cut := kafka.Message{Value: r.Value[:min(keep, len(r.Value))], Time: r.Time, Headers: []kafka.Header{
			{Key: headerError, Value: []byte(dl.Reason)},
			{Key: headerTruncated, Value: []byte(strconv.Itoa(len(r.Value)))},
			{Key: sink.HeaderSourceTopic, Value: []byte(r.Topic)},
			{Key: sink.HeaderSourcePartition, Value: []byte(strconv.Itoa(r.Partition))},
			{Key: sink.HeaderSourceOffset, Value: []byte(strconv.FormatInt(r.Offset, 10))},
		}}
		if err = k.w.WriteMessages(ctx, cut); err == nil && k.stats != nil {
			k.stats.TruncatedLetters.Add(1)
		}
	}
	if tooLarge(err) {
		if k.stats != nil {
			k.stats.UnwritableLetters.Add(1)
		}
		log := k.log
		if log == nil {
			log = slog.Default()
		}
		log.Error("a dead letter does not fit the dead-letter topic even without its value; it is only logged",
			"dead_letter_topic", k.w.Topic, "topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "reason", dl.Reason)
		return nil
	}
	if err != nil {
		return fmt.Errorf("dead-letter topic %s: %w", k.w.Topic, err)
	}
	return nil
}

// tooLarge says a produce failed for a record's size: the writer's
// batch_bytes or the broker's max.message.bytes.
func tooLarge(err error) bool {
	if errors.Is(err, kafka.MessageSizeTooLarge) {
		return true
	}
	var werr kafka.WriteErrors
	if errors.As(err, &werr) {
		for _, e := range werr {
			if errors.Is(e, kafka.MessageSizeTooLarge) {
				return true
			}
		}
	}
	return false
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
