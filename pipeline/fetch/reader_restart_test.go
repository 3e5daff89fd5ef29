package fetch

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/pipeline/record"

	"github.com/logstore/logstore/internal/testkit"
)

// restartingDialer dials brokers for real and can make every connection
// open so far look like one to a broker that restarted since: writes still
// succeed (into the socket buffer) and the first read returns io.EOF, as the
// kernel reports a connection the peer's old process closed.
type restartingDialer struct {
	mu    sync.Mutex
	conns []*restartableConn
	dials atomic.Int32
}

type restartableConn struct {
	net.Conn
	dead atomic.Bool
}

func (c *restartableConn) Read(p []byte) (int, error) {
	if c.dead.Load() {
		return 0, io.EOF
	}
	return c.Conn.Read(p)
}

func (c *restartableConn) Write(p []byte) (int, error) {
	if c.dead.Load() {
		return len(p), nil
	}
	return c.Conn.Write(p)
}

func (d *restartingDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.dials.Add(1)
	nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	c := &restartableConn{Conn: nc}
	d.mu.Lock()
	d.conns = append(d.conns, c)
	d.mu.Unlock()
	return c, nil
}

// restart makes every connection dialled so far stale.
func (d *restartingDialer) restart() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.conns {
		c.dead.Store(true)
	}
}

// TestReaderRedialsStaleConnection: after a broker restart the pooled
// connection to it is dead, and the first fetch on it fails at once. The
// reader dials again and reads on from the same broker: no fallback to the
// leader, no metadata retry, nothing lost or repeated.
func TestReaderRedialsStaleConnection(t *testing.T) {
	for _, tc := range []struct {
		name string
		rack string // "az-b" follows the follower; "" reads from the leader
	}{
		{"preferred replica", "az-b"},
		{"leader", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, spy, leader, follower := rackCluster(t)
			addrs := c.ListenAddrs()
			produce(t, addrs, nil, numbered(0, 20)...)
			d := &restartingDialer{}
			var logs testkit.LogBuffer
			r := testReader(t, addrs, ReaderConfig{
				Rack:   tc.rack,
				Dialer: &kafka.Dialer{Timeout: 5 * time.Second, DialFunc: d.dial},
				Log:    slog.New(slog.NewTextHandler(&logs, nil)),
			})
			msgs := readTo(t, r, 20)
			want := spiedFetch{leader, ""}
			if tc.rack != "" {
				want = spiedFetch{follower, tc.rack}
			}

			d.restart()
			spy.reset()
			dials := d.dials.Load()
			produce(t, addrs, nil, numbered(20, 40)...)
			msgs = append(msgs, readTo(t, r, 40)...)

			wantValues(t, msgs, valueRange(0, 40)...)
			got := spy.fetches()
			if len(got) == 0 || got[0] != want {
				t.Fatalf("fetches after the restart %v; want the first at %+v, on a new connection", got, want)
			}
			for _, f := range got {
				if f != want {
					t.Fatalf("fetches after the restart %v; want every one at %+v", got, want)
				}
			}
			if n := d.dials.Load() - dials; n != 1 {
				t.Errorf("%d dials after the restart; want 1 (the stale connection's redial)", n)
			}
			for _, bad := range []string{"preferred read replica failed", "retrying"} {
				if strings.Contains(logs.String(), bad) {
					t.Errorf("log says %q after a stale connection:\n%s", bad, logs.String())
				}
			}
		})
	}
}

// TestReaderRetriesReplicaAfterBackoff: with the default settings, a reader
// whose preferred replica failed reads from the leader alone for 1 s, not for
// a lease of minutes; failures in a row double the wait, and a fetch the
// replica serves starts it over. The clock is the reader's own deadline,
// moved forward by the test.
func TestReaderRetriesReplicaAfterBackoff(t *testing.T) {
	c, spy, leader, follower := rackCluster(t)
	addrs := c.ListenAddrs()
	r := testReader(t, addrs, ReaderConfig{Rack: "az-b"})
	var fail atomic.Int32 // fetches at the follower still to fail
	base := spy.answer
	spy.setAnswer(func(node int32, req *kmsg.FetchRequest) (kmsg.Response, error, bool) {
		if node == follower && fail.Add(-1) >= 0 {
			return partitionAnswer(req, func(rp *kmsg.FetchResponseTopicPartition) { rp.ErrorCode = int16(kafka.ReplicaNotAvailable) }), nil, true
		}
		return base(node, req)
	})

	var msgs []record.Record
	next := 0
	read := func() []spiedFetch {
		t.Helper()
		spy.reset()
		produce(t, addrs, nil, numbered(next, next+10)...)
		next += 10
		msgs = append(msgs, readTo(t, r, int64(next))...)
		return spy.fetches()
	}
	read() // follows the follower
	for i, step := range []struct {
		failures int
		want     time.Duration // the reader's wait on the leader alone; 0: none
	}{
		{1, time.Second},
		{1, 2 * time.Second},
		{1, 4 * time.Second},
		{0, 0}, // the replica serves: the next failure waits 1 s again
		{1, time.Second},
	} {
		r.leaderOnlyUntil = time.Time{} // the last wait is over
		fail.Store(int32(step.failures))
		got := read()
		if len(got) == 0 || got[0] != (spiedFetch{leader, "az-b"}) && got[0] != (spiedFetch{follower, "az-b"}) {
			t.Fatalf("step %d: fetches %v; want the rack sent again once the wait is over", i, got)
		}
		wait := time.Until(r.leaderOnlyUntil)
		if step.want == 0 {
			if wait > 0 || r.replica != follower {
				t.Fatalf("step %d: reading from the leader for %v more (replica %d); want the follower %d", i, wait, r.replica, follower)
			}
			continue
		}
		if wait > step.want || wait < step.want-500*time.Millisecond {
			t.Fatalf("step %d: reads from the leader alone for %v; want %v", i, wait, step.want)
		}
		if last := got[len(got)-1]; last != (spiedFetch{leader, ""}) {
			t.Fatalf("step %d: fetches %v; want the last at the leader without the rack", i, got)
		}
	}
	wantValues(t, msgs, valueRange(0, next)...)
}
