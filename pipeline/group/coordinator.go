package group

import (
	"context"
	"errors"
	"fmt"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"

	"github.com/logstore/logstore/internal/kafka/conn"
	"github.com/logstore/logstore/pipeline/fetch"
)

// coordinator is the member's connection to its group's coordinator, found
// with FindCoordinator through the seed brokers and dialled again whenever
// a request fails or the broker says it no longer coordinates the group
// (the keeping is conn.Coordinator's, shared with the producer).
// Requests take turns on it: JoinGroup, SyncGroup, Heartbeat, LeaveGroup.
// Offset commits do not go over it (they are the job's, and must not wait
// behind a JoinGroup the broker holds for a whole rebalance).
type coordinator struct {
	dialer *kafka.Dialer
	seeds  []string
	group  string

	kept conn.Coordinator[*fetch.Conn]
}

// get returns the open connection, finding and dialling the coordinator
// when there is none.
func (c *coordinator) get(ctx context.Context) (*fetch.Conn, error) {
	fc, _, err := c.kept.Get(ctx, c.find, c.dial)
	if err != nil {
		return nil, fmt.Errorf("the coordinator of group %s: %w", c.group, err)
	}
	return fc, nil
}

// nodeID is the coordinator's broker id.
func (c *coordinator) nodeID(ctx context.Context) (int32, error) {
	_, b, err := c.kept.Get(ctx, c.find, c.dial)
	return b.Node, err
}

func (c *coordinator) dial(ctx context.Context, addr string) (*fetch.Conn, error) {
	return fetch.Dial(ctx, c.dialer, addr)
}

// find asks the seed brokers in turn which broker coordinates the group.
// Seeds are dialled by name each time, so a name that now resolves
// elsewhere is followed.
func (c *coordinator) find(ctx context.Context) (conn.Broker, error) {
	if len(c.seeds) == 0 {
		return conn.Broker{}, errors.New("no seed brokers (kafka.brokers)")
	}
	var errs []error
	for _, seed := range c.seeds {
		b, err := c.ask(ctx, seed)
		if err == nil {
			return b, nil
		}
		if ctx.Err() != nil {
			return conn.Broker{}, ctx.Err()
		}
		errs = append(errs, fmt.Errorf("seed %s: %w", seed, err))
	}
	return conn.Broker{}, errors.Join(errs...)
}

func (c *coordinator) ask(ctx context.Context, seed string) (conn.Broker, error) {
	fc, err := fetch.Dial(ctx, c.dialer, seed)
	if err != nil {
		return conn.Broker{}, err
	}
	defer fc.Close()
	return conn.Find(ctx, fc.Request, conn.Group, c.group)
}

// request sends req to the coordinator. A failed request leaves the
// connection unusable, so it is dropped.
func (c *coordinator) request(ctx context.Context, req protocol.Message) (protocol.Message, error) {
	fc, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	msg, err := fc.Request(ctx, req)
	if err != nil {
		c.kept.Drop(fc)
	}
	return msg, err
}

// raw is request at a fixed version, answering the body undecoded.
func (c *coordinator) raw(ctx context.Context, version int16, req protocol.Message) ([]byte, error) {
	fc, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	body, err := fc.RequestRaw(ctx, version, req)
	if err != nil {
		c.kept.Drop(fc)
	}
	return body, err
}

// exchange sends a request the caller encoded (fetch.Conn.Exchange).
func (c *coordinator) exchange(ctx context.Context, key, version int16, flexible bool, body []byte) ([]byte, error) {
	fc, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	answer, err := fc.Exchange(ctx, key, version, flexible, body)
	if err != nil {
		c.kept.Drop(fc)
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
	if conn.Moved(err) {
		c.reset()
	}
	return err
}

func (c *coordinator) reset() { c.kept.Reset() }
