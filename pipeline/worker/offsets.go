package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/logstore/logstore/pipeline/group"
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
	client *kafka.Client
	group  string
	member Generations
	// at is the committer of one generation (classic) or member epoch
	// (consumer); nil is OffsetCommit through client.
	at   func(generation int32, member string) Committer
	owns func(topic string, partition int) bool
	// wait bounds the wait for the next generation: the rebalance timeout,
	// past which the group went on without this member.
	wait time.Duration
	// batch sends the partitions' commits that wait together in one
	// request (commitbatch.go); used when at is nil.
	batch *offsetBatcher
}

// NewMemberCommitter commits for member (its generation, or epoch, at
// each commit) the partitions owns says it holds, waiting up to wait for
// the next generation; at makes the committer of one generation (nil:
// OffsetCommit through client).
func NewMemberCommitter(client *kafka.Client, group string, member Generations, owns func(topic string, partition int) bool, wait time.Duration, at func(generation int32, member string) Committer) *MemberCommitter {
	return &MemberCommitter{client: client, group: group, member: member, owns: owns, wait: wait, at: at,
		batch: &offsetBatcher{client: client, group: group}}
}

// NewEpochCommitter commits through a consumer-protocol member at epoch.
func NewEpochCommitter(member *group.ConsumerMember, epoch int32) EpochCommitter {
	return EpochCommitter{member: member, epoch: epoch}
}

func (c *MemberCommitter) Commit(ctx context.Context, topic string, partition int, offset int64, metadata string) error {
	for {
		changed := c.member.Changed()
		gen, id := c.member.Current()
		var err error
		if c.at != nil {
			err = c.at(gen, id).Commit(ctx, topic, partition, offset, metadata)
		} else {
			err = c.batch.commit(ctx, gen, id, topic, partition, offset, metadata)
		}
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

// EpochCommitter commits through a next-generation member (OffsetCommit
// v9) with one member epoch.
type EpochCommitter struct {
	member *group.ConsumerMember
	epoch  int32
}

func (c EpochCommitter) Commit(ctx context.Context, topic string, partition int, offset int64, metadata string) error {
	if metadata == "" {
		metadata = commitTimeMeta(time.Now()) // committime.go
	}
	err := c.member.Commit(ctx, c.epoch, topic, partition, offset, metadata)
	if err == nil {
		return nil
	}
	if isFenced(err) || errors.Is(err, group.ErrStaleMemberEpoch) || errors.Is(err, group.ErrFencedMemberEpoch) {
		return fmt.Errorf("%w: committing %s/%d: %w", errFenced, topic, partition, err)
	}
	return fmt.Errorf("committing %s/%d at %d: %w", topic, partition, offset, err)
}

// NoCommit is the committer of a replay: it never touches the group.
type NoCommit struct{}

func (NoCommit) Commit(context.Context, string, int, int64, string) error { return nil }
