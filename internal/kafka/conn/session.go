package conn

import (
	"context"
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"
)

// GroupDialer returns the dialer for kafka-go's group client. kafka-go
// authenticates each connection once, with SaslAuthenticate v0, so it never
// learns the session lifetime a broker sets (connections.max.reauth.ms; on
// Amazon MSK with IAM the credentials' expiry) and the broker closes the
// coordinator connection when the session ends (KIP-368): the member's
// heartbeat fails and the whole group rebalances. This dialer's connections
// come from SessionDial. Without SASL it is base.
func GroupDialer(base *kafka.Dialer) *kafka.Dialer {
	if base.SASLMechanism == nil {
		return base
	}
	return &kafka.Dialer{
		ClientID: base.ClientID,
		Timeout:  base.Timeout,
		Deadline: base.Deadline,
		// TLS and SASL happen in DialFunc, under the session layer.
		DialFunc: SessionDial(base),
	}
}

// SessionDial returns a dial function, for kafka-go's Dialer (DialFunc) or
// Transport (Dial), whose connections are already TLS-wrapped and
// authenticated with base's settings and renew their SASL session in place
// (KIP-368): between two requests when one is due, and on a timer while the
// connection sits idle, since a broker closes a connection whose session
// ended at its next request, a renewal included. The Transport's own SASL
// authenticates once per connection, so its pooled connections (offset
// commits, metadata, producers) would otherwise fail with EOF at their
// first request after the session ended. The caller must not set TLS or
// SASL on the kafka-go side as well.
func SessionDial(base *kafka.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, _, addr string) (net.Conn, error) {
		bc, err := Dial(ctx, base, addr)
		if err != nil {
			return nil, err
		}
		c := &sessionConn{bc: bc}
		c.wmu.Lock()
		c.armRenewal()
		c.wmu.Unlock()
		return c, nil
	}
}

// sessionConn is an authenticated broker connection that kafka-go drives.
// It counts the request and response frames passing through, and when the
// session is near its end and no request is waiting for its response, it
// runs the SASL exchange again before the next request goes out.
type sessionConn struct {
	bc *Conn

	wmu      sync.Mutex // one Write, and a renewal, at a time
	written  frameCounter
	rmu      sync.Mutex
	read     frameCounter
	inflight atomic.Int64 // requests started whose response has not ended

	dmu                         sync.Mutex
	readDeadline, writeDeadline time.Time // kafka-go's, restored after a renewal

	tmu    sync.Mutex
	timer  *time.Timer // renews an idle connection's session
	closed bool
}

func (c *sessionConn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.written.atBoundary() && c.inflight.Load() == 0 {
		if err := c.renewIfDue(); err != nil {
			return 0, err
		}
	}
	started, _ := c.written.feed(p)
	c.inflight.Add(int64(started))
	return c.bc.pc.Write(p)
}

func (c *sessionConn) Read(p []byte) (int, error) {
	n, err := c.bc.pc.Read(p)
	c.rmu.Lock()
	_, ended := c.read.feed(p[:n])
	c.rmu.Unlock()
	c.inflight.Add(-int64(ended))
	return n, err
}

// renewIfDue re-authenticates when the session is due; nothing else is on
// the wire then, so the exchange reads only its own responses. The caller
// holds wmu.
func (c *sessionConn) renewIfDue() error {
	if c.bc.mech == nil || c.bc.reauthAt.IsZero() || time.Now().Before(c.bc.reauthAt) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), RequestTimeout)
	defer cancel()
	err := c.bc.reauthenticateIfDue(ctx)
	c.dmu.Lock()
	c.bc.pc.SetReadDeadline(c.readDeadline)
	c.bc.pc.SetWriteDeadline(c.writeDeadline)
	c.dmu.Unlock()
	if err == nil {
		c.armRenewal()
	}
	return err
}

// armRenewal sets the timer that renews the session if no request comes
// before it is due. The caller holds wmu.
func (c *sessionConn) armRenewal() {
	if c.bc.mech == nil || c.bc.reauthAt.IsZero() {
		return
	}
	c.tmu.Lock()
	defer c.tmu.Unlock()
	if c.closed {
		return
	}
	wait := time.Until(c.bc.reauthAt)
	if c.timer == nil {
		c.timer = time.AfterFunc(wait, c.renewIdle)
		return
	}
	c.timer.Reset(wait)
}

// busyRecheck is how soon renewIdle looks again at a connection that was
// busy when its session fell due.
const busyRecheck = 100 * time.Millisecond

// renewIdle renews the session of a connection nobody is using. A busy one
// renews before its next request instead. A failed renewal leaves the
// exchange half done, so the connection is closed: kafka-go's next request
// on it fails and it dials again.
func (c *sessionConn) renewIdle() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if !c.written.atBoundary() || c.inflight.Load() != 0 {
		// An answer is on its way; look again shortly, in case no request
		// follows it.
		c.tmu.Lock()
		if !c.closed {
			c.timer.Reset(busyRecheck)
		}
		c.tmu.Unlock()
		return
	}
	if err := c.renewIfDue(); err != nil {
		c.Close()
	}
}

func (c *sessionConn) Close() error {
	c.tmu.Lock()
	c.closed = true
	if c.timer != nil {
		c.timer.Stop()
	}
	c.tmu.Unlock()
	return c.bc.pc.Close()
}

func (c *sessionConn) LocalAddr() net.Addr  { return c.bc.pc.LocalAddr() }
func (c *sessionConn) RemoteAddr() net.Addr { return c.bc.pc.RemoteAddr() }

func (c *sessionConn) SetDeadline(t time.Time) error {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	c.readDeadline, c.writeDeadline = t, t
	return c.bc.pc.SetDeadline(t)
}

func (c *sessionConn) SetReadDeadline(t time.Time) error {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	c.readDeadline = t
	return c.bc.pc.SetReadDeadline(t)
}

func (c *sessionConn) SetWriteDeadline(t time.Time) error {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	c.writeDeadline = t
	return c.bc.pc.SetWriteDeadline(t)
}

// frameCounter follows a stream of Kafka frames (an int32 size, then that
// many bytes) fed to it in pieces of any length.
type frameCounter struct {
	head   [4]byte
	nhead  int // bytes of the current frame's size read; 4: in the body
	remain int // body bytes still to come
}

func (f *frameCounter) atBoundary() bool { return f.nhead == 0 }

// feed takes the next bytes of the stream and says how many frames began
// and how many ended in them.
func (f *frameCounter) feed(p []byte) (started, ended int) {
	for len(p) > 0 {
		if f.nhead < 4 {
			if f.nhead == 0 {
				started++
			}
			n := copy(f.head[f.nhead:], p)
			f.nhead += n
			p = p[n:]
			if f.nhead == 4 {
				f.remain = int(int32(binary.BigEndian.Uint32(f.head[:])))
				if f.remain <= 0 {
					f.nhead, f.remain = 0, 0
					ended++
				}
			}
			continue
		}
		n := min(len(p), f.remain)
		f.remain -= n
		p = p[n:]
		if f.remain == 0 {
			f.nhead = 0
			ended++
		}
	}
	return started, ended
}
