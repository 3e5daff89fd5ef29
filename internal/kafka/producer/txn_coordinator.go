package producer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/findcoordinator"
)

// FindCoordinator key types (KIP-98 added the second).
const (
	coordinatorGroup       int8 = 0
	coordinatorTransaction int8 = 1
)

// coordinator is the connection to the broker that coordinates one key: the
// transactional id (InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
// EndTxn) or a group (TxnOffsetCommit, OffsetFetch). It is found again
// whenever a request fails or the broker says it moved.
type coordinator struct {
	kind int8
	key  string

	mu   sync.Mutex
	conn *brokerConn
}

// call sends req to the coordinator, finding and dialling it first when
// needed. A failed round trip drops the connection (the stream is out of
// step), so the next call finds the coordinator again.
func (c *coordinator) call(ctx context.Context, p *Producer, req protocol.Message) (protocol.Message, error) {
	conn, err := c.get(ctx, p)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	defer cancel()
	res, err := conn.roundTrip(rctx, req)
	if err != nil {
		c.drop(conn)
		return nil, err
	}
	return res, nil
}

func (c *coordinator) get(ctx context.Context, p *Producer) (*brokerConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		return c.conn, nil
	}
	msg, err := p.ctl.call(ctx, &findcoordinator.Request{Key: c.key, KeyType: c.kind})
	if err != nil {
		return nil, fmt.Errorf("finding the coordinator of %s: %w", c, err)
	}
	res := msg.(*findcoordinator.Response)
	if res.ErrorCode != 0 {
		return nil, fmt.Errorf("finding the coordinator of %s: %w", c, kafka.Error(res.ErrorCode))
	}
	addr := net.JoinHostPort(res.Host, strconv.Itoa(int(res.Port)))
	conn, err := dialConn(ctx, p.cfg.Dial, p.cfg.ClientID, addr, p.cfg.RequestTimeout)
	if err != nil {
		return nil, fmt.Errorf("the coordinator of %s: %w", c, err)
	}
	c.conn = conn
	return conn, nil
}

func (c *coordinator) drop(conn *brokerConn) {
	c.mu.Lock()
	if c.conn == conn {
		c.conn = nil
	}
	c.mu.Unlock()
	conn.close()
}

// moved forgets the coordinator after NOT_COORDINATOR or
// COORDINATOR_NOT_AVAILABLE: the next call asks where it is now.
func (c *coordinator) moved() {
	c.mu.Lock()
	conn := c.conn
	c.conn = nil
	c.mu.Unlock()
	if conn != nil {
		conn.close()
	}
}

func (c *coordinator) close() { c.moved() }

func (c *coordinator) String() string {
	if c.kind == coordinatorTransaction {
		return fmt.Sprintf("transactional id %q", c.key)
	}
	return fmt.Sprintf("group %q", c.key)
}

// errTxnRetry wraps an answer the coordinator may answer otherwise in a
// moment; the request is sent again.
var errTxnRetry = errors.New("retriable")

// coordinatorAsk sends req until its answer is not one to wait out:
// answer reads the error code of the answer. A lost connection or a moved
// coordinator is found again; a coordinator still loading its log, or
// still completing the last transaction (CONCURRENT_TRANSACTIONS, KIP-98's
// answer while the markers of an EndTxn are written), is asked again after
// a short wait that doubles. Any other code comes back as a kafka.Error.
func (p *Producer) coordinatorAsk(ctx context.Context, c *coordinator, what string, req protocol.Message, answer func(protocol.Message) int16) (protocol.Message, error) {
	wait := 20 * time.Millisecond
	var last error
	concurrent := 0
	for {
		pause := wait
		msg, err := c.call(ctx, p, req)
		if err == nil {
			code := answer(msg)
			if code == codeConcurrentTransactions && concurrent < 20 {
				// The markers of the transaction just ended are being
				// written (a few milliseconds): the first request of the
				// next one meets this every time, so it is asked again
				// soon rather than after a growing wait. Longer (an abort
				// at the timeout under way) backs off as any answer does.
				concurrent++
				pause = concurrentTxnWait
			}
			switch txnClassOf(code) {
			case txnOK:
				return msg, nil
			case txnCoordinatorMoved:
				c.moved()
				err = fmt.Errorf("%w: %w", errTxnRetry, kafka.Error(code))
			case txnWait:
				err = fmt.Errorf("%w: %w", errTxnRetry, kafka.Error(code))
			default:
				return msg, fmt.Errorf("%s for %s: %w", what, c, kafka.Error(code))
			}
		}
		if ctx.Err() != nil {
			if last == nil {
				last = err
			}
			return nil, fmt.Errorf("%s for %s: %w (last answer: %v)", what, c, ctx.Err(), last)
		}
		last = err
		p.cfg.Log.Debug("producer: asking the coordinator again", "request", what, "coordinator", c.String(), "err", err, "wait", pause)
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
		if pause == wait {
			wait = min(2*wait, time.Second)
		}
	}
}

// concurrentTxnWait is the wait after CONCURRENT_TRANSACTIONS. With 20 ms
// doubling, the AddPartitionsToTxn after every commit waited 60 ms (two
// answers) on the three-broker cluster, a third of each transaction.
const concurrentTxnWait = 5 * time.Millisecond
