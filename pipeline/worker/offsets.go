package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/logstore/logstore/pipeline/group"
	"github.com/logstore/logstore/pipeline/group/wire"
	"github.com/logstore/logstore/pipeline/start"
)

// position is where a partition stands in the group, or starts (package
// start decides which).
type position = start.Position

// committer writes offsets for one group generation. Every commit carries
// the generation id and member id, so the coordinator rejects a member that
// was fenced by a rebalance (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID).
type Committer interface {
	// Commit stores offset with metadata for one partition.
	Commit(ctx context.Context, topic string, partition int, offset int64, metadata string) error
}

// GroupCommitter commits through OffsetCommit for one generation.
type GroupCommitter struct {
	client     *kafka.Client
	group      string
	generation int
	member     string
}

func (g *GroupCommitter) Commit(ctx context.Context, topic string, partition int, offset int64, metadata string) error {
	if metadata == "" {
		metadata = commitTimeMeta(time.Now()) // committime.go
	}
	resp, err := g.client.OffsetCommit(ctx, &kafka.OffsetCommitRequest{
		GroupID:      g.group,
		GenerationID: g.generation,
		MemberID:     g.member,
		Topics:       map[string][]kafka.OffsetCommit{topic: {{Partition: partition, Offset: offset, Metadata: metadata}}},
	})
	return commitAnswer(&offsetCommit{topic: topic, partition: partition, offset: offset}, resp, err)
}

// errFenced says the group moved on without this member: stop, write nothing.
var errFenced = errors.New("fenced by a rebalance")

func isFenced(err error) bool {
	return errors.Is(err, kafka.IllegalGeneration) || errors.Is(err, kafka.UnknownMemberId) ||
		errors.Is(err, kafka.RebalanceInProgress) || errors.Is(err, kafka.FencedInstanceID)
}

// MemberCommitter commits with the member's current generation and member
// id, read at every commit, the partitions' commits that wait together in
// one request (offsetBatcher): a worker outlives generations (it keeps its
// partition across cooperative rebalances). A commit the coordinator
// refuses because a rebalance is under way (REBALANCE_IN_PROGRESS) or
// ended before this member heard of it (ILLEGAL_GENERATION) is sent again
// in the next generation while the partition is still this member's; the
// Java consumer retries such commits the same way. Anything else that
// fences the member is final.
type MemberCommitter struct {
	member Generations
	owns   func(topic string, partition int) bool
	// wait bounds the wait for the next generation: the rebalance timeout,
	// past which the group went on without this member.
	wait time.Duration
	// batch sends the partitions' commits that wait together in one
	// request (commitbatch.go).
	batch *offsetBatcher
}

// NewMemberCommitter commits for member (its generation, or epoch, at
// each commit) the partitions owns says it holds, waiting up to wait for
// the next generation. consumer is the member when it is one of the
// consumer protocol (KIP-848): its commits go through it (OffsetCommit
// v9 with its member epoch, which kafka-go cannot send); nil commits
// through client.
func NewMemberCommitter(client *kafka.Client, group string, member Generations, owns func(topic string, partition int) bool, wait time.Duration, consumer *group.ConsumerMember) *MemberCommitter {
	b := &offsetBatcher{client: client, group: group}
	if consumer != nil {
		b.sendTo = epochSender(consumer)
	}
	return &MemberCommitter{member: member, owns: owns, wait: wait, batch: b}
}

func (c *MemberCommitter) Commit(ctx context.Context, topic string, partition int, offset int64, metadata string) error {
	for {
		changed := c.member.Changed()
		gen, id := c.member.Current()
		err := c.batch.commit(ctx, gen, id, topic, partition, offset, metadata)
		if err == nil || !rebalancing(err) || !c.owns(topic, partition) {
			return err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return err
		case <-time.After(c.wait):
			return err
		}
	}
}

// Generations is a group member as its commits see it.
type Generations interface {
	Current() (generation int32, memberID string)
	Changed() <-chan struct{}
}

// rebalancing says a commit was refused only because its generation (or
// member epoch) is not the group's current one.
func rebalancing(err error) bool {
	return errors.Is(err, errFenced) && (errors.Is(err, kafka.RebalanceInProgress) || errors.Is(err, kafka.IllegalGeneration) ||
		errors.Is(err, group.ErrStaleMemberEpoch))
}

// epochSender sends a request's commits through a consumer-protocol
// member with their member epoch (the generation offsetBatcher groups
// them by): OffsetCommit v9, many partitions in one request as a classic
// member's. A stale or fenced epoch, or an unknown member, is errFenced.
func epochSender(member *group.ConsumerMember) func(ctx context.Context, take []*offsetCommit) []error {
	return func(ctx context.Context, take []*offsetCommit) []error {
		offsets := make([]wire.CommitOffset, len(take))
		for i, c := range take {
			offsets[i] = wire.CommitOffset{Topic: c.topic, Partition: int32(c.partition), Offset: c.offset, Metadata: c.metadata}
		}
		answers, err := member.CommitOffsets(ctx, take[0].generation, offsets)
		errs := make([]error, len(take))
		for i, c := range take {
			e := err
			if e == nil {
				e = answers[i]
			}
			switch {
			case e == nil:
			case isFenced(e) || errors.Is(e, group.ErrStaleMemberEpoch) || errors.Is(e, group.ErrFencedMemberEpoch):
				errs[i] = fmt.Errorf("%w: committing %s/%d: %w", errFenced, c.topic, c.partition, e)
			default:
				errs[i] = fmt.Errorf("committing %s/%d at %d: %w", c.topic, c.partition, c.offset, e)
			}
		}
		return errs
	}
}

// NoCommit is the committer of a replay: it never touches the group.
type NoCommit struct{}

func (NoCommit) Commit(context.Context, string, int, int64, string) error { return nil }
