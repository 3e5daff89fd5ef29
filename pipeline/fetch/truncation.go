package fetch

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
)

// OffsetForLeaderEpoch (KIP-320) is not in kafka-go's protocol package; the
// package encodes any registered message from its struct tags. v2 adds the
// fencing current_leader_epoch, v3 the replica id; v4 is flexible.
func init() {
	protocol.Register(&epochEndRequest{}, &epochEndResponse{})
}

type epochEndRequest struct {
	ReplicaID int32              `kafka:"min=v3,max=v3"`
	Topics    []epochEndReqTopic `kafka:"min=v2,max=v3"`
}

type epochEndReqTopic struct {
	Topic      string                 `kafka:"min=v2,max=v3"`
	Partitions []epochEndReqPartition `kafka:"min=v2,max=v3"`
}

type epochEndReqPartition struct {
	Partition          int32 `kafka:"min=v2,max=v3"`
	CurrentLeaderEpoch int32 `kafka:"min=v2,max=v3"`
	LeaderEpoch        int32 `kafka:"min=v2,max=v3"`
}

func (*epochEndRequest) ApiKey() protocol.ApiKey { return protocol.OffsetForLeaderEpoch }

type epochEndResponse struct {
	ThrottleTimeMs int32              `kafka:"min=v2,max=v3"`
	Topics         []epochEndResTopic `kafka:"min=v2,max=v3"`
}

type epochEndResTopic struct {
	Topic      string                 `kafka:"min=v2,max=v3"`
	Partitions []epochEndResPartition `kafka:"min=v2,max=v3"`
}

type epochEndResPartition struct {
	ErrorCode   int16 `kafka:"min=v2,max=v3"`
	Partition   int32 `kafka:"min=v2,max=v3"`
	LeaderEpoch int32 `kafka:"min=v2,max=v3"`
	EndOffset   int64 `kafka:"min=v2,max=v3"`
}

func (*epochEndResponse) ApiKey() protocol.ApiKey { return protocol.OffsetForLeaderEpoch }

// epochEnd asks the leader where leader epoch `epoch` of the partition ends
// in its log: the first offset of the next epoch, or its log end if epoch
// is the current one.
func (p *brokerPool) epochEnd(ctx context.Context, st partitionState, topic string, partition int, epoch int32) (endOffset int64, err error) {
	c, err := p.conn(ctx, st.Leader)
	if err != nil {
		return 0, err
	}
	if c.Version(protocol.OffsetForLeaderEpoch) < 2 {
		return -1, nil // a broker before Kafka 2.1: no check, as before KIP-320
	}
	msg, _, err := p.call(ctx, st.Leader, &epochEndRequest{
		ReplicaID: -1,
		Topics: []epochEndReqTopic{{Topic: topic, Partitions: []epochEndReqPartition{{
			Partition: int32(partition), CurrentLeaderEpoch: st.LeaderEpoch, LeaderEpoch: epoch,
		}}}},
	})
	if err != nil {
		return 0, err
	}
	for _, t := range msg.(*epochEndResponse).Topics {
		for _, part := range t.Partitions {
			if t.Topic != topic || int(part.Partition) != partition {
				continue
			}
			if part.ErrorCode != 0 {
				return 0, fmt.Errorf("offset for leader epoch %d of %s/%d at broker %d: %w", epoch, topic, partition, st.Leader, kafka.Error(part.ErrorCode))
			}
			return part.EndOffset, nil
		}
	}
	return 0, fmt.Errorf("offset for leader epoch of %s/%d: broker %d did not answer for the partition", topic, partition, st.Leader)
}

// checkTruncation runs after the leadership moved (a new leader epoch): it
// asks the new leader where the epoch of the last record the reader took
// ends. An end before the reader's offset means the new leader's log
// diverged from what the reader read: an unclean leader election truncated
// records the old leader had served (KIP-320). The reader then fails with an
// *OffsetOutOfRangeError marked Truncated, whose LogEnd is where the logs
// part, and the caller applies its out-of-range policy.
func (r *PartitionReader) checkTruncation(ctx context.Context) error {
	end, err := r.pool.epochEnd(ctx, r.part, r.cfg.Topic, r.cfg.Partition, r.lastEpoch)
	if err != nil {
		return err
	}
	r.validate = false
	if end < 0 || end >= r.offset {
		return nil
	}
	r.stats.truncated()
	r.log.Warn("log truncated: the partition's new leader does not hold records this reader read (an unclean leader election)",
		slog.Int64("offset", r.offset), slog.Int64("diverged_at", end), slog.Int("last_epoch", int(r.lastEpoch)), slog.Int("leader_epoch", int(r.part.LeaderEpoch)))
	start, high, err := r.Watermarks(ctx)
	if err != nil {
		return err
	}
	return &OffsetOutOfRangeError{
		Topic: r.cfg.Topic, Partition: r.cfg.Partition, Offset: r.offset,
		LogStart: start, LogEnd: min(end, high), Truncated: true,
	}
}
