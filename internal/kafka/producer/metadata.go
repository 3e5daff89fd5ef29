package producer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/metadata"

	"github.com/logstore/logstore/internal/kafka/conn"
)

// broker is what metadata says about one broker.
type broker = conn.Node

// partitionLeader is what metadata says about one partition: its leader,
// or -1 while it has none (an election under way).
type partitionLeader struct {
	Leader int32
}

// topicLayout is one topic's partitions, by partition id.
type topicLayout struct {
	Partitions []partitionLeader
}

// control is the producer's connection for everything but Produce
// (metadata, InitProducerId), to whichever broker answered last, so a long
// produce never holds up a metadata refresh behind it.
type control struct {
	dial      DialFunc
	clientID  string
	seeds     []string
	timeout   time.Duration
	autoTopic bool

	mu      sync.Mutex // one request at a time
	conn    *conn.Conn
	brokers map[int32]broker
}

// call sends req on the control connection, dialling the brokers the last
// metadata named and then the seeds until one answers.
func (c *control) call(ctx context.Context, req protocol.Message) (protocol.Message, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		res, err := c.roundTrip(ctx, c.conn, req)
		if err == nil {
			return res, nil
		}
		c.conn.Close()
		c.conn = nil
		if ctx.Err() != nil {
			return nil, err
		}
	}
	var addrs []string
	for _, b := range c.brokers {
		addrs = append(addrs, b.Addr)
	}
	addrs = append(addrs, c.seeds...)
	type answer struct {
		conn *conn.Conn
		res  protocol.Message
	}
	a, err := conn.FirstAnswer(ctx, addrs, func(ctx context.Context, addr string) (answer, error) {
		bc, err := dialConn(ctx, c.dial, c.clientID, addr, c.timeout)
		if err != nil {
			return answer{}, err
		}
		res, err := c.roundTrip(ctx, bc, req)
		if err != nil {
			bc.Close()
			return answer{}, err
		}
		return answer{bc, res}, nil
	})
	if err != nil {
		return nil, err
	}
	c.conn = a.conn
	return a.res, nil
}

func (c *control) roundTrip(ctx context.Context, bc *conn.Conn, req protocol.Message) (protocol.Message, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	return bc.Request(ctx, req)
}

// metadata asks for topics and returns the brokers and each topic's
// layout; a topic the brokers do not know is an error naming it.
func (c *control) metadata(ctx context.Context, topics []string) (map[int32]broker, map[string]topicLayout, error) {
	msg, err := c.call(ctx, &metadata.Request{TopicNames: topics, AllowAutoTopicCreation: c.autoTopic})
	if err != nil {
		return nil, nil, fmt.Errorf("metadata of %v: %w", topics, err)
	}
	res := msg.(*metadata.Response)
	brokers := conn.Nodes(res)
	c.mu.Lock()
	c.brokers = brokers
	c.mu.Unlock()
	layouts := make(map[string]topicLayout, len(res.Topics))
	var errs []error
	for _, t := range res.Topics {
		if t.ErrorCode != 0 {
			errs = append(errs, fmt.Errorf("topic %q: %w", t.Name, kafka.Error(t.ErrorCode)))
			continue
		}
		n := 0
		for _, p := range t.Partitions {
			n = max(n, int(p.PartitionIndex)+1)
		}
		l := topicLayout{Partitions: make([]partitionLeader, n)}
		for i := range l.Partitions {
			l.Partitions[i].Leader = -1
		}
		for _, p := range t.Partitions {
			l.Partitions[p.PartitionIndex].Leader = p.LeaderID
		}
		layouts[t.Name] = l
	}
	return brokers, layouts, errors.Join(errs...)
}

func (c *control) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}
