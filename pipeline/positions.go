package pipeline

import (
	"context"
	"fmt"
	"time"

	"github.com/logstore/logstore/pipeline/start"
	"github.com/segmentio/kafka-go"
)

// position is where a partition stands in the group, or starts (package
// start decides which).
type position = start.Position

// fetchPositions reads where the partitions stand in the group. With
// exactly_once it first waits for any transaction that commits offsets
// for them to end (OffsetFetch with require_stable, KIP-447): a zombie
// may still commit one, and what it commits this member must not read
// and write again. A member that died mid-transaction makes this wait
// until sinks.kafka.transaction_timeout aborts its transaction.
//
// froms is, with exactly_once, the first offset of the last batch each
// partition's transactions committed (start.FromOf), where the group
// records it.
func (j *Job) fetchPositions(ctx context.Context, assigned map[string][]int) (positions map[string]map[int]position, froms map[string]map[int]*int64, err error) {
	if j.eos == nil {
		positions, err = fetchPositions(ctx, j.conn.Client, j.cfg.Kafka.Group, assigned)
		return positions, nil, err
	}
	topics := make(map[string][]int32, len(assigned))
	for topic, ps := range assigned {
		for _, p := range ps {
			topics[topic] = append(topics[topic], int32(p))
		}
	}
	got, err := j.eos.Kafka.Producer().StableOffsets(ctx, j.cfg.Kafka.Group, topics)
	if err != nil {
		return nil, nil, fmt.Errorf("fetching committed offsets of group %s: %w", j.cfg.Kafka.Group, err)
	}
	positions = make(map[string]map[int]position, len(assigned))
	froms = make(map[string]map[int]*int64, len(assigned))
	for topic, ps := range assigned {
		positions[topic] = make(map[int]position, len(ps))
		froms[topic] = make(map[int]*int64, len(ps))
		for _, p := range ps {
			positions[topic][p] = start.None
			if c, ok := got[topic][int32(p)]; ok && c.Offset >= 0 {
				positions[topic][p] = start.ParseMark(c.Metadata).At(c.Offset)
				froms[topic][p] = start.FromOf(c.Metadata)
			}
		}
	}
	return positions, froms, nil
}

// fetchPositions reads the group's committed offsets and pending cuts.
func fetchPositions(ctx context.Context, client *kafka.Client, group string, parts map[string][]int) (map[string]map[int]position, error) {
	resp, err := client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: parts})
	if err != nil {
		return nil, fmt.Errorf("fetching committed offsets of group %s: %w", group, err)
	}
	if resp.Error != nil {
		return nil, fmt.Errorf("fetching committed offsets of group %s: %w", group, resp.Error)
	}
	out := make(map[string]map[int]position, len(parts))
	for topic, ps := range parts {
		out[topic] = make(map[int]position, len(ps))
		for _, p := range ps {
			out[topic][p] = start.None
		}
		for _, p := range resp.Topics[topic] {
			if p.Error != nil {
				return nil, fmt.Errorf("committed offset of %s/%d: %w", topic, p.Partition, p.Error)
			}
			if p.CommittedOffset >= 0 {
				out[topic][p.Partition] = start.ParseMark(p.Metadata).At(p.CommittedOffset)
			}
		}
	}
	return out, nil
}

// listOffsets asks for one offset per partition of a topic: spec is
// kafka.FirstOffset, kafka.LastOffset or a time in unix ms.
// With read_committed, the end of a partition is its last stable offset.
func listOffsets(ctx context.Context, client *kafka.Client, topic string, partitions []int, iso kafka.IsolationLevel, spec func(p int) kafka.OffsetRequest) (map[int]int64, error) {
	reqs := make([]kafka.OffsetRequest, len(partitions))
	for i, p := range partitions {
		reqs[i] = spec(p)
	}
	resp, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}, IsolationLevel: iso})
	if err != nil {
		return nil, fmt.Errorf("listing offsets of %s: %w", topic, err)
	}
	out := make(map[int]int64, len(partitions))
	for _, po := range resp.Topics[topic] {
		if po.Error != nil {
			return nil, fmt.Errorf("listing offsets of %s/%d: %w", topic, po.Partition, po.Error)
		}
		switch {
		case len(po.Offsets) > 0:
			for o := range po.Offsets { // a timestamp request: the first offset at or after it
				out[po.Partition] = o
			}
		case reqs[0].Timestamp == kafka.FirstOffset:
			out[po.Partition] = po.FirstOffset
		default:
			out[po.Partition] = po.LastOffset
		}
	}
	return out, nil
}

// resolveStartOffset resolves `kafka.start_offset` for partitions with no commit.
func resolveStartOffset(ctx context.Context, client *kafka.Client, topic string, partitions []int, startOffset string) (map[int]int64, error) {
	kind, at, err := ParseStartOffset(startOffset)
	if err != nil {
		return nil, err
	}
	switch kind {
	case "earliest":
		return listOffsets(ctx, client, topic, partitions, kafka.ReadUncommitted, kafka.FirstOffsetOf)
	case "latest":
		return listOffsets(ctx, client, topic, partitions, kafka.ReadUncommitted, kafka.LastOffsetOf)
	}
	return offsetsForTime(ctx, client, topic, partitions, at)
}

// offsetsForTime is the first offset whose timestamp is at or after t, or the
// end of the partition when none is.
func offsetsForTime(ctx context.Context, client *kafka.Client, topic string, partitions []int, t time.Time) (map[int]int64, error) {
	byTime, err := listOffsets(ctx, client, topic, partitions, kafka.ReadUncommitted, func(p int) kafka.OffsetRequest { return kafka.TimeOffsetOf(p, t) })
	if err != nil {
		return nil, err
	}
	ends, err := listOffsets(ctx, client, topic, partitions, kafka.ReadUncommitted, kafka.LastOffsetOf)
	if err != nil {
		return nil, err
	}
	for _, p := range partitions {
		if o, ok := byTime[p]; !ok || o < 0 {
			byTime[p] = ends[p]
		}
	}
	return byTime, nil
}
