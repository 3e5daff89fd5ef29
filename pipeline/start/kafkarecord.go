package start

import (
	"fmt"
	"strings"
)

// KafkaRecord is one job's record of a partition in the exactly-once
// Kafka output's positions topic (sinks.kafka.positions_topic): the offset
// its transactions committed to its group, written in the same
// transactions.
//
// A record names what it is of: the group (the job) that wrote it, and
// the input topic's id. Another group's record is another job's — one
// that writes the same output topic with its own schema.where, say — and
// never stands in for this job's offset unless sinks.kafka.
// adopt_positions_of names that group (a group renamed). A record of
// another topic id is of an earlier topic of the same name (deleted and
// created again, numbered from 0 again): it says the topic was recreated,
// and kafka.on_offset_out_of_range decides.
//
// A record written before records named the topic (no id) is taken as of
// the topic now, unless another record of the partition (the files' or
// the table's record, or the group's cut mark) names another id than the
// topic has now: then which topic it is of is unknown, it stands in for
// nothing, and on_offset_out_of_range decides. Every version wrote its
// group.
type KafkaRecord struct {
	// Group is the group (kafka.group) of the job that wrote it.
	Group string
	// TopicID is Kafka's id of the input topic the offset is of; "" in a
	// record written before records named it.
	TopicID string
	// At is the next offset committed, with its commit metadata's mark.
	At Position
	// From is the first offset of the batch that took the partition to
	// At (its commit metadata, "from:<first>"); nil when unknown.
	From *int64
}

// OwnRecord is the job's record among a partition's records: its group's,
// else adopt's (sinks.kafka.adopt_positions_of, "" for none); nil when
// there is neither. Another group's record is another job's.
func OwnRecord(records []KafkaRecord, group, adopt string) *KafkaRecord {
	var adopted *KafkaRecord
	for i := range records {
		switch r := &records[i]; {
		case group != "" && r.Group == group:
			return r
		case adopt != "" && r.Group == adopt:
			adopted = r
		}
	}
	return adopted
}

// kafkaRecord is the job's record of the partition when it stands in
// for the group's offset; stale is the job's record when it is of an
// earlier topic of this name and the group has no offset (the topic was
// recreated: the brokers drop a deleted topic's offsets with it).
func (k Known) kafkaRecord() (own, stale *KafkaRecord) {
	if !k.Transactions {
		return nil, nil
	}
	r := OwnRecord(k.Kafka, k.GroupID, k.AdoptFrom)
	switch {
	case r == nil || r.At.Offset <= k.Group.Offset:
		return nil, nil
	case otherTopic(r.TopicID, k.TopicID):
		if k.Group.Offset < 0 {
			return nil, r
		}
		return nil, nil
	case r.TopicID == "" && k.otherTopicRecorded():
		return nil, nil // of an unknown topic: the other record decides
	}
	return r, nil
}

// otherTopicRecorded says the output's record or the group's cut mark
// names another topic id than the topic has now.
func (k Known) otherTopicRecorded() bool {
	out := k.Files
	if out == nil {
		out = k.Table
	}
	return out != nil && otherTopic(out.TopicID, k.TopicID) || k.Group.Offset >= 0 && otherTopic(k.Group.TopicID, k.TopicID)
}

// othersNote is what a start without a record of the job's own adds to
// its reason when the positions topic holds other groups' records of the
// partition: they were not taken, and how to take one.
func (k Known) othersNote() string {
	if !k.Transactions || k.Group.Offset >= 0 || len(k.Kafka) == 0 || OwnRecord(k.Kafka, k.GroupID, k.AdoptFrom) != nil {
		return ""
	}
	others := make([]string, len(k.Kafka))
	for i, r := range k.Kafka {
		others[i] = fmt.Sprintf("group %q at %d", r.Group, r.At.Offset)
	}
	return fmt.Sprintf("; the positions topic holds this partition's position of other jobs (%s), not taken: a record is its group's "+
		"(after renaming kafka.group, set sinks.kafka.adopt_positions_of to the old group to take its position)", strings.Join(others, ", "))
}
