package fetch

import (
	"context"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
)

// Conn is one authenticated connection to one broker for requests outside
// the fetch path: the group member's JoinGroup, SyncGroup, Heartbeat and
// LeaveGroup go over it. It is dialled, TLS-wrapped and SASL-authenticated
// as the readers' connections are, renews its session between requests
// (KIP-368), and is not counted in Stats' dials (they count the readers').
// One request at a time.
type Conn struct{ bc *brokerConn }

// Dial opens a Conn to addr with d's settings (TLS, SASL, client id,
// timeouts) and negotiates API versions.
func Dial(ctx context.Context, d *kafka.Dialer, addr string) (*Conn, error) {
	bc, err := dialBroker(ctx, d, addr)
	if err != nil {
		return nil, err
	}
	return &Conn{bc: bc}, nil
}

// Request sends req at the highest version both sides speak and decodes
// the answer. An error leaves the connection unusable: close it.
func (c *Conn) Request(ctx context.Context, req protocol.Message) (protocol.Message, error) {
	msg, _, err := c.bc.request(ctx, req)
	return msg, err
}

// RequestRaw sends req at version and returns the answer's body after the
// correlation id, undecoded: for answers kafka-go's protocol package lays
// out in another order than the broker (Heartbeat and LeaveGroup put the
// throttle time before the error code from v1 on).
func (c *Conn) RequestRaw(ctx context.Context, version int16, req protocol.Message) ([]byte, error) {
	c.bc.mu.Lock()
	defer c.bc.mu.Unlock()
	if err := c.bc.reauthenticateIfDue(ctx); err != nil {
		return nil, err
	}
	return c.bc.exchangeAt(ctx, version, req, func(n int) []byte { return make([]byte, n) })
}

// Version is the version Request sends key at; -1 when the broker does not
// serve key.
func (c *Conn) Version(key protocol.ApiKey) int16 {
	v, ok := c.bc.versions[key]
	if !ok {
		return -1
	}
	return v
}

// Addr is the broker's host:port.
func (c *Conn) Addr() string { return c.bc.addr }

// Close closes the connection.
func (c *Conn) Close() error { return c.bc.pc.Close() }
