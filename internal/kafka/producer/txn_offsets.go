package producer

import (
	"context"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/internal/kafka/conn"
)

// stableOffsetsVersion is the OffsetFetch version asked: v7 (Kafka 2.5,
// KIP-447) is the first with require_stable; kafka-go's own OffsetFetch
// stops at v5, so this request is encoded and decoded with kmsg.
const stableOffsetsVersion = 7

// Committed is a partition's committed offset (-1: none) and metadata.
type Committed struct {
	Offset   int64
	Metadata string
}

// StableOffsets reads a group's committed offsets once no transaction
// that commits offsets for these partitions is open (OffsetFetch with
// require_stable, KIP-447). A member taking over partitions from one that
// died mid-transaction waits here until that transaction ends — committed
// by a zombie, or aborted by the coordinator at its transaction timeout —
// so it never reads again what that transaction is about to commit. It
// waits until ctx ends.
func (p *Producer) StableOffsets(ctx context.Context, group string, topics map[string][]int32) (map[string]map[int32]Committed, error) {
	c := p.coordinator(conn.Group, group)
	defer c.Reset()
	req := stableOffsetsRequest(group, topics)
	backoff := conn.Backoff{Min: 50 * time.Millisecond, Max: time.Second}
	var waitedFrom time.Time
	for {
		res, err := p.fetchStable(ctx, c, req)
		if err == nil {
			out, code := stableOffsets(res)
			switch code {
			case 0:
				if !waitedFrom.IsZero() {
					p.cfg.Log.Info("the open transaction ended; committed offsets read", "group", group, "waited", time.Since(waitedFrom).Round(time.Millisecond))
				}
				return out, nil
			case codeUnstableOffsetCommit:
				if waitedFrom.IsZero() {
					waitedFrom = time.Now()
					p.cfg.Log.Info("committed offsets wait for an open transaction to end (the member that opened it may have died; the brokers abort it at its transaction timeout)",
						"group", group)
				}
				err = kafka.Error(code)
			default:
				if txnClassOf(code) == txnCoordinatorMoved {
					c.Reset()
				} else if txnClassOf(code) != txnWait {
					return nil, fmt.Errorf("committed offsets of group %s: %w", group, kafka.Error(code))
				}
				err = kafka.Error(code)
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("committed offsets of group %s: %w (last: %v)", group, ctx.Err(), err)
		case <-time.After(backoff.Next()):
		}
	}
}

func stableOffsetsRequest(group string, topics map[string][]int32) *kmsg.OffsetFetchRequest {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = stableOffsetsVersion
	req.Group = group
	req.RequireStable = true
	for t, ps := range topics {
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic = t
		rt.Partitions = ps
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// stableOffsets reads the answer: the offsets, or the first error code
// (the group's, or a partition's).
func stableOffsets(res *kmsg.OffsetFetchResponse) (map[string]map[int32]Committed, int16) {
	if res.ErrorCode != 0 {
		return nil, res.ErrorCode
	}
	out := map[string]map[int32]Committed{}
	for _, t := range res.Topics {
		m := map[int32]Committed{}
		for _, pr := range t.Partitions {
			if pr.ErrorCode != 0 {
				return nil, pr.ErrorCode
			}
			c := Committed{Offset: pr.Offset}
			if pr.Metadata != nil {
				c.Metadata = *pr.Metadata
			}
			m[pr.Partition] = c
		}
		out[t.Topic] = m
	}
	return out, 0
}

// fetchStable sends the OffsetFetch to the group's coordinator.
func (p *Producer) fetchStable(ctx context.Context, c *conn.Coordinator, req *kmsg.OffsetFetchRequest) (*kmsg.OffsetFetchResponse, error) {
	rctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	defer cancel()
	res := kmsg.NewPtrOffsetFetchResponse()
	res.Version = req.Version
	err := c.Do(rctx, func(bc *conn.Conn) error {
		body, err := bc.Kmsg(rctx, req)
		if err != nil {
			return err
		}
		if err := res.ReadFrom(body); err != nil {
			return fmt.Errorf("OffsetFetch v%d from %s: %w", req.Version, bc.Addr(), err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}
