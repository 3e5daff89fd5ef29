package producer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"

	"github.com/logstore/logstore/internal/kafka/conn"
)

// coordinator is the connection to the broker that coordinates one key:
// the transactional id (InitProducerId, AddPartitionsToTxn,
// AddOffsetsToTxn, EndTxn) or a group (TxnOffsetCommit, OffsetFetch),
// found through the producer's control connection and dialled as its other
// connections are. It is found again whenever a request fails or the
// broker says it moved (the keeping is conn.Coordinator's, shared with the
// group member).
func (p *Producer) coordinator(kind conn.Kind, key string) *conn.Coordinator {
	return &conn.Coordinator{Kind: kind, Key: key, Ask: p.ctl.call,
		Dial: func(ctx context.Context, addr string) (*conn.Conn, error) {
			return dialConn(ctx, p.cfg.Dial, p.cfg.ClientID, addr, p.cfg.RequestTimeout)
		}}
}

// coordinatorCall sends req to c within the request timeout.
func (p *Producer) coordinatorCall(ctx context.Context, c *conn.Coordinator, req protocol.Message) (protocol.Message, error) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	defer cancel()
	return c.Request(ctx, req)
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
func (p *Producer) coordinatorAsk(ctx context.Context, c *conn.Coordinator, what string, req protocol.Message, answer func(protocol.Message) int16) (protocol.Message, error) {
	backoff := conn.Backoff{Min: 20 * time.Millisecond, Max: time.Second}
	wait := backoff.Next()
	var last error
	concurrent := 0
	for {
		pause := wait
		msg, err := p.coordinatorCall(ctx, c, req)
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
				c.Reset()
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
			wait = backoff.Next()
		}
	}
}

// concurrentTxnWait is the wait after CONCURRENT_TRANSACTIONS. With 20 ms
// doubling, the AddPartitionsToTxn after every commit waited 60 ms (two
// answers) on the three-broker cluster, a third of each transaction.
const concurrentTxnWait = 5 * time.Millisecond
