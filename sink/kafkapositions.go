package sink

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/logstore/logstore/internal/kafka/producer"
)

// The positions topic (sinks.kafka.positions_topic) is exactly_once's own
// record of where the Kafka output stands: every transaction that commits
// input offsets to the group also writes them here, one record per input
// partition and group, so both commit or neither does. The group's
// offsets are the same figures, but the brokers drop them
// (offsets.retention.minutes after the group empties, when an operator
// deletes them, or with the input topic when it is deleted); the topic is
// compacted and keeps each key's last record for as long as it exists.
// The job reads it only when the group has no offset for a partition it
// takes. (Kafka Connect's exactly-once source connectors keep their
// offsets the same way, KIP-618.)
//
// A record names what it is of: the input topic and its id (KIP-516; a
// topic deleted and created again has another, and numbers its records
// from 0 again) and the group of the job that wrote it. Two jobs writing
// one output topic (each its own group and schema.where) each keep their
// own; a job takes another group's only when sinks.kafka.
// adopt_positions_of names it (pipeline/start.KafkaRecord says how the
// records are weighed). Records written before they named the topic id
// and were keyed by group (key [topic, partition]; the value named the
// group already) are read too: the last record of a group wins, in the
// topic's order.

// PositionKey is the record key of group's position of topic/partition.
func PositionKey(topic string, partition int, group string) []byte {
	b, _ := json.Marshal([]any{topic, partition, group})
	return b
}

// KafkaPosition is one record of the positions topic: the next offset the
// group commits for the partition and the metadata it commits with (the
// cut mark, the commit's time, the batch's first offset), as
// TxnOffsetCommit sends them, the group that wrote it and the input
// topic's id ("" when the brokers keep none, or in a record older than
// ids).
type KafkaPosition struct {
	Next     int64  `json:"next"`
	Metadata string `json:"metadata,omitempty"`
	Group    string `json:"group"`
	TopicID  string `json:"topic_id,omitempty"`
}

// ParsePosition decodes a record of the positions topic, keyed
// [topic, partition, group] or, before records were keyed by group,
// [topic, partition]; ok is false for a record of another shape (or a
// tombstone), which the reader skips.
func ParsePosition(key, value []byte) (topic string, partition int, pos KafkaPosition, ok bool) {
	var k []json.RawMessage
	if json.Unmarshal(key, &k) != nil || len(k) < 2 || len(k) > 3 || value == nil {
		return "", 0, KafkaPosition{}, false
	}
	if json.Unmarshal(k[0], &topic) != nil || json.Unmarshal(k[1], &partition) != nil {
		return "", 0, KafkaPosition{}, false
	}
	if json.Unmarshal(value, &pos) != nil || pos.Next < 0 {
		return "", 0, KafkaPosition{}, false
	}
	if len(k) == 3 {
		var group string
		if json.Unmarshal(k[2], &group) != nil || pos.Group != "" && pos.Group != group {
			return "", 0, KafkaPosition{}, false
		}
		pos.Group = group
	}
	return topic, partition, pos, true
}

// positionRecords are the records of a transaction's offsets: those of
// the parts that commit one (a replay's commit none), with the id of the
// topic each batch was read from.
func positionRecords(group string, parts []*TxnPart) []producer.Record {
	var recs []producer.Record
	for _, p := range parts {
		if p.Member == nil {
			continue
		}
		o := p.Offset
		v, _ := json.Marshal(KafkaPosition{Next: o.Offset, Metadata: o.Metadata, Group: group, TopicID: p.Batch.TopicID})
		recs = append(recs, producer.Record{Key: PositionKey(o.Topic, int(o.Partition), group), Value: v})
	}
	return recs
}

// PositionsTopic is the topic exactly_once keeps its positions in.
func (k *Kafka) PositionsTopic() string { return k.cfg.PositionsTopic }

// writePositions produces the offsets that group's parts commit to the
// positions topic in the open transaction.
func (k *Kafka) writePositions(ctx context.Context, group string, parts []*TxnPart) error {
	if err := k.p.Produce(ctx, k.cfg.PositionsTopic, positionRecords(group, parts)); err != nil {
		return fmt.Errorf("kafka: writing the transaction's offsets to sinks.kafka.positions_topic %q: %w", k.cfg.PositionsTopic, err)
	}
	return nil
}
