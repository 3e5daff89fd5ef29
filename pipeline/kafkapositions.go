package pipeline

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol/createtopics"

	"github.com/logstore/logstore/internal/kafka/conn"

	"github.com/logstore/logstore/pipeline/fetch"
	"github.com/logstore/logstore/pipeline/start"
	"github.com/logstore/logstore/pipeline/worker"
	"github.com/logstore/logstore/sink"
)

// positionsSegment is the positions topic's segment.ms: compaction leaves
// the active segment alone, so a shorter segment bounds what a start reads
// to about this much of the member's cycles plus one record per key.
const positionsSegment = "600000" // 10 minutes

// ensurePositionsTopic creates sinks.kafka.positions_topic, compacted, when
// the cluster does not have it yet (see sink/kafkapositions.go for what it
// holds). A topic that exists is used as it is.
func (j *Job) ensurePositionsTopic(ctx context.Context) error {
	topic := j.eos.Kafka.PositionsTopic()
	if _, err := j.eos.Kafka.Producer().Partitions(ctx, topic); err == nil {
		return nil
	} else if !errors.Is(err, kafka.UnknownTopicOrPartition) {
		return fmt.Errorf("sinks.kafka.positions_topic: reading metadata of %q: %w", topic, err)
	}
	md, err := j.conn.Client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{}})
	if err != nil {
		return fmt.Errorf("sinks.kafka.positions_topic: reading the cluster's brokers: %w", err)
	}
	// To the broker the metadata names controller (a KRaft broker forwards
	// it to the real one), on a connection of its own: kafka-go's
	// transport would wait for the new topic in metadata it asks only for
	// the input's topics.
	seeds := conn.Seeds{Dialer: j.conn.Dialer, Addrs: j.conn.Brokers}
	if c := md.Controller; c.Host != "" {
		seeds.Addrs = []string{net.JoinHostPort(c.Host, strconv.Itoa(c.Port))}
	}
	msg, _, err := seeds.Request(ctx, &createtopics.Request{TimeoutMs: 30_000, Topics: []createtopics.RequestTopic{{
		Name: topic, NumPartitions: 1, ReplicationFactor: int16(min(3, max(1, len(md.Brokers)))),
		Configs: []createtopics.RequestConfig{
			{Name: "cleanup.policy", Value: "compact"},
			{Name: "segment.ms", Value: positionsSegment},
		},
	}}})
	if err == nil {
		for _, t := range msg.(*createtopics.Response).Topics {
			if t.ErrorCode != 0 && kafka.Error(t.ErrorCode) != kafka.TopicAlreadyExists {
				err = fmt.Errorf("%w: %s", kafka.Error(t.ErrorCode), t.ErrorMessage)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("sinks.kafka.positions_topic: creating %q: %w (exactly_once keeps each partition's position there; "+
			"create it with cleanup.policy=compact, or grant the job Create on it)", topic, err)
	}
	j.log.Info("created the positions topic", "topic", topic, "cleanup.policy", "compact")
	return nil
}

// lostPositions is, with exactly_once, the records of the positions topic
// (every group's last) of each partition the group has no offset for (its
// offsets expired or were deleted, or the group is new); nil when the
// group has them all. start.Decide weighs them.
func (j *Job) lostPositions(ctx context.Context, positions map[string]map[int]position) (map[string]map[int][]start.KafkaRecord, error) {
	if j.eos == nil {
		return nil, nil
	}
	lost := map[string][]int{}
	for topic, ps := range positions {
		for p, pos := range ps {
			if pos.Offset < 0 {
				lost[topic] = append(lost[topic], p)
			}
		}
	}
	if len(lost) == 0 {
		return nil, nil
	}
	return j.kafkaRecords(ctx, lost)
}

// kafkaPositions is the exactly-once Kafka output's own record of the
// partitions in want, from the positions topic: the job's record of each
// (start.OwnRecord: its group's, or the group sinks.kafka.
// adopt_positions_of names).
func (j *Job) kafkaPositions(ctx context.Context, want map[string][]int) (map[string]map[int]*worker.KafkaOwn, error) {
	records, err := j.kafkaRecords(ctx, want)
	if err != nil {
		return nil, err
	}
	out := make(map[string]map[int]*worker.KafkaOwn, len(records))
	for t, ps := range records {
		out[t] = make(map[int]*worker.KafkaOwn, len(ps))
		for p, rs := range ps {
			if r := start.OwnRecord(rs, j.cfg.Kafka.Group, j.adoptPositionsOf()); r != nil {
				out[t][p] = &worker.KafkaOwn{At: r.At, From: r.From}
			}
		}
	}
	return out, nil
}

// adoptPositionsOf is sinks.kafka.adopt_positions_of.
func (j *Job) adoptPositionsOf() string {
	if k := j.cfg.Sinks.Kafka; k != nil {
		return k.AdoptPositionsOf
	}
	return ""
}

// kafkaRecords is, for the partitions in want, every group's last record
// in the positions topic, in the order of their groups. It reads the
// topic to its end under read_committed, so it waits, as the
// stable-offsets fetch does, for open transactions on it to end.
func (j *Job) kafkaRecords(ctx context.Context, want map[string][]int) (map[string]map[int][]start.KafkaRecord, error) {
	topic := j.eos.Kafka.PositionsTopic()
	n, err := j.eos.Kafka.Producer().Partitions(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("sinks.kafka.positions_topic %q: %w", topic, err)
	}
	last := make(map[string]map[int]map[string]start.KafkaRecord, len(want))
	for t, ps := range want {
		last[t] = make(map[int]map[string]start.KafkaRecord, len(ps))
		for _, p := range ps {
			last[t][p] = map[string]start.KafkaRecord{}
		}
	}
	records := 0
	for p := range n {
		if err := j.readPositions(ctx, topic, p, func(t string, part int, pos sink.KafkaPosition) {
			records++
			if groups, ok := last[t][part]; ok {
				groups[pos.Group] = start.KafkaRecord{Group: pos.Group, TopicID: pos.TopicID, At: start.ParseMark(pos.Metadata).At(pos.Next), From: start.FromOf(pos.Metadata)}
			}
		}); err != nil {
			return nil, fmt.Errorf("reading sinks.kafka.positions_topic %q, partition %d: %w", topic, p, err)
		}
	}
	out := make(map[string]map[int][]start.KafkaRecord, len(last))
	found := 0
	for t, ps := range last {
		out[t] = make(map[int][]start.KafkaRecord, len(ps))
		for p, groups := range ps {
			for _, g := range slices.Sorted(maps.Keys(groups)) {
				out[t][p] = append(out[t][p], groups[g])
				found++
			}
		}
	}
	j.log.Info("read the Kafka output's positions for partitions the group has no offset for", "topic", topic, "records", records, "positions", found)
	return out, nil
}

// readPositions hands every record of one partition of the positions topic,
// up to the end it has when called, to each in order.
func (j *Job) readPositions(ctx context.Context, topic string, partition int, each func(topic string, partition int, pos sink.KafkaPosition)) error {
	reader := func(isolation string) *fetch.PartitionReader {
		return fetch.NewPartitionReader(fetch.ReaderConfig{
			Brokers: j.conn.Brokers, Dialer: j.conn.Dialer, Topic: topic, Partition: partition, Isolation: isolation, Log: j.log,
		})
	}
	// The end with open transactions (the high watermark, not the last
	// stable offset): what they commit must be read too, so the reader
	// waits for them to end.
	bounds := reader(fetch.ReadUncommitted)
	first, end, err := bounds.Watermarks(ctx)
	bounds.Close()
	if err != nil {
		return err
	}
	r := reader(fetch.ReadCommitted)
	defer r.Close()
	r.SetOffset(first)
	for r.Offset() < end {
		msgs, _, err := r.Fetch(ctx)
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if t, p, pos, ok := sink.ParsePosition(m.Key, m.Value); ok {
				each(t, p, pos)
			}
		}
		r.Recycle()
	}
	return nil
}
