package producer

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/apiversions"
)

// DialFunc opens a connection to a broker, TLS and SASL done (the job
// passes the fetch client's session dial, which also renews SASL sessions,
// KIP-368). nil dials plain TCP.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// brokerConn is one connection to one broker carrying one request at a
// time: the producer keeps one batch per partition in flight, and a
// broker answers a connection's requests in order anyway.
type brokerConn struct {
	mu   sync.Mutex
	addr string
	pc   *protocol.Conn
}

func dialConn(ctx context.Context, dial DialFunc, clientID, addr string, timeout time.Duration) (*brokerConn, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	nc, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dialling broker %s: %w", addr, err)
	}
	c := &brokerConn{addr: addr, pc: protocol.NewConn(nc, clientID)}
	msg, err := c.roundTrip(ctx, &apiversions.Request{})
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("api versions: %w", err)
	}
	res := msg.(*apiversions.Response)
	if res.ErrorCode != 0 {
		nc.Close()
		return nil, fmt.Errorf("api versions from %s: %w", addr, kafka.Error(res.ErrorCode))
	}
	versions := make(map[protocol.ApiKey]int16, len(res.ApiKeys))
	for _, k := range res.ApiKeys {
		key := protocol.ApiKey(k.ApiKey)
		versions[key] = key.SelectVersion(k.MinVersion, k.MaxVersion)
	}
	// Produce v3 is the first to carry v2 record batches, which carry the
	// producer id and sequence; Kafka 4 accepts nothing older anyway.
	if v, ok := versions[protocol.Produce]; !ok || v < 3 {
		nc.Close()
		return nil, fmt.Errorf("broker %s does not speak Produce v3 (Kafka 0.11), which idempotence needs", addr)
	}
	c.pc.SetVersions(versions)
	return c, nil
}

// roundTrip sends req and reads its answer within ctx (or timeout). Any
// error leaves the stream out of step: the caller closes the connection.
func (c *brokerConn) roundTrip(ctx context.Context, req protocol.Message) (protocol.Message, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if deadline, ok := ctx.Deadline(); ok {
		c.pc.SetDeadline(deadline)
	} else {
		c.pc.SetDeadline(time.Time{})
	}
	stop := context.AfterFunc(ctx, func() { c.pc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	res, err := c.pc.RoundTrip(req)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("broker %s: %w", c.addr, ctxErr)
		}
		return nil, fmt.Errorf("broker %s: %w", c.addr, err)
	}
	return res, nil
}

func (c *brokerConn) close() { c.pc.Close() }

// Close is close for conn.Coordinator, which keeps coordinators' connections.
func (c *brokerConn) Close() error { return c.pc.Close() }
