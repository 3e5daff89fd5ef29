package conn

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
)

// Kind is what a coordinator coordinates: FindCoordinator's key type.
type Kind int8

const (
	Group       Kind = 0
	Transaction Kind = 1 // KIP-98
)

func (k Kind) String() string {
	if k == Transaction {
		return "transactional id"
	}
	return "group"
}

// Broker is a coordinator's broker: its id and address.
type Broker struct {
	Node int32
	Addr string
}

// Call sends one request over a connection the caller holds.
type Call func(ctx context.Context, req protocol.Message) (protocol.Message, error)

// Find asks, through call, which broker coordinates key.
func Find(ctx context.Context, call Call, kind Kind, key string) (Broker, error) {
	msg, err := call(ctx, &findcoordinator.Request{Key: key, KeyType: int8(kind)})
	if err != nil {
		return Broker{}, fmt.Errorf("finding the coordinator of %s %q: %w", kind, key, err)
	}
	res := msg.(*findcoordinator.Response)
	if res.ErrorCode != 0 {
		return Broker{}, fmt.Errorf("finding the coordinator of %s %q: %w", kind, key, kafka.Error(res.ErrorCode))
	}
	return Broker{Node: res.NodeID, Addr: net.JoinHostPort(res.Host, strconv.Itoa(int(res.Port)))}, nil
}

// Moved says the broker no longer coordinates (or not yet): the
// connection is dropped and the coordinator found again.
func Moved(err error) bool {
	return errors.Is(err, kafka.NotCoordinatorForGroup) || errors.Is(err, kafka.GroupCoordinatorNotAvailable) || errors.Is(err, kafka.GroupLoadInProgress)
}

// Closer is a connection a Coordinator keeps.
type Closer interface {
	comparable
	Close() error
}

// Coordinator keeps the connection to the broker that coordinates one
// key. Its zero value has none; Get finds and dials one with the client's
// own find and dial, so each client keeps its connection type, TLS and
// SASL. Requests on one connection take turns (the client's to ensure).
type Coordinator[C Closer] struct {
	mu     sync.Mutex
	conn   C
	broker Broker
	open   bool
}

// Get returns the open connection, or finds the coordinator and dials it.
func (c *Coordinator[C]) Get(ctx context.Context, find func(context.Context) (Broker, error), dial func(context.Context, string) (C, error)) (C, Broker, error) {
	c.mu.Lock()
	if c.open {
		defer c.mu.Unlock()
		return c.conn, c.broker, nil
	}
	c.mu.Unlock()
	var zero C
	b, err := find(ctx)
	if err != nil {
		return zero, Broker{}, err
	}
	conn, err := dial(ctx, b.Addr)
	if err != nil {
		return zero, Broker{}, fmt.Errorf("dialling the coordinator at %s: %w", b.Addr, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open { // another request found it first
		conn.Close()
		return c.conn, c.broker, nil
	}
	c.conn, c.broker, c.open = conn, b, true
	return conn, b, nil
}

// Drop closes conn after a failed round trip (the stream is out of step);
// the next Get finds the coordinator again.
func (c *Coordinator[C]) Drop(conn C) {
	c.mu.Lock()
	if c.open && c.conn == conn {
		var zero C
		c.conn, c.open = zero, false
	}
	c.mu.Unlock()
	conn.Close()
}

// Reset forgets the coordinator (it moved, or the client stops).
func (c *Coordinator[C]) Reset() {
	c.mu.Lock()
	conn, open := c.conn, c.open
	var zero C
	c.conn, c.open = zero, false
	c.mu.Unlock()
	if open {
		conn.Close()
	}
}
