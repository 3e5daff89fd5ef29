package producer

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"

	"github.com/logstore/logstore/internal/kafka/conn"
)

// DialFunc opens a connection to a broker, TLS and SASL done (the job
// passes conn.SessionDial, which also renews SASL sessions, KIP-368). nil
// dials plain TCP.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// dialConn opens a connection to addr (conn.Dial, the one every client
// here uses) and refuses a broker that cannot take idempotent batches. The
// producer keeps one batch per partition in flight on it, and a broker
// answers a connection's requests in order anyway.
func dialConn(ctx context.Context, dial DialFunc, clientID, addr string, timeout time.Duration) (*conn.Conn, error) {
	c, err := conn.Dial(ctx, &kafka.Dialer{ClientID: clientID, Timeout: timeout, DialFunc: dial}, addr)
	if err != nil {
		return nil, fmt.Errorf("dialling broker %s: %w", addr, err)
	}
	// Produce v3 is the first to carry v2 record batches, which carry the
	// producer id and sequence; Kafka 4 accepts nothing older anyway.
	if c.Version(protocol.Produce) < 3 {
		c.Close()
		return nil, fmt.Errorf("broker %s does not speak Produce v3 (Kafka 0.11), which idempotence needs", addr)
	}
	return c, nil
}
