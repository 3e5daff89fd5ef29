package sink

import (
	"testing"

	"github.com/logstore/logstore/internal/kafka/producer"
)

// TestPositionRecordsNameTheirTopicAndGroup: a transaction's records in
// the positions topic are keyed by input topic, partition and group, and
// carry the input topic's id and the group; a replay's part (no member)
// writes none.
func TestPositionRecordsNameTheirTopicAndGroup(t *testing.T) {
	const id = "b9f83c9883f442a8a19b6b7c907c4f04"
	member := &producer.GroupMember{Group: "g"}
	parts := []*TxnPart{
		{Batch: &Batch{TopicID: id}, Member: member, Offset: producer.Offset{Topic: "logs", Partition: 3, Offset: 100, Metadata: "at:1 from:70"}},
		{Batch: &Batch{TopicID: id}, Offset: producer.Offset{Topic: "logs", Partition: 4, Offset: 9}},
	}
	recs := positionRecords("g", parts)
	if len(recs) != 1 {
		t.Fatalf("%d records, want the one of the part that commits", len(recs))
	}
	if got, want := string(recs[0].Key), `["logs",3,"g"]`; got != want {
		t.Errorf("key %s, want %s", got, want)
	}
	topic, partition, pos, ok := ParsePosition(recs[0].Key, recs[0].Value)
	want := KafkaPosition{Next: 100, Metadata: "at:1 from:70", Group: "g", TopicID: id}
	if !ok || topic != "logs" || partition != 3 || pos != want {
		t.Errorf("read back %s/%d %+v (ok %v), want logs/3 %+v", topic, partition, pos, ok, want)
	}
}

// TestParsePositionReadsEveryFormat: records keyed [topic, partition]
// (before records were keyed by group and named the topic id) are read,
// their group from the value; records of another shape are skipped.
func TestParsePositionReadsEveryFormat(t *testing.T) {
	for _, tt := range []struct {
		name, key, value string
		ok               bool
		want             KafkaPosition
	}{
		{"keyed by group, with the topic id", `["logs",0,"g"]`, `{"next":5,"group":"g","topic_id":"abc"}`, true, KafkaPosition{Next: 5, Group: "g", TopicID: "abc"}},
		{"keyed by group, the group in the key alone", `["logs",0,"g"]`, `{"next":5}`, true, KafkaPosition{Next: 5, Group: "g"}},
		{"the old format: no group in the key, no topic id", `["logs",0]`, `{"next":5,"metadata":"at:1 from:3","group":"g"}`, true, KafkaPosition{Next: 5, Metadata: "at:1 from:3", Group: "g"}},
		{"key and value name other groups", `["logs",0,"g"]`, `{"next":5,"group":"h"}`, false, KafkaPosition{}},
		{"a tombstone", `["logs",0,"g"]`, "", false, KafkaPosition{}},
		{"a key of another shape", `["logs"]`, `{"next":5,"group":"g"}`, false, KafkaPosition{}},
		{"a negative offset", `["logs",0,"g"]`, `{"next":-1,"group":"g"}`, false, KafkaPosition{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var value []byte
			if tt.value != "" {
				value = []byte(tt.value)
			}
			topic, partition, pos, ok := ParsePosition([]byte(tt.key), value)
			if ok != tt.ok || ok && (topic != "logs" || partition != 0 || pos != tt.want) {
				t.Errorf("%s/%d %+v ok %v, want logs/0 %+v ok %v", topic, partition, pos, ok, tt.want, tt.ok)
			}
		})
	}
}
