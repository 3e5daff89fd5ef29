package sink

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/internal/kafka/producer"
)

func TestAppendRowJSON(t *testing.T) {
	rows := allTypesRows()
	want := []string{
		`{"ts_ms":"2026-11-29T07:05:03.123456789Z","s":"héllo","i32":-7,"i64":1099511627776,"f32":1.5,"f64":2.25,"b":true,` +
			`"ts_us":"2026-11-29T07:05:03.123456789Z","d":"2026-11-29","raw":"AAEC","doc":{"a":[1,2]},` +
			`"labels":{"":"empty key","a":"1","b":"2","null":null},"req_labels":{"k":"v"},"req_s":"x"}`,
		`{"ts_ms":"2026-11-29T07:05:04.123456789Z","s":null,"i32":null,"i64":null,"f32":null,"f64":null,"b":null,` +
			`"ts_us":null,"d":null,"raw":null,"doc":null,"labels":null,"req_labels":{},"req_s":""}`,
		`{"ts_ms":"2026-11-29T07:05:05.123456789Z","s":"","i32":2147483647,"i64":-9223372036854775808,"f32":"-Infinity","f64":"NaN","b":false,` +
			`"ts_us":"1969-12-31T23:59:59.999999Z","d":"1969-12-31","raw":"","doc":null,"labels":{},"req_labels":{"a":""},"req_s":"y"}`,
	}
	for i, r := range rows {
		got, err := appendRowJSON(nil, allTypes, r)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want[i] {
			t.Errorf("row %d:\n got %s\nwant %s", i, got, want[i])
		}
		if !json.Valid(got) {
			t.Errorf("row %d: invalid JSON %s", i, got)
		}
	}
}

func TestAppendRowJSONStrings(t *testing.T) {
	s := &Schema{Fields: []Field{{Name: "s", Type: String}, {Name: "j", Type: JSON}, {Name: "f", Type: Float32}}}
	got, err := appendRowJSON(nil, s, Row{"q\"b\\n\n\t\x01\xff€", "{not json", float32(math.Inf(1))})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"s":"q\"b\\n\n\t\u0001\ufffd€","j":"{not json","f":"Infinity"}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	var back map[string]any
	if err := json.Unmarshal(got, &back); err != nil || back["s"] != "q\"b\\n\n\t\x01\uFFFD€" {
		t.Errorf("round trip: %v %q", err, back["s"])
	}
}

func kafkaBatch() *Batch {
	rows := logRows(time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC), 50)
	b := &Batch{Topic: "in", Partition: 7, First: 100, Last: 160, Schema: logSchema, Rows: rows}
	for i := range rows {
		b.Sources = append(b.Sources, Source{Offset: 100 + int64(i), Value: []byte("original-" + strconv.Itoa(i))})
	}
	return b
}

func TestKafkaRecords(t *testing.T) {
	b := kafkaBatch()
	for _, value := range KafkaValues {
		cfg := &KafkaOutputConfig{Topic: "out", Key: "service", Value: value}
		cfg.setDefaults()
		msgs, err := kafkaRecords(cfg, b)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range msgs {
			if string(m.Key) != b.Rows[i][2] {
				t.Errorf("%s: key %q, want %q", value, m.Key, b.Rows[i][2])
			}
			wantValue := string(b.Sources[i].Value)
			if value == "json" {
				j, _ := appendRowJSON(nil, logSchema, b.Rows[i])
				wantValue = string(j)
			}
			if string(m.Value) != wantValue {
				t.Errorf("%s: value %q, want %q", value, m.Value, wantValue)
			}
			got := map[string]string{}
			for _, h := range m.Headers {
				got[h.Key] = string(h.Value)
			}
			checkSourceHeaders(t, got, "in", 7, 100+int64(i))
		}
	}
	cfg := &KafkaOutputConfig{Topic: "out", Value: "original", BatchBytes: 1024}
	cfg.setDefaults()
	b.Sources[3].Value = make([]byte, 2000)
	_, err := kafkaRecords(cfg, b)
	var re *RowError
	if !errors.As(err, &re) || re.Offset != 103 {
		t.Errorf("a record over batch_bytes: %v, want a RowError for offset 103", err)
	}
	b.Sources = nil
	if _, err := kafkaRecords(cfg, b); err == nil {
		t.Error("value: original without sources: no error")
	}
}

func checkSourceHeaders(t *testing.T, got map[string]string, topic string, partition int, offset int64) {
	t.Helper()
	want := map[string]string{
		HeaderSourceTopic:     topic,
		HeaderSourcePartition: strconv.Itoa(partition),
		HeaderSourceOffset:    strconv.FormatInt(offset, 10),
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("header %s = %q, want %q", k, got[k], v)
		}
	}
}

// TestKafkaWrite produces to an in-process cluster (kfake) and reads back.
func TestKafkaWrite(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cfg := &KafkaOutputConfig{Topic: "out", Key: "trace_id"}
	cfg.setDefaults()
	k, err := newKafka(cfg, c.ListenAddrs(), KafkaDeps{})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := k.Preflight(ctx); err != nil {
		t.Fatal(err)
	}
	b := kafkaBatch()
	start := time.Now()
	if err := k.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 900*time.Millisecond {
		t.Errorf("Write took %s; the batch timeout should keep a partial batch well under kafka-go's 1s", d)
	}
	seen := map[int64]bool{}
	readOut(ctx, c.ListenAddrs(), 3, func(m kafka.Message) {
		off, _ := strconv.ParseInt(headerValue(m, HeaderSourceOffset), 10, 64)
		i := int(off - 100)
		if j, _ := appendRowJSON(nil, logSchema, b.Rows[i]); string(m.Value) != string(j) {
			t.Errorf("offset %d: value %s", off, m.Value)
		}
		got := map[string]string{}
		for _, h := range m.Headers {
			got[h.Key] = string(h.Value)
		}
		checkSourceHeaders(t, got, "in", 7, off)
		seen[off] = true
	})
	if len(seen) != len(b.Rows) {
		t.Errorf("read back %d of %d records", len(seen), len(b.Rows))
	}

	missing := &KafkaOutputConfig{Topic: "nope"}
	missing.setDefaults()
	k2, _ := newKafka(missing, c.ListenAddrs(), KafkaDeps{})
	defer k2.Close()
	if err := k2.Preflight(ctx); err == nil {
		t.Error("preflight took a missing topic")
	}
}

func headerValue(m kafka.Message, key string) string {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

func TestKafkaPartitionerRackAwareWhenTheZoneMatched(t *testing.T) {
	for _, c := range []struct {
		set     string
		matched bool
		want    producer.Partitioner
	}{
		{"", true, producer.RackAware},
		{"", false, producer.Sticky},
		{PartitionerSticky, true, producer.Sticky},
		{PartitionerRackAware, false, producer.RackAware},
	} {
		cfg := &KafkaOutputConfig{Topic: "t", Partitioner: c.set}
		if got := cfg.partitioner(c.matched); got != c.want {
			t.Errorf("partitioner %q, zone matched %v: %s, want %s", c.set, c.matched, got, c.want)
		}
	}
}

// TestKafkaPreflightWaitsForATopicJustCreated: a topic created a moment
// before the job starts may not be known to every broker yet (KRaft's
// metadata reaches the brokers one by one); the sink's start asks again
// for a few seconds before it says the topic does not exist. Before, the
// first answer without it failed the start (TestKafkaIntegrationKeylessRowsStayInTheMembersZone
// failed so in CI, 0.2 s after creating its topic). A topic still missing
// after that fails the start, naming the key.
func TestKafkaPreflightWaitsForATopicJustCreated(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cfg := &KafkaOutputConfig{Topic: "late"}
	cfg.setDefaults()
	k, err := newKafka(cfg, c.ListenAddrs(), KafkaDeps{})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	go func() {
		time.Sleep(time.Second)
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "late", 1, 1
		req.Topics = append(req.Topics, rt)
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
		if err == nil {
			_, _ = req.RequestWith(context.Background(), cl)
			cl.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := k.Preflight(ctx); err != nil {
		t.Fatalf("a topic created 1 s into the start: %v", err)
	}

	missing := &KafkaOutputConfig{Topic: "never"}
	missing.setDefaults()
	m, err := newKafka(missing, c.ListenAddrs(), KafkaDeps{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Preflight(ctx); err == nil || !strings.Contains(err.Error(), "sinks.kafka.topic") {
		t.Errorf("a topic that never comes: %v; want an error naming sinks.kafka.topic", err)
	}
}

// Write waits for the rows it produces, so they go at once: a batch
// timeout is for rows nobody waits for. Before, every Write and every
// Stage of a partial batch waited it out (50 ms by default, per chunk of
// a catch-up).
func TestKafkaWriteDoesNotWaitOutTheBatchTimeout(t *testing.T) {
	c := fakeOut(t)
	k := lingeringKafka(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := k.Write(ctx, kafkaBatch()); err != nil {
		t.Fatalf("a Write of a partial batch with batch_timeout 10m: %v", err)
	}
}

// Stage produces without waiting; Write, at the cut, returns only once
// every staged row is written, producing again what failed on the way:
// the cut's offset is committed after Write, so at least once holds with
// staging that does not wait.
func TestKafkaStagedRowsAreWrittenBeforeWriteReturns(t *testing.T) {
	c := fakeOut(t)
	failFirstProduce(c)
	k := lingeringKafka(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	whole := kafkaBatch()
	stageKafkaInChunks(ctx, t, k, whole, 10, 0)
	if writes := writeStaged(ctx, t, k, whole); writes < 2 {
		t.Errorf("the first Write succeeded though the first produce failed")
	}
}

// A Stage's buffers go to a later Stage only once the brokers acknowledged
// its records. More is staged than may be in flight (so Stage waits for the
// oldest and makes the next records of their buffers) while the first
// produce fails (so failed records are sent again from theirs): every row
// still reaches the output with its own value.
func TestKafkaStagedBuffersAreUsedAgainOnlyOnceAcknowledged(t *testing.T) {
	c := fakeOut(t)
	failFirstProduce(c)
	k := lingeringKafka(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rows := logRows(time.Date(2026, 12, 7, 7, 0, 0, 0, time.UTC), 8000)
	whole := &Batch{Topic: "in", Partition: 7, First: 100, Last: 100 + int64(len(rows)) - 1, Schema: logSchema, Rows: rows}
	for i := range rows {
		whole.Sources = append(whole.Sources, Source{Offset: 100 + int64(i)})
	}
	staged := stageKafkaInChunks(ctx, t, k, whole, 250, 5)
	if staged <= k.stagedInFlight() {
		t.Fatalf("at most %d bytes were in flight, not over the %d that make Stage wait and reuse buffers", staged, k.stagedInFlight())
	}
	writeStaged(ctx, t, k, whole)
}

// stageKafkaInChunks stages whole's rows n at a time, each chunk tried again up
// to retries times as the worker does (a Stage that waits for earlier rows
// reports their failed produce), and returns the most the sink held in
// flight after a chunk.
func stageKafkaInChunks(ctx context.Context, t *testing.T, k *Kafka, whole *Batch, n, retries int) (held int64) {
	t.Helper()
	for at := 0; at < len(whole.Rows); at += n {
		chunk := *whole
		chunk.Rows, chunk.Sources, chunk.Staged = whole.Rows[at:at+n], whole.Sources[at:at+n], at
		for try := 0; ; try++ {
			_, err := k.Stage(ctx, &chunk)
			if err == nil {
				break
			}
			if try >= retries {
				t.Fatalf("staging rows %d..: %v", at, err)
			}
			t.Logf("staging rows %d..: %v", at, err) // the failed produce, sent again
		}
		held = max(held, k.HeldBytes(whole.Topic, whole.Partition, whole.Prefix))
	}
	return held
}

// writeStaged cuts the batch whose rows whole.Rows were staged, trying Write
// again as the worker does, and checks that every row is in topic "out"
// with its own value; it returns how many Writes it took.
func writeStaged(ctx context.Context, t *testing.T, k *Kafka, whole *Batch) (writes int) {
	t.Helper()
	rows := whole.Rows
	cut := *whole
	cut.Rows, cut.Sources, cut.Staged = nil, nil, len(rows)
	for {
		writes++
		err := k.Write(ctx, &cut)
		if err == nil {
			break
		}
		if writes > 5 {
			t.Fatalf("Write after %d attempts: %v", writes, err)
		}
		t.Logf("Write %d: %v", writes, err)
	}
	if k.HeldBytes(whole.Topic, whole.Partition, whole.Prefix) != 0 {
		t.Error("the sink still holds staged records after Write")
	}
	seen := map[int64]int{}
	readOut(ctx, k.brokers, 3, func(m kafka.Message) {
		off, _ := strconv.ParseInt(headerValue(m, HeaderSourceOffset), 10, 64)
		if off < whole.First || off-whole.First >= int64(len(rows)) {
			t.Errorf("a record with source offset header %q, not one of the batch's", headerValue(m, HeaderSourceOffset))
			return
		}
		if j, _ := appendRowJSON(nil, logSchema, rows[off-whole.First]); string(m.Value) != string(j) {
			t.Errorf("offset %d: value %.80s, want %.80s", off, m.Value, j)
		}
		seen[off]++
	})
	for i := range rows {
		if seen[whole.First+int64(i)] == 0 {
			t.Errorf("source offset %d is not in the output", whole.First+int64(i))
		}
	}
	return writes
}

// failFirstProduce fails every partition of c's first produce request with
// an error no retry mends: its records come back failed to the sink.
func failFirstProduce(c *kfake.Cluster) {
	c.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		req := kreq.(*kmsg.ProduceRequest)
		res := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = 29 // TOPIC_AUTHORIZATION_FAILED
				st.Partitions = append(st.Partitions, sp)
			}
			res.Topics = append(res.Topics, st)
		}
		return res, nil, true
	})
}

// fakeOut is a one-broker kfake cluster with a 3-partition topic "out".
func fakeOut(t *testing.T) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "out"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// lingeringKafka is a Kafka sink on c whose batches not waited for wait
// ten minutes for more rows.
func lingeringKafka(t *testing.T, c *kfake.Cluster) *Kafka {
	t.Helper()
	cfg := &KafkaOutputConfig{Topic: "out", BatchTimeout: 10 * time.Minute}
	cfg.setDefaults()
	k, err := newKafka(cfg, c.ListenAddrs(), KafkaDeps{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	return k
}

// appendJSONString copies runs of plain bytes whole; what it writes is
// the byte-at-a-time quoting's, wherever the bytes to escape or check fall
// against its eight-byte steps.
func TestAppendJSONStringMatchesByteAtATime(t *testing.T) {
	pieces := []string{"a", "hello world", "\"", "\\", "\n", "\r", "\t", "\x01", "\x1f", "\x7f", "é", "€", "😀", "\xff", "\xe2\x82", "\xef\xbf\xbd", " ", "0123456789abcdef"}
	rng := uint64(1)
	next := func(n int) int { rng = rng*6364136223846793005 + 1442695040888963407; return int(rng>>33) % n }
	for range 20000 {
		var sb strings.Builder
		for range next(12) {
			sb.WriteString(pieces[next(len(pieces))])
		}
		s := sb.String()
		if got, want := string(appendJSONString(nil, s)), string(quoteByteAtATime(s)); got != want {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
	}
}

// quoteByteAtATime is the quoting appendJSONString does, one byte at a
// time (its code before runs were copied whole).
func quoteByteAtATime(s string) []byte {
	const hex = "0123456789abcdef"
	dst := []byte{'"'}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, `\ufffd`...)
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}

// BenchmarkKafkaRecords makes the Kafka output's records of realistic log
// rows (logSchema) as Stage does: each row's JSON value, its source
// headers. MB/s counts the values' bytes. One goroutine: per core.
func BenchmarkKafkaRecords(b *testing.B) {
	const n = 1000
	rows := logRows(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC), n)
	batch := &Batch{Topic: "in", Partition: 3, First: 1_000_000, Schema: logSchema, Rows: rows}
	cfg := &KafkaOutputConfig{Topic: "out"}
	cfg.setDefaults()
	recs, err := kafkaRecords(cfg, batch)
	if err != nil {
		b.Fatal(err)
	}
	var size int64
	for i := range recs {
		size += int64(len(recs[i].Value))
	}
	// first-guess: the JSON buffer sized at 256 bytes a row (these rows'
	// JSON is ~500), grown as it fills; learned: sized from the last
	// encoding (Kafka.records); pooled: the buffers of records the
	// brokers acknowledged used again, as Stage does.
	k := &Kafka{cfg: cfg}
	for _, v := range []struct {
		name   string
		encode func() ([]producer.Record, error)
	}{
		{"first-guess", func() ([]producer.Record, error) { return kafkaRecords(cfg, batch) }},
		{"learned", func() ([]producer.Record, error) { return k.records(batch, new(recordBuffers)) }},
		{"pooled", func() ([]producer.Record, error) {
			rb := getRecordBuffers()
			defer rb.put()
			return k.records(batch, rb)
		}},
	} {
		b.Run(v.name, func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.encode(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/row")
		})
	}
}

// readOut hands fn every record of topic "out"'s partitions, each read
// until a second passes without one.
func readOut(ctx context.Context, brokers []string, partitions int, fn func(kafka.Message)) {
	for p := range partitions {
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: "out", Partition: p, MaxWait: 100 * time.Millisecond})
		for {
			rctx, rcancel := context.WithTimeout(ctx, time.Second)
			m, err := r.ReadMessage(rctx)
			rcancel()
			if err != nil {
				break
			}
			fn(m)
		}
		r.Close()
	}
}
