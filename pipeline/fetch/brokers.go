package fetch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/listoffsets"
	"github.com/segmentio/kafka-go/protocol/metadata"

	"github.com/logstore/logstore/internal/kafka/conn"
)

// ListOffsets timestamps with a special meaning (KIP-79).
const (
	listEarliest int64 = -2
	listLatest   int64 = -1
)

// brokerPool is a Client's view of the cluster: broker addresses and racks
// from metadata, and one control connection per broker for metadata,
// ListOffsets and OffsetForLeaderEpoch, shared by every partition reader of
// the Client and kept across group generations. A connection carries one
// request at a time (conn.Conn); fetches, which wait up to MaxWait at the
// broker, go over each fetch session's own connection instead, so a long
// poll never holds up a control request.
type brokerPool struct {
	dialer *kafka.Dialer
	seeds  []string
	log    *slog.Logger
	stats  *Stats // counts dials; nil counts nothing

	mu     sync.Mutex
	nodes  map[int32]conn.Node
	conns  map[int32]*conn.Conn
	closed bool
	// dials and lookups in progress, which other readers wait for instead
	// of making their own: after a rebalance hundreds of readers ask at
	// once.
	dialing map[int32]*flight[*conn.Conn]
	looking map[string]*flight[metadataAnswer]
}

// flight is one dial or request that several readers wait for.
type flight[T any] struct {
	done chan struct{}
	val  T
	err  error
}

type metadataAnswer struct {
	res     *metadata.Response
	version int16
}

// partitionState is what metadata says about one partition. LeaderEpoch is -1
// when the broker answers a Metadata version older than v7; brokers then skip
// the epoch check.
type partitionState struct {
	Leader      int32
	LeaderEpoch int32
	Replicas    []int32
}

func newBrokerPool(dialer *kafka.Dialer, seeds []string, log *slog.Logger, stats *Stats) *brokerPool {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &brokerPool{
		dialer:  dialer,
		seeds:   seeds,
		log:     log,
		stats:   stats,
		nodes:   make(map[int32]conn.Node),
		conns:   make(map[int32]*conn.Conn),
		dialing: make(map[int32]*flight[*conn.Conn]),
		looking: make(map[string]*flight[metadataAnswer]),
	}
}

var errPoolClosed = errors.New("partition reader closed")

// node returns what the last metadata said about broker id.
func (p *brokerPool) node(id int32) (conn.Node, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n, ok := p.nodes[id]
	return n, ok
}

// conn returns the open control connection to broker id, dialling it if
// needed; readers asking while it is dialled wait for that dial.
func (p *brokerPool) conn(ctx context.Context, id int32) (*conn.Conn, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errPoolClosed
	}
	if c := p.conns[id]; c != nil {
		p.mu.Unlock()
		return c, nil
	}
	if f := p.dialing[id]; f != nil {
		p.mu.Unlock()
		select {
		case <-f.done:
			return f.val, f.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f := &flight[*conn.Conn]{done: make(chan struct{})}
	p.dialing[id] = f
	p.mu.Unlock()

	c, err := p.dialNode(ctx, id)
	p.mu.Lock()
	delete(p.dialing, id)
	if err == nil && p.closed {
		c.Close()
		c, err = nil, errPoolClosed
	}
	if err == nil {
		p.conns[id] = c
	}
	p.mu.Unlock()
	f.val, f.err = c, err
	close(f.done)
	return c, err
}

// dialNode opens a new connection to broker id, at the address the last
// metadata gave, and counts it.
func (p *brokerPool) dialNode(ctx context.Context, id int32) (*conn.Conn, error) {
	n, ok := p.node(id)
	if !ok {
		return nil, fmt.Errorf("broker %d is not in the cluster metadata", id)
	}
	p.stats.dialled(id, n.Rack)
	c, err := conn.Dial(ctx, p.dialer, n.Addr)
	if err != nil {
		return nil, fmt.Errorf("broker %d (%s): %w", id, n.Addr, err)
	}
	return c, nil
}

// call sends req to broker id over its control connection. A failure on a
// connection the pool had kept, that can only mean the connection outlived
// its broker process (conn.Stale), or that its SASL session could not be
// renewed, dials once more and sends again before it counts as the broker's.
func (p *brokerPool) call(ctx context.Context, id int32, req protocol.Message) (protocol.Message, int16, error) {
	for attempt := 0; ; attempt++ {
		c, err := p.conn(ctx, id)
		if err != nil {
			return nil, 0, err
		}
		msg, reused, err := c.RequestReused(ctx, req)
		if err == nil {
			return msg, c.Version(req.ApiKey()), nil
		}
		p.drop(id, c)
		if attempt > 0 || ctx.Err() != nil || !conn.Stale(reused, err) {
			return nil, 0, err
		}
		p.log.Info("pooled connection is stale (the broker restarted?); dialling again", "broker", id, "err", err)
	}
}

// drop closes the connection to broker id after an I/O error: its stream is
// out of step and cannot carry another request.
func (p *brokerPool) drop(id int32, c *conn.Conn) {
	p.mu.Lock()
	if p.conns[id] == c {
		delete(p.conns, id)
	}
	p.mu.Unlock()
	c.Close()
}

func (p *brokerPool) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

func (p *brokerPool) close() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.closed = true
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// partition asks for fresh metadata of one topic and returns the partition's
// leader. It tries the brokers it knows, then the seed brokers, so it finds
// the cluster again after the broker it last talked to has gone.
func (p *brokerPool) partition(ctx context.Context, topic string, partition int) (partitionState, error) {
	res, version, err := p.sharedMetadata(ctx, topic)
	if err != nil {
		return partitionState{}, err
	}
	for _, t := range res.Topics {
		if t.Name != topic {
			continue
		}
		if t.ErrorCode != 0 {
			return partitionState{}, fmt.Errorf("metadata for topic %q: %w", topic, kafka.Error(t.ErrorCode))
		}
		for _, part := range t.Partitions {
			if int(part.PartitionIndex) != partition {
				continue
			}
			if part.ErrorCode != 0 && part.LeaderID < 0 {
				return partitionState{}, fmt.Errorf("metadata for %s/%d: %w", topic, partition, kafka.Error(part.ErrorCode))
			}
			if part.LeaderID < 0 {
				return partitionState{}, fmt.Errorf("metadata for %s/%d: %w", topic, partition, kafka.LeaderNotAvailable)
			}
			epoch := part.LeaderEpoch
			if version < 7 {
				epoch = -1
			}
			return partitionState{Leader: part.LeaderID, LeaderEpoch: epoch, Replicas: part.ReplicaNodes}, nil
		}
		return partitionState{}, fmt.Errorf("metadata for topic %q has no partition %d: %w", topic, partition, kafka.UnknownTopicOrPartition)
	}
	return partitionState{}, fmt.Errorf("metadata has no topic %q: %w", topic, kafka.UnknownTopicOrPartition)
}

// sharedMetadata is metadata, with readers that ask for the same topic
// while a request is out waiting for its answer: it is as fresh as one of
// their own.
func (p *brokerPool) sharedMetadata(ctx context.Context, topic string) (*metadata.Response, int16, error) {
	p.mu.Lock()
	if f := p.looking[topic]; f != nil {
		p.mu.Unlock()
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
		if f.err == nil || !isContextErr(f.err) {
			return f.val.res, f.val.version, f.err
		}
		// The reader that asked was stopped; ask anew.
		return p.metadata(ctx, topic)
	}
	f := &flight[metadataAnswer]{done: make(chan struct{})}
	p.looking[topic] = f
	p.mu.Unlock()
	f.val.res, f.val.version, f.err = p.metadata(ctx, topic)
	p.mu.Lock()
	delete(p.looking, topic)
	p.mu.Unlock()
	close(f.done)
	return f.val.res, f.val.version, f.err
}

func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// metadata returns the answer and the Metadata version it came in.
func (p *brokerPool) metadata(ctx context.Context, topic string) (*metadata.Response, int16, error) {
	if p.isClosed() {
		return nil, 0, errPoolClosed
	}
	req := &metadata.Request{TopicNames: []string{topic}}
	var errs []error

	p.mu.Lock()
	ids := make([]int32, 0, len(p.nodes))
	for id := range p.nodes {
		ids = append(ids, id)
	}
	p.mu.Unlock()
	for _, id := range ids {
		msg, version, err := p.call(ctx, id, req)
		if err == nil {
			res := msg.(*metadata.Response)
			p.learn(res)
			return res, version, nil
		}
		if ctx.Err() != nil || errors.Is(err, errPoolClosed) {
			return nil, 0, err
		}
		errs = append(errs, err)
	}

	seeds := conn.Seeds{Dialer: p.dialer, Addrs: p.seeds, Dialled: p.stats.dialledSeed}
	msg, version, err := seeds.Request(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		return nil, 0, fmt.Errorf("metadata: %w", errors.Join(append(errs, fmt.Errorf("seeds: %w", err))...))
	}
	res := msg.(*metadata.Response)
	p.learn(res)
	return res, version, nil
}

// learn replaces the broker list with the one in res and closes connections
// to brokers that left or changed address.
func (p *brokerPool) learn(res *metadata.Response) {
	nodes := conn.Nodes(res)
	var stale []*conn.Conn
	p.mu.Lock()
	for id, c := range p.conns {
		if n, ok := nodes[id]; !ok || n.Addr != c.Addr() {
			stale = append(stale, c)
			delete(p.conns, id)
		}
	}
	p.nodes = nodes
	p.mu.Unlock()
	for _, c := range stale {
		c.Close()
	}
}

// listOffset sends ListOffsets for one partition to its leader. ts is a
// Unix-millisecond timestamp or listEarliest/listLatest; under read_committed
// listLatest answers the last stable offset.
func (p *brokerPool) listOffset(ctx context.Context, st partitionState, topic string, partition int, ts int64, isolation int8) (int64, error) {
	msg, _, err := p.call(ctx, st.Leader, &listoffsets.Request{
		ReplicaID:      -1,
		IsolationLevel: isolation,
		Topics: []listoffsets.RequestTopic{{
			Topic: topic,
			Partitions: []listoffsets.RequestPartition{{
				Partition:          int32(partition),
				CurrentLeaderEpoch: st.LeaderEpoch,
				Timestamp:          ts,
			}},
		}},
	})
	if err != nil {
		return 0, err
	}
	for _, t := range msg.(*listoffsets.Response).Topics {
		for _, part := range t.Partitions {
			if t.Topic != topic || int(part.Partition) != partition {
				continue
			}
			if part.ErrorCode != 0 {
				return 0, fmt.Errorf("list offsets of %s/%d at broker %d: %w", topic, partition, st.Leader, kafka.Error(part.ErrorCode))
			}
			return part.Offset, nil
		}
	}
	return 0, fmt.Errorf("list offsets of %s/%d: broker %d did not answer for the partition", topic, partition, st.Leader)
}
