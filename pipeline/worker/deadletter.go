package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/logstore/logstore/internal/kafka/producer"
	"github.com/logstore/logstore/pipeline/record"
	"github.com/logstore/logstore/sink"
)

// RejectedRecord is a record that could not become a row, with the reason.
type RejectedRecord struct {
	Reason string
	Record record.Record // the original record: topic, partition, offset, key, value, headers
}

// DeadLetterWriter stores one batch's dead letters durably. It is called
// with the batch's cut (first, last), before the batch's offsets are
// committed, so a dead letter is never lost; a writer that names its output
// after (first, last) is also never duplicated.
type DeadLetterWriter interface {
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

// KafkaDeadLetters produces each dead letter, original key and value, to a
// topic; the reason and the source position travel in headers. Guarantee: at
// least once (a crash between produce and commit produces it again; the
// source headers identify repeats); a produce retried within a run is not
// written twice (the producer is idempotent).
type KafkaDeadLetters struct {
	p     *producer.Producer
	topic string
	stats *Stats       // nil: not counted
	log   *slog.Logger // nil: slog.Default()

	mu sync.Mutex
	// restamp holds the letters the topic refused for their record
	// timestamp (see restamped), by source position.
	restamp map[letterAt]bool
}

// letterAt is a dead letter's source position.
type letterAt struct {
	topic     string
	partition int
	offset    int64
}

// headerTimestamp is a dead letter's own record timestamp (Unix ms) when
// the dead-letter topic refused it and the letter carries the time it was
// written instead.
const headerTimestamp = "logstore.timestamp"

// NewKafkaDeadLetters writes dead letters to topic through p; stats
// counts the letters cut or lost (nil: not counted), log says why.
func NewKafkaDeadLetters(p *producer.Producer, topic string, stats *Stats, log *slog.Logger) *KafkaDeadLetters {
	return &KafkaDeadLetters{p: p, topic: topic, stats: stats, log: log}
}

func (k *KafkaDeadLetters) writeDeadLetters(ctx context.Context, b *deadBatch) error {
	recs := make([]producer.Record, len(b.Letters))
	for i, dl := range b.Letters {
		r := &dl.Record
		headers := make([]producer.Header, 0, len(r.Headers)+5)
		for _, h := range r.Headers {
			headers = append(headers, producer.Header{Key: h.Key, Value: h.Value})
		}
		headers = append(headers, letterHeaders(dl)...)
		at, headers := k.restamped(dl, headers)
		recs[i] = producer.Record{Key: r.Key, Value: r.Value, Headers: headers, Time: at}
	}
	err := k.p.Produce(ctx, k.topic, recs)
	if err == nil {
		return nil
	}
	var perr *producer.Error
	if errors.Is(err, kafka.InvalidTimestamp) && errors.As(err, &perr) {
		return k.writeRestamped(ctx, b, perr)
	}
	if !tooLarge(err) || !errors.As(err, &perr) {
		return fmt.Errorf("dead-letter topic %s: %w", k.topic, err)
	}
	// Some letters are over the topic's max.message.bytes (the producer
	// names them; the others are written): cut those to fit.
	for _, re := range perr.Records {
		if err := k.writeCut(ctx, &b.Letters[re.Index], re.Err); err != nil {
			return err
		}
	}
	return nil
}

// restamped is the record time of a dead letter, and its headers: its
// own timestamp, unless the topic refused that (a producer's clock or
// unit gone wrong, past message.timestamp.after.max.ms or before.max.ms;
// Kafka 4 takes an hour ahead at most), then the time of writing, with
// its own in the header logstore.timestamp.
func (k *KafkaDeadLetters) restamped(dl RejectedRecord, headers []producer.Header) (time.Time, []producer.Header) {
	r := &dl.Record
	k.mu.Lock()
	refused := k.restamp[letterAt{r.Topic, r.Partition, r.Offset}]
	k.mu.Unlock()
	if !refused {
		return r.Time, headers
	}
	return time.Time{}, append(headers, producer.Header{Key: headerTimestamp, Value: strconv.AppendInt(nil, r.Time.UnixMilli(), 10)})
}

// writeRestamped answers a produce the topic refused for a record
// timestamp: the refused letters are remembered, and written again with
// the time of writing (the others were written). Inside a transaction
// the produce fails, as the transaction must be aborted; the caller
// writes it again whole, and the letters go restamped from the start.
// Holding the partition instead would hold it forever.
func (k *KafkaDeadLetters) writeRestamped(ctx context.Context, b *deadBatch, perr *producer.Error) error {
	again := &deadBatch{Topic: b.Topic, Partition: b.Partition, First: b.First, Last: b.Last, Prefix: b.Prefix}
	k.mu.Lock()
	if k.restamp == nil {
		k.restamp = map[letterAt]bool{}
	}
	fresh := 0
	for _, re := range perr.Records {
		dl := b.Letters[re.Index]
		at := letterAt{dl.Record.Topic, dl.Record.Partition, dl.Record.Offset}
		if !k.restamp[at] {
			k.restamp[at] = true
			fresh++
		}
		again.Letters = append(again.Letters, dl)
	}
	k.mu.Unlock()
	if fresh == 0 {
		// Refused with the time of writing too: the brokers' clocks are
		// off, and only retrying can help.
		return fmt.Errorf("dead-letter topic %s: %w", k.topic, perr)
	}
	log := k.log
	if log == nil {
		log = slog.Default()
	}
	log.Warn("the dead-letter topic refused letters for their record timestamp; writing them with the time of writing, their own in the header "+headerTimestamp,
		"dead_letter_topic", k.topic, "topic", b.Topic, "partition", b.Partition, "letters", len(again.Letters), "err", perr)
	if err := k.writeDeadLetters(ctx, again); err != nil {
		return fmt.Errorf("dead-letter topic %s: %w", k.topic, err)
	}
	return nil
}

// letterHeaders are the headers every dead letter carries: the reason and
// the source coordinates.
func letterHeaders(dl RejectedRecord) []producer.Header {
	r := &dl.Record
	return []producer.Header{
		{Key: headerError, Value: []byte(dl.Reason)},
		{Key: sink.HeaderSourceTopic, Value: []byte(r.Topic)},
		{Key: sink.HeaderSourcePartition, Value: []byte(strconv.Itoa(r.Partition))},
		{Key: sink.HeaderSourceOffset, Value: []byte(strconv.FormatInt(r.Offset, 10))},
	}
}

// truncatedValueBytes is what a dead letter too big for its topic keeps of
// the record's value; the header logstore.truncated holds the full size.
const truncatedValueBytes = 1024

// headerTruncated marks a dead letter whose key, value and headers were cut
// to fit the dead-letter topic: the value's original size in bytes.
const headerTruncated = "logstore.truncated"

// writeCut produces a dead letter the topic refused (err) for its size as
// a truncated letter (the reason, the source coordinates and the value's
// first KiB), then as the reason and coordinates alone. A letter even that
// does not fit is logged with its coordinates and counted
// (logstore_dead_letters_unwritable_total) instead of holding the
// partition: the record is still in the source topic until retention, and
// whole in _errors/ when dead_letter.files is on.
func (k *KafkaDeadLetters) writeCut(ctx context.Context, dl *RejectedRecord, err error) error {
	r := &dl.Record
	for _, keep := range []int{truncatedValueBytes, 0} {
		if !tooLarge(err) {
			break
		}
		at, headers := k.restamped(*dl, append([]producer.Header{{Key: headerTruncated, Value: []byte(strconv.Itoa(len(r.Value)))}}, letterHeaders(*dl)...))
		cut := producer.Record{Value: r.Value[:min(keep, len(r.Value))], Time: at, Headers: headers}
		if err = k.p.Produce(ctx, k.topic, []producer.Record{cut}); err == nil && k.stats != nil {
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
			"dead_letter_topic", k.topic, "topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "reason", dl.Reason)
		return nil
	}
	if err != nil {
		return fmt.Errorf("dead-letter topic %s: %w", k.topic, err)
	}
	return nil
}

// tooLarge says a produce failed for a record's size: the broker's
// max.message.bytes.
func tooLarge(err error) bool {
	return errors.Is(err, kafka.MessageSizeTooLarge) || errors.Is(err, kafka.RecordListTooLarge)
}

func (k *KafkaDeadLetters) Close() error { return k.p.Close() }

// FileDeadLetters writes a batch's dead letters as Parquet under the files
// sink's _errors/ folder, named after the batch. Guarantee: exactly once,
// like the batch's own files.
type FileDeadLetters struct{ Files *sink.Files }

func (f FileDeadLetters) writeDeadLetters(ctx context.Context, b *deadBatch) error {
	letters := make([]sink.DeadLetterRow, len(b.Letters))
	for i, dl := range b.Letters {
		r := &dl.Record
		letters[i] = sink.DeadLetterRow{Reason: dl.Reason, Source: sink.Source{Offset: r.Offset, Key: r.Key, Value: r.Value, Timestamp: r.Time}}
	}
	batch := sink.NewDeadLetterBatch(b.Topic, b.Partition, b.First, b.Last, letters)
	batch.Prefix = b.Prefix
	return f.Files.WriteDeadLetters(ctx, batch)
}
