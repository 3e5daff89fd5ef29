package worker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/internal/testkit"
	"github.com/logstore/logstore/pipeline/decode"
	"github.com/logstore/logstore/sink"
)

// signalLog is a log handler that closes seen once a record whose message
// holds want is logged.
type signalLog struct {
	slog.Handler
	want string
	once *sync.Once
	seen chan struct{}
}

func (h signalLog) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.want) {
		h.once.Do(func() { close(h.seen) })
	}
	return h.Handler.Handle(ctx, r)
}

func (h signalLog) WithAttrs(as []slog.Attr) slog.Handler {
	h.Handler = h.Handler.WithAttrs(as)
	return h
}

// TestStoppedPartitionsBatchInAnotherPartitionsCycleIsCommittedOnce
// (issue 45, defect 1): two partitions of a member, exactly_once, their
// batches in one transaction of the member's cycle (which one of them led
// before the cycle had an owner of its own). One partition stops (a
// revoke, a handover, KIP-848 revoking it while the member keeps its
// epoch) after the cycle took its batch and before the cycle's
// TxnOffsetCommit. Its worker must learn the
// batch's outcome from the cycle that holds it: the brokers (the group's
// offset, read with require_stable) cannot see a transaction that has not
// sent its offsets yet, and taking their answer for "not committed" wrote
// the batch again in the next cycle while the first committed it too: 50
// records seen twice by read_committed consumers.
func TestStoppedPartitionsBatchInAnotherPartitionsCycleIsCommittedOnce(t *testing.T) {
	const rows = 50
	c := testkit.FakeCluster(t, kfake.SeedTopics(2, "logs"), kfake.SeedTopics(1, "out", "out.logstore-positions"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// The first TxnOffsetCommit holding both partitions is held until the
	// stopped partition's worker asked the brokers (OffsetFetch) or waits
	// for the cycle's outcome (its log says so).
	gathered, release := make(chan struct{}), make(chan struct{})
	held := false
	c.ControlKey(int16(kmsg.TxnOffsetCommit), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		parts := 0
		for _, tp := range r.(*kmsg.TxnOffsetCommitRequest).Topics {
			if tp.Topic == "logs" {
				parts += len(tp.Partitions)
			}
		}
		if held || parts < 2 {
			return nil, nil, false
		}
		held = true
		close(gathered)
		c.SleepControl(func() { <-release })
		return nil, nil, false
	})
	asked := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetFetch}, Observe: true, Count: -1})

	s, err := sink.New(ctx, sink.Config{Kafka: &sink.KafkaOutputConfig{Topic: "out", Delivery: sink.DeliveryExactlyOnce}, CommitInterval: time.Second},
		sink.Deps{KafkaBrokers: c.ListenAddrs(), Kafka: sink.KafkaDeps{TransactionalID: "logstore-g-test", Log: slog.New(slog.NewTextHandler(io.Discard, nil))}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dec, err := decode.New(decode.SchemaConfig{Columns: []decode.ColumnConfig{{Name: "n", Type: "int64", Required: true}}})
	if err != nil {
		t.Fatal(err)
	}
	client := &kafka.Client{Addr: kafka.TCP(c.ListenAddrs()...)}
	budget := NewBudget(1 << 30)
	waiting := make(chan struct{})
	log := slog.New(signalLog{Handler: slog.NewTextHandler(io.Discard, nil), want: waitingForCycle, once: new(sync.Once), seen: waiting})

	// The point inside the transaction is passed with each part's
	// writer's context; the first to pass it names the partition that
	// reads on, and the other stops.
	led := make(chan int, 2)
	stops := make([]context.CancelFunc, 2)
	ends := make([]chan error, 2)
	for p := range 2 {
		values := make([][]byte, rows)
		for i := range values {
			values[i] = fmt.Appendf(nil, `{"n": %d}`, 1000*p+i)
		}
		w := New(Config{
			Topic: "logs", Partition: p, Reader: &fakeLog{values: values, perFetch: rows}, Decoder: dec, Columns: 1,
			Commit: &GroupCommitter{client: client, group: "g", generation: -1}, Sinks: []sink.Sink{s.Kafka},
			OnError: "skip", OnOutOfRange: "fail", Limits: Limits{MaxRows: rows, MaxBytes: 1 << 30, MaxAge: time.Hour},
			Budget: budget, Stats: NewStats(), Target: -1, FlushWait: 30 * time.Second, Log: log,
			EOS: &ExactlyOnce{Kafka: s.Kafka, Group: "g"},
		})
		wctx, stop := context.WithCancel(sink.StopAt(ctx, sink.FailInTxn, 1, func() { led <- p }))
		stops[p], ends[p] = stop, make(chan error, 1)
		go func() { ends[p] <- w.Run(wctx, position{Offset: 0, Cut: -1}) }()
	}
	select {
	case <-gathered:
	case <-ctx.Done():
		t.Fatal("the member's cycle never held both partitions' batches")
	}
	leader := <-led
	stopped := 1 - leader
	askedBrokers := make(chan struct{})
	go func() {
		if asked.Wait(ctx, 1) == nil {
			close(askedBrokers)
		}
	}()
	stops[stopped]()
	select {
	case <-waiting:
	case <-askedBrokers:
		t.Logf("the stopped partition's worker asked the brokers whether its batch committed")
	case <-ctx.Done():
		t.Fatal("the stopped partition's worker neither asked the brokers nor waited for the cycle")
	}
	close(release)
	if err := <-ends[stopped]; err != nil {
		t.Errorf("the stopped partition's worker: %v", err)
	}
	stops[leader]()
	if err := <-ends[leader]; err != nil {
		t.Errorf("the leading partition's worker: %v", err)
	}

	seen := testkit.ReadCommitted(t, c.ListenAddrs(), "out", 2*rows)
	missing, twice := 0, 0
	for p := range 2 {
		for i := range rows {
			switch n := seen[fmt.Sprintf(`{"n":%d}`, 1000*p+i)]; {
			case n == 0:
				missing++
			case n > 1:
				twice++
			}
		}
	}
	if missing > 0 || twice > 0 {
		t.Errorf("read_committed: %d of %d records missing, %d seen more than once (partition %d stopped while partition %d led the cycle)",
			missing, 2*rows, twice, stopped, leader)
	}
}
