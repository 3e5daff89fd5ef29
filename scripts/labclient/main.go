// Command labclient is the zone lab's own Kafka client (scripts/zonelab.sh):
// small probes the lab needs faster than a JVM tool starts.
//
//	labclient isr -brokers B -topic T [-every 250ms]
//	    prints "EPOCH_MS UNDER_REPLICATED" every interval until killed: how
//	    many of T's partitions have fewer in-sync replicas than replicas
//	labclient leaders -brokers B -topic T [-every 250ms]
//	    prints "EPOCH_MS L1 L2 L3" every interval until killed: how many of
//	    T's partitions brokers 1, 2 and 3 lead (all -1 when the metadata
//	    request failed)
//	labclient lag -brokers B -topic T -group G [-timeout 120s]
//	    waits until G has committed the end of every partition of T
//	labclient lag -brokers B -topic T -group G -every 5s
//	    with -every: prints "EPOCH_MS LAG" every interval until SIGTERM,
//	    LAG the records of T that G has not committed ("-" when a request
//	    failed)
//	labclient visible -brokers B -topic T -column C -progress FILE [-from MS]
//	    a read_committed consumer of T (an output of logstore) from its
//	    start: per record, the time from the input record's timestamp (the
//	    output column C, as a JSON value's RFC 3339 time) to the moment the
//	    record is read, for the records whose C is at or after -from (epoch
//	    ms). Each input record is told by the logstore.source.partition and
//	    logstore.source.offset headers. Every second appends "EPOCH_MS
//	    RECORDS DISTINCT" to FILE; on SIGTERM prints one JSON line: records,
//	    distinct, measured, p50_ms, p99_ms, max_ms
//	labclient produce -brokers B -topic T -input FILE [-rate N]
//	    produces a capture file (the format of `logstore replay`) at N
//	    records/s, each record to its partition, riding out broker
//	    restarts: franz-go's idempotent producer neither loses, duplicates
//	    nor reorders a record, so record i stays at offset i/partitions.
//	    SIGTERM stops it after the records sent so far are acknowledged;
//	    either way it prints "produced K records into T": the first K lines
//	labclient topology -brokers B -topic T -members RACK,RACK,...
//	    prints T's partitions, replicas and brokers' racks, with one member
//	    per RACK given, as the JSON topology `logstore plan` reads
//	labclient read -brokers B -topic T -group G -rack R -out FILE
//	    the baseline a Go developer writes: kafka-go's own Reader in group G
//	    with its RackAffinityGroupBalancer (it places partitions by their
//	    leader's rack; the Reader always fetches from the leader). Writes
//	    "partition offset" per record to FILE until SIGTERM (the lab sends
//	    it once the group has committed every record)
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore/rack"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: labclient isr|leaders|lag|produce|topology|read FLAGS (see the package doc)")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	brokers := fs.String("brokers", "", "bootstrap brokers, comma-separated")
	topic := fs.String("topic", "", "topic")
	group := fs.String("group", "", "consumer group (lag, read)")
	every := fs.Duration("every", 250*time.Millisecond, "isr, leaders, lag: sampling interval (lag samples only when it is set)")
	timeout := fs.Duration("timeout", 120*time.Second, "lag: how long to wait")
	input := fs.String("input", "", "produce: capture file")
	rate := fs.Float64("rate", 0, "produce: records per second (0: as fast as it goes)")
	rack := fs.String("rack", "", "read: this member's rack")
	out := fs.String("out", "", "read: where the positions read go")
	members := fs.String("members", "", "topology: the members' racks, comma-separated")
	column := fs.String("column", "", "visible: the output column holding the input record's timestamp")
	progress := fs.String("progress", "", "visible: the file the progress lines go to")
	from := fs.Int64("from", 0, "visible: measure records whose timestamp is at or after this epoch ms")
	_ = fs.Parse(os.Args[2:])
	if *brokers == "" || *topic == "" {
		fmt.Fprintln(os.Stderr, "labclient: -brokers and -topic are required")
		os.Exit(2)
	}
	client := &kafka.Client{Addr: kafka.TCP(strings.Split(*brokers, ",")...), Timeout: 10 * time.Second}
	if os.Args[1] == "isr" || os.Args[1] == "leaders" {
		// kafka-go answers Metadata from its transport's cache, refreshed
		// every 6 s by default: a watcher would see a leader or an ISR
		// change up to 6 s late.
		client.Transport = &kafka.Transport{MetadataTTL: *every}
	}
	ctx := context.Background()
	var err error
	switch os.Args[1] {
	case "isr":
		err = watchISR(ctx, client, *topic, *every)
	case "leaders":
		err = watchLeaders(ctx, client, *topic, *every)
	case "lag":
		if flagSet(fs, "every") {
			err = watchLag(ctx, client, *topic, *group, *every)
		} else {
			err = waitCommitted(ctx, client, *topic, *group, *timeout)
		}
	case "visible":
		if *column == "" || *progress == "" {
			fmt.Fprintln(os.Stderr, "labclient visible: -column and -progress are required")
			os.Exit(2)
		}
		err = visible(ctx, strings.Split(*brokers, ","), *topic, *column, *progress, *from)
	case "produce":
		err = produce(ctx, strings.Split(*brokers, ","), *topic, *input, *rate)
	case "topology":
		err = topology(ctx, client, *topic, strings.Split(*members, ","))
	case "read":
		err = readGroup(ctx, strings.Split(*brokers, ","), *topic, *group, *rack, *out)
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "labclient:", err)
		os.Exit(1)
	}
}

// watchISR prints the count of under-replicated partitions of topic, with a
// -1 when the metadata request failed (a broker being stopped answers late).
func watchISR(ctx context.Context, c *kafka.Client, topic string, every time.Duration) error {
	for {
		n := -1
		mctx, cancel := context.WithTimeout(ctx, every*4)
		md, err := c.Metadata(mctx, &kafka.MetadataRequest{Topics: []string{topic}})
		cancel()
		if err == nil && len(md.Topics) == 1 && md.Topics[0].Error == nil {
			n = 0
			for _, p := range md.Topics[0].Partitions {
				if len(p.Isr) < len(p.Replicas) {
					n++
				}
			}
		}
		fmt.Printf("%d %d\n", time.Now().UnixMilli(), n)
		time.Sleep(every)
	}
}

// watchLeaders prints how many of topic's partitions each of the lab's
// three brokers leads: a restarted broker leads again only once a
// preferred-leader election gives its partitions back.
func watchLeaders(ctx context.Context, c *kafka.Client, topic string, every time.Duration) error {
	for {
		led := [3]int{-1, -1, -1}
		mctx, cancel := context.WithTimeout(ctx, every*4)
		md, err := c.Metadata(mctx, &kafka.MetadataRequest{Topics: []string{topic}})
		cancel()
		if err == nil && len(md.Topics) == 1 && md.Topics[0].Error == nil {
			led = [3]int{}
			for _, p := range md.Topics[0].Partitions {
				if id := p.Leader.ID; id >= 1 && id <= 3 {
					led[id-1]++
				}
			}
		}
		fmt.Printf("%d %d %d %d\n", time.Now().UnixMilli(), led[0], led[1], led[2])
		time.Sleep(every)
	}
}

// waitCommitted returns once group's committed offsets reach the end of
// every partition of topic.
func waitCommitted(ctx context.Context, c *kafka.Client, topic, group string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	lag := int64(-1)
	for time.Now().Before(deadline) {
		var err error
		if lag, err = groupLag(ctx, c, topic, group); err == nil && lag == 0 {
			return nil
		}
		time.Sleep(time.Second)
	}
	return fmt.Errorf("group %s still %d records behind on %s after %s", group, lag, topic, timeout)
}

// flagSet reports whether the command line gave the flag.
func flagSet(fs *flag.FlagSet, name string) (set bool) {
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// watchLag samples the lag of group on topic until SIGTERM.
func watchLag(ctx context.Context, c *kafka.Client, topic, group string, every time.Duration) error {
	ctx, cancel := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer cancel()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		// Longer than the interval: on a loaded machine a sample of 600
		// partitions' offsets took over 5 s, and a lost sample is a gap;
		// the ticker drops the ticks a slow sample overlaps.
		lctx, done := context.WithTimeout(ctx, max(every, 30*time.Second))
		lag, err := groupLag(lctx, c, topic, group)
		done()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			fmt.Printf("%d -\n", time.Now().UnixMilli())
		} else {
			fmt.Printf("%d %d\n", time.Now().UnixMilli(), lag)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func groupLag(ctx context.Context, c *kafka.Client, topic, group string) (int64, error) {
	md, err := c.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return 0, err
	}
	if len(md.Topics) != 1 || md.Topics[0].Error != nil {
		return 0, errors.New("no metadata for " + topic)
	}
	var reqs []kafka.OffsetRequest
	var parts []int
	for _, p := range md.Topics[0].Partitions {
		reqs = append(reqs, kafka.LastOffsetOf(p.ID))
		parts = append(parts, p.ID)
	}
	ends, err := c.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return 0, err
	}
	committed, err := c.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
	if err != nil {
		return 0, err
	}
	done := map[int]int64{}
	for _, p := range committed.Topics[topic] {
		done[p.Partition] = p.CommittedOffset
	}
	var lag int64
	for _, p := range ends.Topics[topic] {
		if p.Error != nil {
			return 0, p.Error
		}
		if c := max(done[p.Partition], 0); c < p.LastOffset {
			lag += p.LastOffset - c
		}
	}
	return lag, nil
}

// captured is one line of a capture file.
type captured struct {
	Key       string `json:"key"`
	Value     string `json:"value"`
	Timestamp int64  `json:"timestamp"`
	Partition int32  `json:"partition"`
}

func produce(ctx context.Context, brokers []string, topic, input string, rate float64) error {
	f, err := os.Open(input)
	if err != nil {
		return err
	}
	defer f.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic),
		// No delivery timeout: kgo measures it from the record's own timestamp,
		// and captured records carry event times from days ago.
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		// Uncompressed, as `logstore replay` sends them.
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		return err
	}
	defer cl.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var (
		sent    int
		failure = make(chan error, 1)
		start   = time.Now()
	)
	stop, cancel := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer cancel()
	for stop.Err() == nil && sc.Scan() {
		var c captured
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return fmt.Errorf("%s line %d: %w", input, sent+1, err)
		}
		r := &kgo.Record{Key: []byte(c.Key), Value: []byte(c.Value), Partition: c.Partition, Timestamp: time.UnixMilli(c.Timestamp)}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case failure <- err:
				default:
				}
			}
		})
		sent++
		select {
		case err := <-failure:
			return fmt.Errorf("producing to %s: %w", topic, err)
		default:
		}
		if rate > 0 {
			select {
			case <-time.After(time.Until(start.Add(time.Duration(float64(sent) / rate * float64(time.Second))))):
			case <-stop.Done():
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	select {
	case err := <-failure:
		return fmt.Errorf("producing to %s: %w", topic, err)
	default:
	}
	fmt.Printf("produced %d records into %s\n", sent, topic)
	return nil
}

func readGroup(ctx context.Context, brokers []string, topic, group, rack, out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers: brokers, Topic: topic, GroupID: group, StartOffset: kafka.FirstOffset,
		GroupBalancers: []kafka.GroupBalancer{kafka.RackAffinityGroupBalancer{Rack: rack}},
		MaxBytes:       1 << 20, CommitInterval: time.Second,
	})
	stop, cancel := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer cancel()
	n := 0
	for {
		m, err := r.ReadMessage(stop)
		if stop.Err() != nil {
			break
		}
		if err != nil {
			r.Close()
			return err
		}
		fmt.Fprintf(w, "%d %d\n", m.Partition, m.Offset)
		n++
	}
	if err := r.Close(); err != nil {
		return err
	}
	fmt.Printf("read %d records of %s in group %s as rack %s\n", n, topic, group, rack)
	return w.Flush()
}

// topology prints what `logstore plan --topology` reads: the brokers with
// their racks, topic's partitions, and a member in each of memberRacks. The lab's
// brokers serve follower fetches (RackAwareReplicaSelector).
func topology(ctx context.Context, c *kafka.Client, topic string, memberRacks []string) error {
	md, err := c.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return err
	}
	if len(md.Topics) != 1 || md.Topics[0].Error != nil {
		return errors.New("no metadata for " + topic)
	}
	ids := func(bs []kafka.Broker) []int {
		out := make([]int, len(bs))
		for i, b := range bs {
			out[i] = b.ID
		}
		return out
	}
	t := rack.Topology{FollowerFetching: true, Topics: []rack.TopologyTopic{{Name: topic}}}
	for _, b := range md.Brokers {
		t.Brokers = append(t.Brokers, rack.Broker{ID: b.ID, Rack: b.Rack})
	}
	for _, p := range md.Topics[0].Partitions {
		t.Topics[0].Partitions = append(t.Topics[0].Partitions,
			rack.TopologyPartition{ID: p.ID, Leader: p.Leader.ID, Replicas: ids(p.Replicas), ISR: ids(p.Isr)})
	}
	for i, r := range memberRacks {
		t.Members = append(t.Members, rack.TopologyMember{ID: fmt.Sprintf("member-%d-%s", i, r), Rack: r})
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	return enc.Encode(t)
}
