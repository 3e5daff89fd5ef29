package fetch

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"math/big"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/fetch"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	franzplain "github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/logstore/logstore/internal/testkit"
	"github.com/logstore/logstore/pipeline/record"
)

// produce writes records to partition 0 of their topic, one ProduceSync per
// call (so one batch per call when they fit).
func produce(t testing.TB, addrs []string, opts []kgo.Opt, recs ...*kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(addrs...),
		kgo.DefaultProduceTopic(testTopic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func numbered(from, to int) []*kgo.Record {
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		recs = append(recs, &kgo.Record{
			Key:     []byte("k" + strconv.Itoa(i)),
			Value:   []byte("v" + strconv.Itoa(i)),
			Headers: []kgo.RecordHeader{{Key: "n", Value: []byte(strconv.Itoa(i))}},
		})
	}
	return recs
}

func testReader(t *testing.T, addrs []string, cfg ReaderConfig) *PartitionReader {
	t.Helper()
	cfg.Brokers = addrs
	if cfg.Topic == "" {
		cfg.Topic = testTopic
	}
	if cfg.MaxWait == 0 {
		cfg.MaxWait = 50 * time.Millisecond
	}
	r := NewPartitionReader(cfg)
	t.Cleanup(func() { r.Close() })
	return r
}

// readTo fetches until the reader's offset reaches end.
func readTo(t testing.TB, r *PartitionReader, end int64) []record.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var all []record.Record
	for r.Offset() < end {
		msgs, _, err := r.Fetch(ctx)
		if err != nil {
			t.Fatalf("fetch at %d: %v", r.Offset(), err)
		}
		all = append(all, msgs...)
	}
	return all
}

func values(msgs []record.Record) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.Value)
	}
	return out
}

func wantValues(t *testing.T, msgs []record.Record, want ...string) {
	t.Helper()
	got := values(msgs)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("values:\n got %q\nwant %q", got, want)
	}
}

func valueRange(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, "v"+strconv.Itoa(i))
	}
	return out
}

func TestReaderReadsFromOffset(t *testing.T) {
	c := testkit.FakeCluster(t, kfake.SeedTopics(1, testTopic))
	for i := 0; i < 100; i += 10 {
		produce(t, c.ListenAddrs(), nil, numbered(i, i+10)...)
	}

	r := testReader(t, c.ListenAddrs(), ReaderConfig{})
	r.SetOffset(37) // the middle of the fourth batch
	msgs := readTo(t, r, 100)
	wantValues(t, msgs, valueRange(37, 100)...)
	for i, m := range msgs {
		n := int64(37 + i)
		if m.Offset != n || string(m.Key) != "k"+strconv.FormatInt(n, 10) || m.Topic != testTopic || m.Partition != 0 {
			t.Fatalf("record %d: %+v", i, m)
		}
		if len(m.Headers) != 1 || m.Headers[0].Key != "n" || string(m.Headers[0].Value) != strconv.FormatInt(n, 10) {
			t.Fatalf("record %d headers: %+v", n, m.Headers)
		}
		if m.Time.IsZero() {
			t.Fatalf("record %d: no time", n)
		}
	}
	r.SetOffset(37)
	if _, high, err := r.Fetch(context.Background()); err != nil || high != 100 {
		t.Fatalf("fetch at 37: high watermark %d, err %v; want 100", high, err)
	}

	// At the end, Fetch waits MaxWait and returns nothing.
	msgs, high, err := r.Fetch(context.Background())
	if err != nil || len(msgs) != 0 || high != 100 || r.Offset() != 100 {
		t.Fatalf("fetch at end: %d records, high %d, offset %d, err %v", len(msgs), high, r.Offset(), err)
	}
}

func TestReaderStartsAtFirstOrLastOffset(t *testing.T) {
	c := testkit.FakeCluster(t, kfake.SeedTopics(1, testTopic))
	produce(t, c.ListenAddrs(), nil, numbered(0, 10)...)
	if err := c.DeleteRecords(testTopic, 0, 4); err != nil {
		t.Fatal(err)
	}

	first := testReader(t, c.ListenAddrs(), ReaderConfig{}) // FirstOffset by default
	wantValues(t, readTo(t, first, 10), valueRange(4, 10)...)

	last := testReader(t, c.ListenAddrs(), ReaderConfig{})
	last.SetOffset(kafka.LastOffset)
	if msgs, _, err := last.Fetch(context.Background()); err != nil || len(msgs) != 0 || last.Offset() != 10 {
		t.Fatalf("from the end: %d records, offset %d, err %v", len(msgs), last.Offset(), err)
	}
	produce(t, c.ListenAddrs(), nil, numbered(10, 12)...)
	wantValues(t, readTo(t, last, 12), "v10", "v11")
}

// everyCodec is every compression a record batch may have.
var everyCodec = []struct {
	name  string
	codec kgo.CompressionCodec
}{
	{"none", kgo.NoCompression()},
	{"gzip", kgo.GzipCompression()},
	{"snappy", kgo.SnappyCompression()},
	{"lz4", kgo.Lz4Compression()},
	{"zstd", kgo.ZstdCompression()},
}

func TestReaderDecodesEveryCodec(t *testing.T) {
	for _, tc := range everyCodec {
		t.Run(tc.name, func(t *testing.T) {
			c := testkit.FakeCluster(t, kfake.SeedTopics(1, testTopic))
			opts := []kgo.Opt{kgo.ProducerBatchCompression(tc.codec)}
			produce(t, c.ListenAddrs(), opts, numbered(0, 50)...)
			produce(t, c.ListenAddrs(), opts, numbered(50, 100)...)

			r := testReader(t, c.ListenAddrs(), ReaderConfig{})
			r.SetOffset(20) // inside the first compressed batch
			wantValues(t, readTo(t, r, 100), valueRange(20, 100)...)
		})
	}
}

// TestReaderTransactions writes committed, aborted and plain records around
// transaction markers and reads them in both isolation levels.
func TestReaderTransactions(t *testing.T) {
	c := testkit.FakeCluster(t, kfake.SeedTopics(1, testTopic))
	addrs := c.ListenAddrs()

	txn, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic(testTopic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionalID("reader-test"))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	inTxn := func(commit kgo.TransactionEndTry, vals ...string) {
		t.Helper()
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			if err := txn.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := txn.EndTransaction(ctx, commit); err != nil {
			t.Fatal(err)
		}
	}
	plainRec := func(v string) { produce(t, addrs, nil, &kgo.Record{Value: []byte(v)}) }

	inTxn(kgo.TryCommit, "c1", "c2")
	inTxn(kgo.TryAbort, "a1", "a2")
	plainRec("p1")
	inTxn(kgo.TryAbort, "a3")
	inTxn(kgo.TryCommit, "c3")
	plainRec("p2")
	end := c.PartitionInfo(testTopic, 0).HighWatermark

	t.Run(ReadCommitted, func(t *testing.T) {
		r := testReader(t, addrs, ReaderConfig{Isolation: ReadCommitted})
		wantValues(t, readTo(t, r, end), "c1", "c2", "p1", "c3", "p2")
	})
	t.Run(ReadUncommitted, func(t *testing.T) {
		r := testReader(t, addrs, ReaderConfig{Isolation: ReadUncommitted})
		wantValues(t, readTo(t, r, end), "c1", "c2", "a1", "a2", "p1", "a3", "c3", "p2")
	})
	t.Run("from inside an aborted transaction", func(t *testing.T) {
		r := testReader(t, addrs, ReaderConfig{Isolation: ReadCommitted})
		r.SetOffset(4) // c1 c2 marker a1 | a2
		wantValues(t, readTo(t, r, end), "p1", "c3", "p2")
	})
	t.Run("bad isolation", func(t *testing.T) {
		r := testReader(t, addrs, ReaderConfig{Isolation: "serializable"})
		if _, _, err := r.Fetch(ctx); err == nil {
			t.Fatal("no error for an unknown isolation level")
		}
	})
}

func TestReaderOffsetOutOfRange(t *testing.T) {
	c := testkit.FakeCluster(t, kfake.SeedTopics(1, testTopic))
	produce(t, c.ListenAddrs(), nil, numbered(0, 10)...)
	if err := c.DeleteRecords(testTopic, 0, 3); err != nil {
		t.Fatal(err)
	}
	for _, offset := range []int64{0, 2, 11, 1000} {
		r := testReader(t, c.ListenAddrs(), ReaderConfig{})
		r.SetOffset(offset)
		_, _, err := r.Fetch(context.Background())
		var rangeErr *OffsetOutOfRangeError
		if !errors.As(err, &rangeErr) || !errors.Is(err, kafka.OffsetOutOfRange) {
			t.Fatalf("offset %d: err %v, want *OffsetOutOfRangeError", offset, err)
		}
		if *rangeErr != (OffsetOutOfRangeError{Topic: testTopic, Offset: offset, LogStart: 3, LogEnd: 10}) {
			t.Fatalf("offset %d: %+v", offset, *rangeErr)
		}
		if r.Offset() != offset {
			t.Fatalf("the reader moved to %d by itself", r.Offset())
		}
	}
}

func TestReaderWatermarksAndOffsetForTime(t *testing.T) {
	c := testkit.FakeCluster(t, kfake.SeedTopics(1, testTopic))
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range 5 {
		produce(t, c.ListenAddrs(), nil, &kgo.Record{Value: []byte("v"), Timestamp: base.Add(time.Duration(i) * time.Minute)})
	}
	if err := c.DeleteRecords(testTopic, 0, 1); err != nil {
		t.Fatal(err)
	}
	r := testReader(t, c.ListenAddrs(), ReaderConfig{})
	ctx := context.Background()

	start, high, err := r.Watermarks(ctx)
	if err != nil || start != 1 || high != 5 {
		t.Fatalf("watermarks: %d, %d, %v; want 1, 5", start, high, err)
	}
	for _, tc := range []struct {
		at   time.Time
		want int64
	}{
		{base.Add(2 * time.Minute), 2},
		{base.Add(90 * time.Second), 2},
		{base.Add(-time.Hour), 1},
		{base.Add(time.Hour), 5}, // nothing that late: the end
	} {
		got, err := r.OffsetForTime(ctx, tc.at)
		if err != nil || got != tc.want {
			t.Errorf("OffsetForTime(%v) = %d, %v; want %d", tc.at, got, err, tc.want)
		}
	}
}

// fetchSpy records which broker got each Fetch, with which rack, and lets a
// test answer instead of the broker.
type fetchSpy struct {
	c        *kfake.Cluster
	mu       sync.Mutex
	seen     []spiedFetch
	sessions []spiedSession
	answer   func(node int32, req *kmsg.FetchRequest) (kmsg.Response, error, bool)
}

type spiedFetch struct {
	node int32
	rack string
}

// spiedSession is a Fetch's session fields (KIP-227): id, epoch, the
// partitions of testTopic it names and those it forgets.
type spiedSession struct {
	node             int32
	id, epoch        int32
	parts, forgotten int
	named, forgot    []int32
}

func spyFetches(c *kfake.Cluster) *fetchSpy {
	s := &fetchSpy{c: c}
	c.ControlKey(int16(kmsg.Fetch), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.FetchRequest)
		node := c.CurrentNode()
		s.mu.Lock()
		sess := spiedSession{node: node, id: req.SessionID, epoch: req.SessionEpoch}
		for _, t := range req.Topics {
			sess.parts += len(t.Partitions)
			for _, p := range t.Partitions {
				sess.named = append(sess.named, p.Partition)
			}
		}
		for _, t := range req.ForgottenTopics {
			sess.forgotten += len(t.Partitions)
			sess.forgot = append(sess.forgot, t.Partitions...)
		}
		s.seen = append(s.seen, spiedFetch{node, req.Rack})
		s.sessions = append(s.sessions, sess)
		answer := s.answer
		s.mu.Unlock()
		if answer != nil {
			return answer(node, req)
		}
		return nil, nil, false
	})
	return s
}

func (s *fetchSpy) setAnswer(f func(node int32, req *kmsg.FetchRequest) (kmsg.Response, error, bool)) {
	s.mu.Lock()
	s.answer = f
	s.mu.Unlock()
}

func (s *fetchSpy) fetches() []spiedFetch {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]spiedFetch(nil), s.seen...)
}

func (s *fetchSpy) fetchSessions() []spiedSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]spiedSession(nil), s.sessions...)
}

func (s *fetchSpy) reset() {
	s.mu.Lock()
	s.seen, s.sessions = nil, nil
	s.mu.Unlock()
}

// partitionAnswer is a Fetch response for partition 0 of testTopic.
func partitionAnswer(req *kmsg.FetchRequest, fill func(*kmsg.FetchResponseTopicPartition)) *kmsg.FetchResponse {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	rt := kmsg.NewFetchResponseTopic()
	rt.Topic = testTopic
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
	fill(&rp)
	rt.Partitions = append(rt.Partitions, rp)
	resp.Topics = append(resp.Topics, rt)
	return resp
}

// rackCluster is a three-broker kfake cluster where the leader of
// testTopic/0 acts like a broker with RackAwareReplicaSelector: it names
// follower as the preferred read replica to readers that send rack "az-b".
// kfake has no racks, so the rack itself is not checked.
func rackCluster(t *testing.T) (c *kfake.Cluster, spy *fetchSpy, leader, follower int32) {
	c = testkit.FakeCluster(t, kfake.NumBrokers(3), kfake.SeedTopics(1, testTopic))
	leader = c.LeaderFor(testTopic, 0)
	follower = (leader + 1) % 3
	c.SetFollowers(testTopic, 0, []int32{follower})
	spy = spyFetches(c)
	spy.setAnswer(func(node int32, req *kmsg.FetchRequest) (kmsg.Response, error, bool) {
		if node != leader || req.Rack != "az-b" {
			return nil, nil, false
		}
		return partitionAnswer(req, func(rp *kmsg.FetchResponseTopicPartition) { rp.PreferredReadReplica = follower }), nil, true
	})
	return c, spy, leader, follower
}

func TestReaderFollowsPreferredReplica(t *testing.T) {
	c, spy, leader, follower := rackCluster(t)
	for i := 0; i < 200; i += 20 {
		produce(t, c.ListenAddrs(), nil, numbered(i, i+20)...)
	}
	stats := new(Stats)

	r := testReader(t, c.ListenAddrs(), ReaderConfig{Rack: "az-b", Stats: stats, MaxBytes: 1 << 10})
	wantValues(t, readTo(t, r, 200), valueRange(0, 200)...)

	got := spy.fetches()
	if len(got) < 3 || got[0] != (spiedFetch{leader, "az-b"}) {
		t.Fatalf("fetches %v: want the first at the leader %d with the rack", got, leader)
	}
	for _, f := range got[1:] {
		if f != (spiedFetch{follower, "az-b"}) {
			t.Fatalf("fetches %v: want all after the first at follower %d", got, follower)
		}
	}
	var leaderBytes, followerBytes int64
	for _, b := range stats.Snapshot().Brokers {
		switch b.ID {
		case leader:
			leaderBytes = b.Bytes
		case follower:
			followerBytes = b.Bytes
		}
	}
	if leaderBytes > 100 || followerBytes < 200*8 {
		t.Fatalf("bytes: leader %d (want only its first small answer), follower %d", leaderBytes, followerBytes)
	}
}

func TestReaderWithoutRackReadsFromLeader(t *testing.T) {
	c, spy, leader, _ := rackCluster(t)
	produce(t, c.ListenAddrs(), nil, numbered(0, 50)...)
	r := testReader(t, c.ListenAddrs(), ReaderConfig{})
	wantValues(t, readTo(t, r, 50), valueRange(0, 50)...)
	for _, f := range spy.fetches() {
		if f != (spiedFetch{leader, ""}) {
			t.Fatalf("fetches %v: want all at leader %d without a rack", spy.fetches(), leader)
		}
	}
}

// TestReaderFallsBackToLeader fails the preferred replica in each way KIP-392
// names, and checks that the reader reads on from the leader without losing
// or repeating a record, then returns to the replica after the backoff.
func TestReaderFallsBackToLeader(t *testing.T) {
	type failure struct {
		name  string
		epoch bool // the answer says the leader epoch moved
		fail  func(req *kmsg.FetchRequest) (kmsg.Response, error, bool)
		times int // fetches that fail in a row; 0 is 1
	}
	failures := []failure{
		// A lost broker fails the redial too: one hang-up alone is taken
		// for a stale connection (TestReaderRedialsStaleConnection).
		{"connection lost", false, func(*kmsg.FetchRequest) (kmsg.Response, error, bool) {
			return nil, errors.New("hang up"), true
		}, 2},
	}
	for _, code := range []int16{
		int16(kafka.OffsetOutOfRange), int16(kafka.NotLeaderForPartition), int16(kafka.ReplicaNotAvailable),
		int16(kafka.FencedLeaderEpoch), int16(kafka.UnknownLeaderEpoch), int16(kafka.OffsetNotAvailable),
	} {
		failures = append(failures, failure{fmt.Sprintf("error %d", code), epochChanged(kafka.Error(code)), func(req *kmsg.FetchRequest) (kmsg.Response, error, bool) {
			return partitionAnswer(req, func(rp *kmsg.FetchResponseTopicPartition) { rp.ErrorCode = code }), nil, true
		}, 1})
	}

	for _, tc := range failures {
		t.Run(tc.name, func(t *testing.T) {
			c, spy, leader, follower := rackCluster(t)
			addrs := c.ListenAddrs()
			produce(t, addrs, nil, numbered(0, 20)...)
			const lease = 300 * time.Millisecond
			r := testReader(t, addrs, ReaderConfig{Rack: "az-b", PreferredLease: lease, ReplicaBackoff: lease})
			msgs := readTo(t, r, 20)

			// The replica fails (tc.times in a row), then works again.
			var failed atomic.Int32
			base := spy.answer
			spy.setAnswer(func(node int32, req *kmsg.FetchRequest) (kmsg.Response, error, bool) {
				if node == follower && failed.Add(1) <= int32(max(tc.times, 1)) {
					return tc.fail(req)
				}
				return base(node, req)
			})
			spy.reset()
			produce(t, addrs, nil, numbered(20, 40)...)
			msgs = append(msgs, readTo(t, r, 40)...)
			fellBack := spy.fetches()

			time.Sleep(lease)
			spy.reset()
			produce(t, addrs, nil, numbered(40, 60)...)
			msgs = append(msgs, readTo(t, r, 60)...)
			back := spy.fetches()

			wantValues(t, msgs, valueRange(0, 60)...)
			// The lease may have run out before the failure: then the
			// leader is asked first and names the follower again.
			if len(fellBack) > 0 && fellBack[0] == (spiedFetch{leader, "az-b"}) {
				fellBack = fellBack[1:]
			}
			// A leader-epoch answer means the leadership moved, not that
			// the replica failed: the leader is asked again with the rack.
			wantRack := ""
			if tc.epoch {
				wantRack = "az-b"
			}
			n := max(tc.times, 1)
			if len(fellBack) < n+1 || fellBack[n] != (spiedFetch{leader, wantRack}) {
				t.Fatalf("after the failure: fetches %v; want follower %d (%d times), then leader %d with rack %q", fellBack, follower, n, leader, wantRack)
			}
			for _, f := range fellBack[:n] {
				if f.node != follower {
					t.Fatalf("after the failure: fetches %v; want follower %d (%d times), then leader %d with rack %q", fellBack, follower, n, leader, wantRack)
				}
			}
			if len(back) < 2 || back[0] != (spiedFetch{leader, "az-b"}) || back[len(back)-1].node != follower {
				t.Fatalf("after the lease: fetches %v; want leader %d with the rack, then follower %d", back, leader, follower)
			}
		})
	}
}

func TestReaderFollowsLeaderMove(t *testing.T) {
	c := testkit.FakeCluster(t, kfake.NumBrokers(3), kfake.SeedTopics(1, testTopic))
	addrs := c.ListenAddrs()
	produce(t, addrs, nil, numbered(0, 10)...)
	r := testReader(t, addrs, ReaderConfig{})
	msgs := readTo(t, r, 10)

	to := (c.LeaderFor(testTopic, 0) + 1) % 3
	if err := c.MoveTopicPartition(testTopic, 0, to); err != nil {
		t.Fatal(err)
	}
	produce(t, addrs, nil, numbered(10, 20)...)
	msgs = append(msgs, readTo(t, r, 20)...)
	wantValues(t, msgs, valueRange(0, 20)...)
	if r.part.Leader != to {
		t.Fatalf("reader's leader %d, want %d", r.part.Leader, to)
	}
}

// TestReaderStepsOverCompactedTail checks that the reader moves past a batch
// whose last records compaction removed: the batch header still says where
// it ends.
func TestReaderStepsOverCompactedTail(t *testing.T) {
	set := recordSet(t, 100, 3, 9) // offsets 100..102, batch claims 100..109
	r := NewPartitionReader(ReaderConfig{Topic: testTopic})
	for _, tc := range []struct {
		at   int64
		want []string
	}{
		{100, []string{"r0", "r1", "r2"}},
		{102, []string{"r2"}},
		{103, nil},
		{109, nil},
	} {
		r.SetOffset(tc.at)
		msgs, next, err := r.records(&fetchedPartition{records: set, lastStable: -1})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(values(msgs)) != fmt.Sprint(tc.want) || next != 110 {
			t.Errorf("at %d: %q, next %d; want %q, next 110", tc.at, values(msgs), next, tc.want)
		}
	}
}

// recordSet is a v2 record set (with its size prefix) of n records from
// offset base whose header claims lastDelta as its last offset delta.
func recordSet(t *testing.T, base int64, n int, lastDelta int32) []byte {
	t.Helper()
	var recs []protocol.Record
	for i := range n {
		recs = append(recs, protocol.Record{Offset: base + int64(i), Value: protocol.NewBytes([]byte("r" + strconv.Itoa(i)))})
	}
	var buf bytes.Buffer
	rs := protocol.RecordSet{Version: 2, Records: protocol.NewRecordReader(recs...)}
	if _, err := rs.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	batch := b[4:]
	binary.BigEndian.PutUint64(batch[0:8], uint64(base))
	binary.BigEndian.PutUint32(batch[23:27], uint32(lastDelta))
	binary.BigEndian.PutUint32(batch[17:21], crc32.Checksum(batch[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

func TestParseFetchResponse(t *testing.T) {
	for _, version := range []int16{4, 5, 7, 10, 11} {
		t.Run("v"+strconv.Itoa(int(version)), func(t *testing.T) {
			// kafka-go cannot encode an empty record set.
			one := func(offset int64) protocol.RecordSet {
				return protocol.RecordSet{Version: 2, Records: protocol.NewRecordReader(protocol.Record{Offset: offset, Value: protocol.NewBytes([]byte("x"))})}
			}
			res := &fetch.Response{Topics: []fetch.ResponseTopic{
				{Topic: "other", Partitions: []fetch.ResponsePartition{{Partition: 0, HighWatermark: 1, RecordSet: one(0)}}},
				{Topic: testTopic, Partitions: []fetch.ResponsePartition{
					{Partition: 1, HighWatermark: 2, RecordSet: one(0)},
					{
						Partition: 0, ErrorCode: 0, HighWatermark: 9, LastStableOffset: 8, LogStartOffset: 3,
						AbortedTransactions:  []fetch.ResponseTransaction{{ProducerID: 5, FirstOffset: 6}},
						PreferredReadReplica: 2,
						RecordSet:            one(7),
					},
				}},
			}}
			var frame bytes.Buffer
			if err := protocol.WriteResponse(&frame, version, 1, res); err != nil {
				t.Fatal(err)
			}
			got, err := parseFetchResponse(version, frame.Bytes()[8:], testTopic, 0)
			if err != nil {
				t.Fatal(err)
			}
			want := fetchedPartition{highWatermark: 9, lastStable: 8, logStart: 3, preferred: 2,
				aborted: []abortedTxn{{producerID: 5, firstOffset: 6}}}
			if version < 5 {
				want.logStart = -1
			}
			if version < 11 {
				want.preferred = -1
			}
			if got.highWatermark != want.highWatermark || got.lastStable != want.lastStable || got.logStart != want.logStart ||
				got.preferred != want.preferred || fmt.Sprint(got.aborted) != fmt.Sprint(want.aborted) {
				t.Fatalf("got %+v, want %+v", *got, want)
			}
			// kafka-go's encoder numbers batches from 0.
			if b := scanBatches(got.records[4:]); len(b) != 1 || b[0].base != 0 || b[0].last != 0 {
				t.Fatalf("batches %+v", b)
			}
			if _, err := parseFetchResponse(version, frame.Bytes()[8:len(frame.Bytes())-3], testTopic, 0); err == nil {
				t.Fatal("a truncated response parsed")
			}
		})
	}
}

func TestScanBatches(t *testing.T) {
	one := recordSet(t, 10, 3, 2)[4:]
	two := recordSet(t, 13, 1, 4)[4:]
	both := append(append([]byte(nil), one...), two...)
	for _, tc := range []struct {
		name string
		set  []byte
		want string
	}{
		{"empty", nil, "[]"},
		{"one", one, "[10-12]"},
		{"two", both, "[10-12 13-17]"},
		{"cut short", both[:len(both)-5], "[10-12]"},
		{"header only", both[:len(one)+20], "[10-12]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, b := range scanBatches(tc.set) {
				got = append(got, fmt.Sprintf("%d-%d", b.base, b.last))
			}
			if s := "[" + strings.Join(got, " ") + "]"; s != tc.want {
				t.Fatalf("got %s, want %s", s, tc.want)
			}
		})
	}
}

func TestReaderSASLAndTLS(t *testing.T) {
	serverTLS, clientTLS := testTLS(t)
	c := testkit.FakeCluster(t, kfake.SeedTopics(1, testTopic), kfake.EnableSASL(), kfake.Superuser("PLAIN", "alice", "secret"), kfake.TLS(serverTLS))
	produce(t, c.ListenAddrs(), []kgo.Opt{
		kgo.SASL(franzplain.Auth{User: "alice", Pass: "secret"}.AsMechanism()),
		kgo.DialTLSConfig(clientTLS),
	}, numbered(0, 10)...)

	r := testReader(t, c.ListenAddrs(), ReaderConfig{Dialer: &kafka.Dialer{
		Timeout:       5 * time.Second,
		TLS:           clientTLS,
		SASLMechanism: plain.Mechanism{Username: "alice", Password: "secret"},
	}})
	wantValues(t, readTo(t, r, 10), valueRange(0, 10)...)

	bad := testReader(t, c.ListenAddrs(), ReaderConfig{Dialer: &kafka.Dialer{
		Timeout:       5 * time.Second,
		TLS:           clientTLS,
		SASLMechanism: plain.Mechanism{Username: "alice", Password: "wrong"},
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, _, err := bad.Fetch(ctx); err == nil || ctx.Err() != nil {
		t.Fatalf("wrong password: err %v; want an authentication error at once", err)
	}
}

// testTLS returns a server config with a self-signed certificate for
// 127.0.0.1 and a client config that trusts it.
func testTLS(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "kfake"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	server = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	return server, &tls.Config{RootCAs: pool}
}

func TestReaderCloseAbortsFetch(t *testing.T) {
	c := testkit.FakeCluster(t, kfake.SeedTopics(1, testTopic))
	produce(t, c.ListenAddrs(), nil, numbered(0, 1)...)
	r := testReader(t, c.ListenAddrs(), ReaderConfig{MaxWait: 5 * time.Second})
	readTo(t, r, 1)
	done := make(chan error, 1)
	go func() {
		_, _, err := r.Fetch(context.Background())
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	r.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Fetch after Close returned no error")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not abort the Fetch")
	}
}

// BenchmarkReaders compares PartitionReader with kafka-go's Reader reading
// the same partition from kfake; the integration build has the same on the
// real cluster.
func BenchmarkReaders(b *testing.B) {
	c, err := kfake.NewCluster(kfake.SeedTopics(1, testTopic))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	const n = 20000
	for i := 0; i < n; i += 1000 {
		var recs []*kgo.Record
		for j := i; j < i+1000; j++ {
			recs = append(recs, &kgo.Record{Value: bytes.Repeat([]byte{'x'}, 200)})
		}
		produce(b, c.ListenAddrs(), nil, recs...)
	}
	benchmarkReaders(b, c.ListenAddrs(), testTopic, n, 200)
}

// benchmarkReaders reads records 0..n-1 of topic/0, each with a value of
// valueSize bytes, once per iteration with each reader.
func benchmarkReaders(b *testing.B, addrs []string, topic string, n int64, valueSize int) {
	b.Run("PartitionReader", func(b *testing.B) {
		b.SetBytes(n * int64(valueSize))
		for b.Loop() {
			r := NewPartitionReader(ReaderConfig{Brokers: addrs, Topic: topic, MaxWait: 50 * time.Millisecond, Log: slog.New(slog.DiscardHandler)})
			r.SetOffset(0)
			if got := readTo(b, r, n); int64(len(got)) != n {
				b.Fatalf("read %d records, want %d", len(got), n)
			}
			r.Close()
		}
	})
	b.Run("kafka-go Reader", func(b *testing.B) {
		b.SetBytes(n * int64(valueSize))
		for b.Loop() {
			kr := kafka.NewReader(kafka.ReaderConfig{Brokers: addrs, Topic: topic, Partition: 0,
				MinBytes: 1, MaxBytes: DefaultFetchMaxBytes, MaxWait: 50 * time.Millisecond})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			for i := int64(0); i < n; i++ {
				if _, err := kr.ReadMessage(ctx); err != nil {
					b.Fatal(err)
				}
			}
			cancel()
			kr.Close()
		}
	})
}

// TestReaderFetchesNoMoreThanItsLimit: SetFetchMax bounds the partition's
// part of the next fetches (what its worker reserved from the memory
// budget), within ReaderConfig.MaxBytes; a first batch larger than the
// limit still comes whole (KIP-74).
func TestReaderFetchesNoMoreThanItsLimit(t *testing.T) {
	c := testkit.FakeCluster(t, kfake.NumBrokers(1), kfake.SeedTopics(1, testTopic))
	addrs := c.ListenAddrs()
	for i := range 5 {
		produce(t, addrs, nil, numbered(10*i, 10*i+10)...) // a batch each
	}
	r := NewPartitionReader(ReaderConfig{Brokers: addrs, Topic: testTopic, Partition: 0, MaxWait: 100 * time.Millisecond, Log: slog.New(slog.DiscardHandler)})
	defer r.Close()
	r.SetOffset(0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r.SetFetchMax(1)
	got, _, err := r.Fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 10 {
		t.Errorf("a fetch limited to 1 byte returned %d records, want the first batch's 10", len(got))
	}
	r.SetFetchMax(0) // back to MaxBytes
	got, _, err = r.Fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 40 {
		t.Errorf("a fetch within MaxBytes returned %d records, want the other 40", len(got))
	}
}
