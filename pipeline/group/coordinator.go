package group

import (
	"context"

	"github.com/segmentio/kafka-go"

	"github.com/logstore/logstore/internal/kafka/conn"
)

// coordinator is the member's connection to its group's coordinator, found
// with FindCoordinator through the seed brokers (dialled by name each
// time, so a name that now resolves elsewhere is followed) and dialled
// again whenever a request fails or the broker says it no longer
// coordinates the group (conn.Coordinator, shared with the producer).
// Requests take turns on it: JoinGroup, SyncGroup, Heartbeat, LeaveGroup.
// Offset commits do not go over it (they are the job's, and must not wait
// behind a JoinGroup the broker holds for a whole rebalance).
type coordinator struct{ conn.Coordinator }

func newCoordinator(d *kafka.Dialer, seeds []string, group string) *coordinator {
	return &coordinator{conn.Coordinator{
		Kind: conn.Group,
		Key:  group,
		Ask:  conn.Seeds{Dialer: d, Addrs: seeds}.Call,
		Dial: func(ctx context.Context, addr string) (*conn.Conn, error) { return conn.Dial(ctx, d, addr) },
	}}
}

// nodeID is the coordinator's broker id.
func (c *coordinator) nodeID(ctx context.Context) (int32, error) {
	_, n, err := c.Get(ctx)
	return n.ID, err
}

// answered looks at an answer's error code: a coordinator that moved or is
// loading drops the connection, so the next request finds the new one.
func (c *coordinator) answered(code int16) error {
	if code == 0 {
		return nil
	}
	err := kafka.Error(code)
	if conn.Moved(err) {
		c.Reset()
	}
	return err
}
