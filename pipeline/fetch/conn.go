package fetch

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"

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

// Exchange sends a request kafka-go's protocol package does not know
// (ConsumerGroupHeartbeat, OffsetCommit v9): body is the request's fields
// at version, encoded by the caller. A flexible request gets header v2
// (client id, then an empty tagged-field section); its answer's header
// tagged fields are skipped, so the body returned starts at the answer's
// first field.
func (c *Conn) Exchange(ctx context.Context, key, version int16, flexible bool, body []byte) ([]byte, error) {
	c.bc.mu.Lock()
	defer c.bc.mu.Unlock()
	if err := c.bc.reauthenticateIfDue(ctx); err != nil {
		return nil, err
	}
	var answer []byte
	err := c.bc.within(ctx, func() error {
		c.bc.nextID++
		id := c.bc.nextID
		head := binary.BigEndian.AppendUint16(nil, uint16(key))
		head = binary.BigEndian.AppendUint16(head, uint16(version))
		head = binary.BigEndian.AppendUint32(head, uint32(id))
		head = binary.BigEndian.AppendUint16(head, uint16(len(c.bc.clientID)))
		head = append(head, c.bc.clientID...)
		if flexible {
			head = append(head, 0) // no tagged fields
		}
		msg := binary.BigEndian.AppendUint32(nil, uint32(len(head)+len(body)))
		msg = append(append(msg, head...), body...)
		if _, err := c.bc.pc.Write(msg); err != nil {
			return err
		}
		var in [8]byte
		if _, err := io.ReadFull(c.bc.pc, in[:]); err != nil {
			return err
		}
		size := int32(binary.BigEndian.Uint32(in[:4]))
		if got := int32(binary.BigEndian.Uint32(in[4:])); size < 4 || got != id {
			return fmt.Errorf("api key %d v%d: an answer of %d bytes with correlation id %d, want %d", key, version, size, got, id)
		}
		answer = make([]byte, size-4)
		_, err := io.ReadFull(c.bc.pc, answer)
		return err
	})
	if err != nil {
		return nil, err
	}
	if flexible {
		return skipTaggedFields(answer)
	}
	return answer, nil
}

// skipTaggedFields drops a flexible header's tagged-field section: a
// count, then per field a tag, a size and the data, all unsigned varints
// but the data.
func skipTaggedFields(b []byte) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, fmt.Errorf("an answer header with no tagged-field section")
	}
	b = b[k:]
	for range n {
		_, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, fmt.Errorf("an answer header with a broken tagged field")
		}
		size, k2 := binary.Uvarint(b[k:])
		if k2 <= 0 || uint64(len(b)-k-k2) < size {
			return nil, fmt.Errorf("an answer header with a broken tagged field")
		}
		b = b[k+k2+int(size):]
	}
	return b, nil
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
