package sink

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore/internal/testkit"
)

// heldKafka is an exactly-once Kafka output on an in-process cluster, and
// the cluster.
func heldKafka(t *testing.T) (*Kafka, *kfake.Cluster) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "out", "out.logstore-positions"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cfg := &KafkaOutputConfig{Topic: "out", Key: "service", Delivery: DeliveryExactlyOnce}
	cfg.setDefaults()
	k, err := newKafka(cfg, c.ListenAddrs(), KafkaDeps{TransactionalID: "logstore-test-" + t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := k.Preflight(ctx); err != nil {
		t.Fatal(err)
	}
	return k, c
}

// With exactly_once, Stage holds the rows' records (from KafkaFrom on)
// and produces nothing; the batch's transaction produces them, in their
// order, with the keys, values and source headers Write would give them,
// and then the rows the batch still holds.
func TestHeldRecordsGoInTheTransactionAsStaged(t *testing.T) {
	k, c := heldKafka(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b := kafkaBatch() // offsets 100..149
	want, err := kafkaRecords(k.cfg, b)
	if err != nil {
		t.Fatal(err)
	}
	b.KafkaFrom = 105 // the Kafka output holds 100..104 already
	// Two stages of 20 rows; 10 rows stay in the batch until its cut.
	for _, at := range []int{0, 20} {
		chunk := *b
		chunk.Rows, chunk.Sources = b.Rows[at:at+20], b.Sources[at:at+20]
		if _, err := k.Stage(ctx, &chunk); err != nil {
			t.Fatal(err)
		}
	}
	if n := k.HeldBytes(b.Topic, b.Partition, ""); n <= 0 {
		t.Errorf("HeldBytes %d after two stages, want their records' bytes", n)
	}
	held := k.TakeHeld(b.Topic, b.Partition, "")
	var records int64
	for i := 5; i < 40; i++ {
		records += recordSize(&want[i])
	}
	if held.Bytes() >= records/2 {
		t.Errorf("the held chunks take %d bytes for records of %d: want them compressed", held.Bytes(), records)
	}
	if held.Rows() != 35 || k.HeldBytes(b.Topic, b.Partition, "") != 0 {
		t.Fatalf("took %d held rows (want 35), %d bytes left held (want 0)", held.Rows(), k.HeldBytes(b.Topic, b.Partition, ""))
	}
	b.Rows, b.Sources, b.Held = b.Rows[40:], b.Sources[40:], held
	if err := k.Transact(ctx, &TxnPart{Batch: b}); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("out"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []*kgo.Record
	for len(got) < 45 && ctx.Err() == nil {
		got = append(got, cl.PollFetches(ctx).Records()...)
	}
	if len(got) != 45 {
		t.Fatalf("%d records in the output, want 45 (offsets 105..149)", len(got))
	}
	for i, r := range got {
		w := want[i+5]
		if string(r.Key) != string(w.Key) || string(r.Value) != string(w.Value) || len(r.Headers) != 3 {
			t.Fatalf("record %d: key %q value %.40q, %d headers; want key %q value %.40q", i, r.Key, r.Value, len(r.Headers), w.Key, w.Value)
		}
		for j, h := range r.Headers {
			if h.Key != w.Headers[j].Key || string(h.Value) != string(w.Headers[j].Value) {
				t.Errorf("record %d header %d: %s=%q, want %s=%q", i, j, h.Key, h.Value, w.Headers[j].Key, w.Headers[j].Value)
			}
		}
		if off := string(r.Headers[2].Value); off != strconv.Itoa(105+i) {
			t.Errorf("record %d is of source offset %s, want %d: out of order", i, off, 105+i)
		}
	}
}

// A held record over the output topic's max.message.bytes can only be the
// topic's limit lowered under the running job (CheckRows refuses rows over
// the limit read at start): its row is in the batch's files already, so the
// transaction fails with an error that says what to change, and is tried
// again, rather than drop or dead-letter a row the files keep.
func TestHeldRecordOverALoweredLimitSaysWhatToChange(t *testing.T) {
	k, c := heldKafka(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b := kafkaBatch()
	if refused := k.CheckRows(b); refused != nil {
		t.Fatalf("rows refused under the topic's default limit: %v", refused)
	}
	if _, err := k.Stage(ctx, b); err != nil {
		t.Fatal(err)
	}
	testkit.SetTopicConfig(t, c.ListenAddrs(), "out", "max.message.bytes", "100")
	b.Held, b.Rows, b.Sources = k.TakeHeld(b.Topic, b.Partition, ""), nil, nil
	err := k.Transact(ctx, &TxnPart{Batch: b})
	if !errors.Is(err, errStagedTooLarge) || AsRowErrors(err) != nil {
		t.Fatalf("a held record over a lowered max.message.bytes: %v; want an error naming the topic's limit, not refused rows", err)
	}
	t.Log(err)
}
