package group

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/findcoordinator"

	"github.com/logstore/logstore/pipeline/fetch"
)

// coordinator is the member's connection to its group's coordinator, found
// with FindCoordinator through the seed brokers and dialled again whenever
// a request fails or the broker says it no longer coordinates the group.
// Requests take turns on it: JoinGroup, SyncGroup, Heartbeat, LeaveGroup.
// Offset commits do not go over it (they are the job's, and must not wait
// behind a JoinGroup the broker holds for a whole rebalance).
type coordinator struct {
	dialer *kafka.Dialer
	seeds  []string
	group  string

	mu   sync.Mutex
	conn *fetch.Conn
	node int32 // the coordinator's broker id, while conn is open
}

// get returns the open connection, finding and dialling the coordinator
// when there is none.
func (c *coordinator) get(ctx context.Context) (*fetch.Conn, error) {
	c.mu.Lock()
	conn := c.conn
	c.mu.Unlock()
	if conn != nil {
		return conn, nil
	}
	addr, node, err := c.find(ctx)
	if err != nil {
		return nil, err
	}
	conn, err = fetch.Dial(ctx, c.dialer, addr)
	if err != nil {
		return nil, fmt.Errorf("dialling the coordinator of group %s at %s: %w", c.group, addr, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil { // another request found it first
		conn.Close()
		return c.conn, nil
	}
	c.conn, c.node = conn, node
	return conn, nil
}

// nodeID is the coordinator's broker id.
func (c *coordinator) nodeID(ctx context.Context) (int32, error) {
	if _, err := c.get(ctx); err != nil {
		return 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.node, nil
}

// find asks the seed brokers in turn which broker coordinates the group.
func (c *coordinator) find(ctx context.Context) (string, int32, error) {
	var errs []error
	for _, seed := range c.seeds {
		addr, node, err := c.ask(ctx, seed)
		if err == nil {
			return addr, node, nil
		}
		if ctx.Err() != nil {
			return "", 0, ctx.Err()
		}
		errs = append(errs, err)
	}
	return "", 0, fmt.Errorf("finding the coordinator of group %s: %w", c.group, errors.Join(errs...))
}

func (c *coordinator) ask(ctx context.Context, seed string) (string, int32, error) {
	conn, err := fetch.Dial(ctx, c.dialer, seed)
	if err != nil {
		return "", 0, fmt.Errorf("seed %s: %w", seed, err)
	}
	defer conn.Close()
	msg, err := conn.Request(ctx, &findcoordinator.Request{Key: c.group})
	if err != nil {
		return "", 0, fmt.Errorf("seed %s: %w", seed, err)
	}
	res := msg.(*findcoordinator.Response)
	if res.ErrorCode != 0 {
		return "", 0, fmt.Errorf("seed %s: %w", seed, kafka.Error(res.ErrorCode))
	}
	return net.JoinHostPort(res.Host, strconv.Itoa(int(res.Port))), res.NodeID, nil
}

// request sends req to the coordinator. A failed request leaves the
// connection unusable, so it is dropped.
func (c *coordinator) request(ctx context.Context, req protocol.Message) (protocol.Message, error) {
	conn, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	msg, err := conn.Request(ctx, req)
	if err != nil {
		c.drop(conn)
	}
	return msg, err
}

// raw is request at a fixed version, answering the body undecoded.
func (c *coordinator) raw(ctx context.Context, version int16, req protocol.Message) ([]byte, error) {
	conn, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	body, err := conn.RequestRaw(ctx, version, req)
	if err != nil {
		c.drop(conn)
	}
	return body, err
}

// exchange sends a request the caller encoded (fetch.Conn.Exchange).
func (c *coordinator) exchange(ctx context.Context, key, version int16, flexible bool, body []byte) ([]byte, error) {
	conn, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	answer, err := conn.Exchange(ctx, key, version, flexible, body)
	if err != nil {
		c.drop(conn)
	}
	return answer, err
}

// answered looks at an answer's error code: a coordinator that moved or is
// loading drops the connection, so the next request finds the new one.
func (c *coordinator) answered(code int16) error {
	if code == 0 {
		return nil
	}
	err := kafka.Error(code)
	if coordinatorMoved(err) {
		c.reset()
	}
	return err
}

func coordinatorMoved(err error) bool {
	return errors.Is(err, kafka.NotCoordinatorForGroup) || errors.Is(err, kafka.GroupCoordinatorNotAvailable) || errors.Is(err, kafka.GroupLoadInProgress)
}

func (c *coordinator) drop(conn *fetch.Conn) {
	c.mu.Lock()
	if c.conn == conn {
		c.conn = nil
	}
	c.mu.Unlock()
	conn.Close()
}

func (c *coordinator) reset() {
	c.mu.Lock()
	conn := c.conn
	c.conn = nil
	c.mu.Unlock()
	if conn != nil {
		conn.Close()
	}
}
