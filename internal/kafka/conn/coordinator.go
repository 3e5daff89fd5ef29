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
	"github.com/twmb/franz-go/pkg/kmsg"
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

// Call sends one request over a connection the caller holds.
type Call func(ctx context.Context, req protocol.Message) (protocol.Message, error)

// Find asks, through call, which broker coordinates key.
func Find(ctx context.Context, call Call, kind Kind, key string) (Node, error) {
	msg, err := call(ctx, &findcoordinator.Request{Key: key, KeyType: int8(kind)})
	if err != nil {
		return Node{}, fmt.Errorf("finding the coordinator of %s %q: %w", kind, key, err)
	}
	res := msg.(*findcoordinator.Response)
	if res.ErrorCode != 0 {
		return Node{}, fmt.Errorf("finding the coordinator of %s %q: %w", kind, key, kafka.Error(res.ErrorCode))
	}
	return Node{ID: res.NodeID, Addr: net.JoinHostPort(res.Host, strconv.Itoa(int(res.Port)))}, nil
}

// Moved says the broker no longer coordinates (or not yet): the
// connection is dropped and the coordinator found again.
func Moved(err error) bool {
	return errors.Is(err, kafka.NotCoordinatorForGroup) || errors.Is(err, kafka.GroupCoordinatorNotAvailable) || errors.Is(err, kafka.GroupLoadInProgress)
}

// Coordinator keeps the connection to the broker that coordinates one
// key, for the group member and the producer alike. Its connection is
// found with FindCoordinator over Ask and opened with Dial, both the
// client's, so each client keeps its seeds, TLS and SASL. A request that
// fails drops the connection (the stream is out of step) and the next one
// finds the coordinator again; Reset forgets it after an answer that says
// it moved. Requests on one connection take turns (Conn's lock).
type Coordinator struct {
	Kind Kind
	Key  string
	Ask  Call
	Dial func(ctx context.Context, addr string) (*Conn, error)

	mu   sync.Mutex
	conn *Conn
	node Node
}

// Get returns the open connection and its broker, or finds the
// coordinator and dials it.
func (c *Coordinator) Get(ctx context.Context) (*Conn, Node, error) {
	c.mu.Lock()
	if c.conn != nil {
		defer c.mu.Unlock()
		return c.conn, c.node, nil
	}
	c.mu.Unlock()
	n, err := Find(ctx, c.Ask, c.Kind, c.Key)
	if err != nil {
		return nil, Node{}, err
	}
	conn, err := c.Dial(ctx, n.Addr)
	if err != nil {
		return nil, Node{}, fmt.Errorf("dialling the coordinator of %s at %s: %w", c, n.Addr, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil { // another request found it first
		conn.Close()
		return c.conn, c.node, nil
	}
	c.conn, c.node = conn, n
	return conn, n, nil
}

// Do runs one request on the coordinator's connection; an error drops it.
func (c *Coordinator) Do(ctx context.Context, request func(*Conn) error) error {
	conn, _, err := c.Get(ctx)
	if err != nil {
		return err
	}
	if err := request(conn); err != nil {
		c.Drop(conn)
		return err
	}
	return nil
}

// Request is Conn.Request on the coordinator's connection.
func (c *Coordinator) Request(ctx context.Context, req protocol.Message) (msg protocol.Message, err error) {
	err = c.Do(ctx, func(conn *Conn) error {
		msg, err = conn.Request(ctx, req)
		return err
	})
	return msg, err
}

// RequestRaw is Conn.RequestRaw on the coordinator's connection.
func (c *Coordinator) RequestRaw(ctx context.Context, version int16, req protocol.Message) (body []byte, err error) {
	err = c.Do(ctx, func(conn *Conn) error {
		body, err = conn.RequestRaw(ctx, version, req)
		return err
	})
	return body, err
}

// Exchange is Conn.Exchange on the coordinator's connection.
func (c *Coordinator) Exchange(ctx context.Context, key, version int16, flexible bool, body []byte) (answer []byte, err error) {
	err = c.Do(ctx, func(conn *Conn) error {
		answer, err = conn.Exchange(ctx, key, version, flexible, body)
		return err
	})
	return answer, err
}

// Kmsg is Conn.Kmsg on the coordinator's connection.
func (c *Coordinator) Kmsg(ctx context.Context, req kmsg.Request) ([]byte, error) {
	return c.Exchange(ctx, req.Key(), req.GetVersion(), req.IsFlexible(), req.AppendTo(nil))
}

// Drop closes conn after a failed round trip (the stream is out of step);
// the next Get finds the coordinator again.
func (c *Coordinator) Drop(conn *Conn) {
	c.mu.Lock()
	if c.conn == conn {
		c.conn = nil
	}
	c.mu.Unlock()
	conn.Close()
}

// Reset forgets the coordinator (it moved, or the client stops).
func (c *Coordinator) Reset() {
	c.mu.Lock()
	conn := c.conn
	c.conn = nil
	c.mu.Unlock()
	if conn != nil {
		conn.Close()
	}
}

// String names what is coordinated: group "g", transactional id "t".
func (c *Coordinator) String() string { return fmt.Sprintf("%s %q", c.Kind, c.Key) }
