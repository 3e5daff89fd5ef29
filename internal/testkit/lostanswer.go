package testkit

import (
	"context"
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
)

// LostAnswers dials broker connections that lose the broker's answer to
// the next n requests of one API (Produce by default): the request reaches
// the broker, which acts on it, and the client hears nothing until its
// deadline, as when a network drops a response. A producer that sends the
// records again without idempotence writes them twice; a transaction whose
// EndTxn answer is lost may have committed.
type LostAnswers struct {
	key       uint16
	remaining atomic.Int64
	// Lost counts the answers lost so far.
	Lost atomic.Int64
}

// NewLostAnswers loses the answers to the next n Produce requests.
func NewLostAnswers(n int) *LostAnswers {
	return NewLostAnswersOf(produceKey, n)
}

// NewLostAnswersOf loses the answers to the next n requests of the API
// key (EndTxnKey, ...).
func NewLostAnswersOf(key uint16, n int) *LostAnswers {
	l := &LostAnswers{key: key}
	l.remaining.Store(int64(n))
	return l
}

// Dial opens a plain TCP connection that loses answers (kafka-go's
// Dialer.DialFunc and Transport.Dial take it).
func (l *LostAnswers) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &deafConn{Conn: nc, l: l}, nil
}

// API keys whose answers a test loses.
const (
	produceKey = 0
	// EndTxnKey is EndTxn's: the commit or abort of a transaction.
	EndTxnKey = 26
)

// deafConn follows the request frames written to it; once a request
// whose answer is to be lost went out, it reads and drops
// everything the broker sends, so the client's read ends at its deadline.
type deafConn struct {
	net.Conn
	l *LostAnswers

	mu     sync.Mutex
	head   []byte // the current frame's first bytes, up to size and api key
	remain int    // bytes of the current frame still to pass
	deaf   atomic.Bool
}

func (c *deafConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	for q := p; len(q) > 0; {
		if c.remain > 0 {
			n := min(c.remain, len(q))
			c.remain -= n
			q = q[n:]
			continue
		}
		n := min(6-len(c.head), len(q))
		c.head = append(c.head, q[:n]...)
		q = q[n:]
		if len(c.head) == 6 {
			size := int(binary.BigEndian.Uint32(c.head))
			if binary.BigEndian.Uint16(c.head[4:]) == c.l.key && c.l.remaining.Add(-1) >= 0 {
				c.deaf.Store(true)
				c.l.Lost.Add(1)
			}
			c.remain = size - 2
			c.head = c.head[:0]
		}
	}
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *deafConn) Read(p []byte) (int, error) {
	for {
		n, err := c.Conn.Read(p)
		if !c.deaf.Load() || err != nil {
			return n, err
		}
	}
}
