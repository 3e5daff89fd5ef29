package worker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
)

// offsetBatcher sends the offset commits of a member's partitions that
// wait at the same time in one OffsetCommit request (the group commit of a
// database's log): the first commit goes at once, and those that arrive
// while a request is out go together in the next. A member of hundreds of
// partitions commits twice per batch for each (the cut mark, then next),
// and one request per commit was as many requests — and log appends to
// __consumer_offsets on three brokers — as partitions cutting.
//
// Each commit still gets its own partition's answer. A commit whose ctx
// ends before its request goes is taken back, so a partition's commits
// reach the coordinator in the order they were made: one taken by a
// request is answered (or its outcome unknown, as any request cut short)
// before the partition's next can be sent.
type offsetBatcher struct {
	client *kafka.Client
	group  string
	// sendTo sends one request's commits and answers each
	// (GroupCommitter's errors); nil: OffsetCommit through client, a
	// classic member's.
	sendTo func(ctx context.Context, take []*offsetCommit) []error

	mu    sync.Mutex
	queue []*offsetCommit
	busy  bool // a goroutine sends the queue
}

// offsetCommit is one partition's commit waiting for its request.
type offsetCommit struct {
	generation int32
	member     string
	topic      string
	partition  int
	offset     int64
	metadata   string
	taken      bool
	done       chan error // its answer; buffered
}

// maxCommitsPerRequest bounds one request: a coordinator takes thousands
// of partitions in one, but an answer is awaited by all of them.
const maxCommitsPerRequest = 1000

// commit commits one partition's offset in generation/member and returns
// its answer (GroupCommitter's errors: errFenced for a fenced member).
func (b *offsetBatcher) commit(ctx context.Context, generation int32, member, topic string, partition int, offset int64, metadata string) error {
	if metadata == "" {
		metadata = commitTimeMeta(time.Now()) // committime.go
	}
	c := &offsetCommit{generation: generation, member: member, topic: topic, partition: partition, offset: offset, metadata: metadata,
		done: make(chan error, 1)}
	b.mu.Lock()
	b.queue = append(b.queue, c)
	if !b.busy {
		b.busy = true
		go b.send()
	}
	b.mu.Unlock()
	select {
	case err := <-c.done:
		return err
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !c.taken {
		for i, q := range b.queue {
			if q == c {
				b.queue = append(b.queue[:i], b.queue[i+1:]...)
				break
			}
		}
		return ctx.Err()
	}
	select {
	case err := <-c.done:
		return err
	default:
		return fmt.Errorf("committing %s/%d at %d: %w", topic, partition, offset, ctx.Err())
	}
}

// send sends the queue, request after request, until it is empty.
func (b *offsetBatcher) send() {
	for {
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.busy = false
			b.mu.Unlock()
			return
		}
		take := b.next()
		b.mu.Unlock()
		b.request(take)
	}
}

// next takes the commits of the next request: those of the first one's
// generation and member, one per partition (a partition's later commit
// waits for the next request), at most maxCommitsPerRequest. The caller
// holds mu.
func (b *offsetBatcher) next() []*offsetCommit {
	first := b.queue[0]
	type tp struct {
		topic     string
		partition int
	}
	seen := map[tp]bool{}
	var take []*offsetCommit
	rest := b.queue[:0]
	for _, c := range b.queue {
		k := tp{c.topic, c.partition}
		if len(take) < maxCommitsPerRequest && c.generation == first.generation && c.member == first.member && !seen[k] {
			seen[k] = true
			c.taken = true
			take = append(take, c)
			continue
		}
		rest = append(rest, c)
	}
	clear(b.queue[len(rest):])
	b.queue = rest
	return take
}

// request sends one OffsetCommit and hands each commit its partition's
// answer. It does not end with any caller's ctx: a caller that gives up
// is answered "unknown" (commit), as a request cut short would leave it.
func (b *offsetBatcher) request(take []*offsetCommit) {
	ctx, cancel := context.WithTimeout(context.Background(), commitRequestTimeout)
	defer cancel()
	if b.sendTo != nil {
		for i, err := range b.sendTo(ctx, take) {
			take[i].done <- err
		}
		return
	}
	first := take[0]
	topics := map[string][]kafka.OffsetCommit{}
	for _, c := range take {
		topics[c.topic] = append(topics[c.topic], kafka.OffsetCommit{Partition: c.partition, Offset: c.offset, Metadata: c.metadata})
	}
	resp, err := b.client.OffsetCommit(ctx, &kafka.OffsetCommitRequest{
		GroupID: b.group, GenerationID: int(first.generation), MemberID: first.member, Topics: topics,
	})
	for _, c := range take {
		c.done <- commitAnswer(c, resp, err)
	}
}

// commitRequestTimeout bounds one request's wait for its answer.
const commitRequestTimeout = 30 * time.Second

// commitAnswer is c's partition's answer in resp (GroupCommitter's).
func commitAnswer(c *offsetCommit, resp *kafka.OffsetCommitResponse, err error) error {
	if err != nil {
		return fmt.Errorf("committing %s/%d at %d: %w", c.topic, c.partition, c.offset, err)
	}
	for _, p := range resp.Topics[c.topic] {
		switch {
		case p.Partition != c.partition:
			continue
		case p.Error == nil:
			return nil
		case isFenced(p.Error):
			return fmt.Errorf("%w: committing %s/%d: %w", errFenced, c.topic, c.partition, p.Error)
		}
		return fmt.Errorf("committing %s/%d at %d: %w", c.topic, c.partition, c.offset, p.Error)
	}
	return fmt.Errorf("committing %s/%d at %d: the coordinator's answer does not name the partition", c.topic, c.partition, c.offset)
}
