package producer

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go/compress"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore/internal/testkit"
)

func fakeCluster(t *testing.T, partitions int, topic string) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(int32(partitions), topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// readAllRecords reads every record of topic from the start.
func readAllRecords(t *testing.T, brokers []string, topic string, want int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < want && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	// Anything beyond want (a duplicate) shows up within a short while.
	short, cancel2 := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel2()
	for short.Err() == nil {
		fs := cl.PollFetches(short)
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

// Every record is written once, keyed records on the Java client's
// partition, with every codec.
func TestProduceEveryRecordOnceKeyedOnJavaPartition(t *testing.T) {
	for _, codec := range []compress.Compression{compress.None, compress.Gzip, compress.Snappy, compress.Lz4, compress.Zstd} {
		t.Run(codec.String(), func(t *testing.T) {
			c := fakeCluster(t, 6, "out")
			p, err := New(Config{Brokers: c.ListenAddrs(), Compression: codec, BatchRecords: 50})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			var recs []Record
			for i := range 500 {
				r := Record{Value: fmt.Appendf(nil, "v%d", i), Headers: []Header{{Key: "i", Value: fmt.Append(nil, i)}}}
				if i%2 == 0 {
					r.Key = fmt.Appendf(nil, "key-%d", i%37)
				}
				recs = append(recs, r)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := p.Produce(ctx, "out", recs); err != nil {
				t.Fatal(err)
			}
			got := readAllRecords(t, c.ListenAddrs(), "out", len(recs))
			if len(got) != len(recs) {
				t.Fatalf("read %d records, produced %d", len(got), len(recs))
			}
			seen := map[string]bool{}
			for _, r := range got {
				if seen[string(r.Value)] {
					t.Fatalf("%s written twice", r.Value)
				}
				seen[string(r.Value)] = true
				if r.Key != nil {
					if want := KeyPartition(r.Key, 6); r.Partition != want {
						t.Errorf("key %s on partition %d, the Java client's is %d", r.Key, r.Partition, want)
					}
				}
			}
		})
	}
}

// A produce whose answer is lost (the broker wrote it; the producer timed
// out and sent it again) is in the log once: the retry carries the same
// producer id and sequence, and the broker drops the copy.
func TestProduceRetriedAfterLostAnswerWritesOnce(t *testing.T) {
	c := fakeCluster(t, 1, "out")
	lost := testkit.NewLostAnswers(1)
	p, err := New(Config{Brokers: c.ListenAddrs(), Dial: lost.Dial, RequestTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var recs []Record
	for i := range 100 {
		recs = append(recs, Record{Value: fmt.Appendf(nil, "v%d", i)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.Produce(ctx, "out", recs); err != nil {
		t.Fatal(err)
	}
	if lost.Lost.Load() != 1 {
		t.Fatalf("%d answers lost; the test needs one", lost.Lost.Load())
	}
	if got := readAllRecords(t, c.ListenAddrs(), "out", len(recs)); len(got) != len(recs) {
		t.Fatalf("read %d records after a lost answer, produced %d", len(got), len(recs))
	}
}

// A record over the broker's limit fails alone, named by its index; the
// records around it are written.
func TestProduceTooLargeRecordFailsAlone(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "out"), kfake.BrokerConfigs(map[string]string{"message.max.bytes": "2000"}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := New(Config{Brokers: c.ListenAddrs()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	recs := []Record{{Value: []byte("a")}, {Value: make([]byte, 5000)}, {Value: []byte("c")}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = p.Produce(ctx, "out", recs)
	perr, ok := err.(*Error)
	if !ok || len(perr.Records) != 1 || perr.Records[0].Index != 1 {
		t.Fatalf("Produce = %v; want record 1 alone failed", err)
	}
	if got := readAllRecords(t, c.ListenAddrs(), "out", 2); len(got) != 2 {
		t.Fatalf("read %d records; want the 2 that fit", len(got))
	}
}

func TestProduceMissingTopicNamesIt(t *testing.T) {
	c := fakeCluster(t, 1, "out")
	p, err := New(Config{Brokers: c.ListenAddrs()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = p.Produce(ctx, "nope", []Record{{Value: []byte("x")}})
	if err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("Produce to a missing topic = %v; want an error naming it", err)
	}
}

// A broker that refuses a batch's sequence (OUT_OF_ORDER_SEQUENCE_NUMBER:
// it lost batches before it, or, here, the producer's count went wrong)
// did not write it: the producer takes a new producer id, starts the
// partition at sequence 0 and sends the batch again, once.
func TestProduceRefusedSequenceStartsANewProducerID(t *testing.T) {
	c := fakeCluster(t, 1, "out")
	p, err := New(Config{Brokers: c.ListenAddrs()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	batch := func(tag string) []Record {
		var recs []Record
		for i := range 10 {
			recs = append(recs, Record{Value: fmt.Appendf(nil, "%s%d", tag, i)})
		}
		return recs
	}
	if err := p.Produce(ctx, "out", batch("a")); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	firstPID := p.pid
	p.topics["out"].parts[0].seq += 5 // a gap the broker cannot accept
	p.mu.Unlock()
	if err := p.Produce(ctx, "out", batch("b")); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	secondPID := p.pid
	p.mu.Unlock()
	if secondPID == firstPID {
		t.Errorf("producer id %d kept after the broker refused its sequence", firstPID)
	}
	if got := readAllRecords(t, c.ListenAddrs(), "out", 20); len(got) != 20 {
		t.Fatalf("read %d records, produced 20 once each", len(got))
	}
}

// A batch given up while it may be in the log (every answer lost) fails
// its call and takes the producer id with it: the partition's sequence did
// not advance, so under the same id the next batch would carry the given-up
// batch's sequence, and a broker that had written that batch would drop
// the new one as its copy (without the new id, "next" is lost).
func TestProduceGivenUpUnsureBatchTakesTheProducerID(t *testing.T) {
	c := fakeCluster(t, 1, "out")
	lost := testkit.NewLostAnswers(2)
	p, err := New(Config{Brokers: c.ListenAddrs(), Dial: lost.Dial, RequestTimeout: time.Second, MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Produce(ctx, "out", []Record{{Value: []byte("maybe")}}); err == nil {
		t.Fatal("Produce succeeded with every answer lost")
	}
	if err := p.Produce(ctx, "out", []Record{{Value: []byte("next")}}); err != nil {
		t.Fatalf("the next produce: %v", err)
	}
	p.mu.Lock()
	gen := p.gen
	p.mu.Unlock()
	if gen != 2 {
		t.Errorf("%d producer ids used; want a second one after giving up a batch that may be in the log", gen)
	}
	// The given-up batch was written (its answers were lost, not its
	// request): at least once, as the error said.
	if got := readAllRecords(t, c.ListenAddrs(), "out", 2); len(got) != 2 {
		t.Fatalf("read %d records; want the given-up one and the next", len(got))
	}
}
