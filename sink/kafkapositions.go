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
// partition, keyed by its topic and partition, so both commit or neither
// does. The group's offsets are the same figures, but the brokers drop
// them (offsets.retention.minutes after the group empties, or an operator
// deletes them); the topic is compacted and keeps each key's last record
// for as long as it exists. Like the files' resume records and the table's
// positions, it is the output's record, not the group's: a job under a new
// group id writing the same output topic finds it too and skips what the
// topic holds. The job reads it only when the group has no offset for a
// partition it takes. (Kafka Connect's exactly-once source connectors keep
// their offsets the same way, KIP-618.)

// PositionKey is the record key of the position of topic/partition.
func PositionKey(topic string, partition int) []byte {
	b, _ := json.Marshal([]any{topic, partition})
	return b
}

// KafkaPosition is one record of the positions topic: the next offset the
// group commits for the partition and the metadata it commits with (the
// cut mark, the topic's id, the commit's time), as TxnOffsetCommit sends
// them, and the group that wrote it.
type KafkaPosition struct {
	Next     int64  `json:"next"`
	Metadata string `json:"metadata,omitempty"`
	Group    string `json:"group"`
}

// ParsePosition decodes a record of the positions topic; ok is false for
// a record of another shape (or a tombstone), which the reader skips.
func ParsePosition(key, value []byte) (topic string, partition int, pos KafkaPosition, ok bool) {
	var k []json.RawMessage
	if json.Unmarshal(key, &k) != nil || len(k) != 2 || value == nil {
		return "", 0, KafkaPosition{}, false
	}
	if json.Unmarshal(k[0], &topic) != nil || json.Unmarshal(k[1], &partition) != nil {
		return "", 0, KafkaPosition{}, false
	}
	if json.Unmarshal(value, &pos) != nil || pos.Next < 0 {
		return "", 0, KafkaPosition{}, false
	}
	return topic, partition, pos, true
}

// positionRecords are the records of a transaction's offsets.
func positionRecords(group string, offsets []producer.Offset) []producer.Record {
	recs := make([]producer.Record, len(offsets))
	for i, o := range offsets {
		v, _ := json.Marshal(KafkaPosition{Next: o.Offset, Metadata: o.Metadata, Group: group})
		recs[i] = producer.Record{Key: PositionKey(o.Topic, int(o.Partition)), Value: v}
	}
	return recs
}

// PositionsTopic is the topic exactly_once keeps its positions in.
func (k *Kafka) PositionsTopic() string { return k.cfg.PositionsTopic }

// writePositions produces offsets to the positions topic in the open
// transaction.
func (k *Kafka) writePositions(ctx context.Context, group string, offsets []producer.Offset) error {
	if err := k.p.Produce(ctx, k.cfg.PositionsTopic, positionRecords(group, offsets)); err != nil {
		return fmt.Errorf("kafka: writing the transaction's offsets to sinks.kafka.positions_topic %q: %w", k.cfg.PositionsTopic, err)
	}
	return nil
}
