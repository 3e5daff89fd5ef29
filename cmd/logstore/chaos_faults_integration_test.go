//go:build integration

package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/internal/loggen"
	"github.com/logstore/logstore/internal/testkit"
)

// spoolDiskBytes is the size of the filesystem the chaos members spool on:
// room for every open batch's files (the flood's dead letters compress to
// little), small enough to fill in a moment.
const spoolDiskBytes = 16 << 20

// stallSlack is how long a partition may stand still outside the faults:
// the rebalance after a killed member is dropped from the group (a kill's
// fault lasts until the coordinator drops the dead member: its session
// timeout, 10 s, or longer, see untilDropped), the partition's restart on
// its new owner, a retry's backoff that began during a fault, and the
// pauses between faults that come one after another.
const stallSlack = 45 * time.Second

// keepFull keeps the disk of filler full for d: what the members free
// (a batch's spool files, once uploaded) is taken again at once, so a
// write in that time meets ENOSPC, not the room the last upload left.
func keepFull(t *testing.T, filler string, d time.Duration) {
	t.Helper()
	f, err := os.OpenFile(filler, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatalf("keeping the spool's disk full: %v", err)
	}
	defer f.Close()
	block := make([]byte, 4<<10)
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		for {
			if _, err := f.Write(block); err != nil {
				break
			}
		}
	}
}

// oddRecord is where a record produceOddRecords added landed.
type oddRecord struct {
	partition int
	offset    int64
	bad       bool // malformed: a dead letter
}

type oddRecords struct{ offsets []oddRecord }

// microsAsMillis is a record timestamp written in microseconds by a
// producer that meant milliseconds: the year 58,000 or so, outside what a
// Parquet timestamp of a dead letter can hold. Kafka before 4.0 accepts it;
// 4.0 only with message.timestamp.after.max.ms raised on the topic.
var microsAsMillis = e2eStart.UnixMicro()

// produceOddRecords appends, after the perPartition records each partition
// holds: a flood of flood malformed records of about 12 KiB in partition 1
// (together more than a member's memory budget), and five records stamped
// in microseconds as milliseconds in partition 2, three malformed, two good.
func produceOddRecords(t *testing.T, topic string, perPartition, flood int) oddRecords {
	t.Helper()
	client := &kafka.Client{Addr: kafka.TCP(strings.Split(bootstrap, ",")...), Timeout: 30 * time.Second}
	resp, err := client.IncrementalAlterConfigs(context.Background(), &kafka.IncrementalAlterConfigsRequest{Resources: []kafka.IncrementalAlterConfigsRequestResource{{
		ResourceType: kafka.ResourceTypeTopic, ResourceName: topic,
		Configs: []kafka.IncrementalAlterConfigsRequestConfig{{Name: "message.timestamp.after.max.ms", Value: "9223372036854775807", ConfigOperation: kafka.ConfigOperationSet}},
	}}})
	if err == nil && len(resp.Resources) > 0 {
		err = resp.Resources[0].Error
	}
	if err != nil {
		t.Fatalf("letting %s take timestamps far in the future: %v", topic, err)
	}
	var odd oddRecords
	to := func(p int) kafka.Balancer {
		return kafka.BalancerFunc(func(kafka.Message, ...int) int { return p })
	}
	w := &kafka.Writer{Addr: kafka.TCP(strings.Split(bootstrap, ",")...), Topic: topic, RequiredAcks: kafka.RequireAll,
		BatchSize: 50, BatchTimeout: 5 * time.Millisecond, Compression: kafka.Lz4, Balancer: to(1)} // 50 records: 600 KiB, under max.message.bytes
	filler := strings.Repeat("truncated ", 1200)
	msgs := make([]kafka.Message, flood)
	for i := range msgs {
		msgs[i] = kafka.Message{Value: fmt.Appendf(nil, `{"level": "info", "msg": "flood %d %s`, i, filler), Time: e2eStart}
		odd.offsets = append(odd.offsets, oddRecord{partition: 1, offset: int64(perPartition + i), bad: true})
	}
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatalf("producing the flood: %.300v", err)
	}
	w.Close()

	gen := loggen.New(5, e2eStart, time.Millisecond)
	var values [][]byte
	for i := range 5 {
		bad := i%2 == 0
		value := []byte(`{"level": "warn", "ts": 17`)
		if !bad {
			_, v, _ := gen.Next()
			value = append([]byte(nil), v...)
		}
		values = append(values, value)
		odd.offsets = append(odd.offsets, oddRecord{partition: 2, offset: int64(perPartition + i), bad: bad})
	}
	produceAtMillis(t, topic, 2, microsAsMillis, values)
	return odd
}

// produceAtMillis produces values to a partition with the record timestamp
// ms as it is. Go's clients (kafka-go, franz-go) turn a time into
// milliseconds through nanoseconds, which overflow past the year 2262, so
// the batch (magic 2) is made here and sent in a Produce v7 request.
func produceAtMillis(t *testing.T, topic string, partition int, ms int64, values [][]byte) {
	t.Helper()
	client := &kafka.Client{Addr: kafka.TCP(strings.Split(bootstrap, ",")...), Timeout: 30 * time.Second}
	md, err := client.Metadata(context.Background(), &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil || len(md.Topics) != 1 {
		t.Fatalf("metadata of %s: %v", topic, err)
	}
	var leader kafka.Broker
	for _, p := range md.Topics[0].Partitions {
		if p.ID == partition {
			leader = p.Leader
		}
	}
	var records []byte
	for i, v := range values {
		var r []byte
		r = append(r, 0)              // attributes
		r = binary.AppendVarint(r, 0) // timestamp delta
		r = binary.AppendVarint(r, int64(i))
		r = binary.AppendVarint(r, -1) // no key
		r = binary.AppendVarint(r, int64(len(v)))
		r = append(r, v...)
		r = binary.AppendVarint(r, 0) // no headers
		records = append(binary.AppendVarint(records, int64(len(r))), r...)
	}
	var tail []byte // what the CRC covers: attributes to the end
	tail = binary.BigEndian.AppendUint16(tail, 0)
	tail = binary.BigEndian.AppendUint32(tail, uint32(len(values)-1))
	tail = binary.BigEndian.AppendUint64(tail, uint64(ms))
	tail = binary.BigEndian.AppendUint64(tail, uint64(ms))
	tail = binary.BigEndian.AppendUint64(tail, ^uint64(0)) // no producer id
	tail = binary.BigEndian.AppendUint16(tail, 0xffff)
	tail = binary.BigEndian.AppendUint32(tail, 0xffffffff)
	tail = binary.BigEndian.AppendUint32(tail, uint32(len(values)))
	tail = append(tail, records...)
	var batch []byte
	batch = binary.BigEndian.AppendUint64(batch, 0)
	batch = binary.BigEndian.AppendUint32(batch, uint32(4+1+4+len(tail)))
	batch = binary.BigEndian.AppendUint32(batch, 0xffffffff) // partition leader epoch
	batch = append(batch, 2)                                 // magic
	batch = binary.BigEndian.AppendUint32(batch, crc32.Checksum(tail, crc32.MakeTable(crc32.Castagnoli)))
	batch = append(batch, tail...)

	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 7, -1, 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = int32(partition), batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(leader.Host, strconv.Itoa(leader.Port)), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	// The topic's raised message.timestamp.after.max.ms reaches the
	// leader a moment after the change: until then INVALID_TIMESTAMP.
	for attempt := 1; ; attempt++ {
		if _, err := conn.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("chaos")).AppendRequest(nil, req, int32(attempt))); err != nil {
			t.Fatal(err)
		}
		var head [8]byte
		if _, err := io.ReadFull(conn, head[:]); err != nil {
			t.Fatal(err)
		}
		body := make([]byte, binary.BigEndian.Uint32(head[:4])-4)
		if _, err := io.ReadFull(conn, body); err != nil {
			t.Fatal(err)
		}
		res := kmsg.NewPtrProduceResponse()
		res.Version = 7
		if err := res.ReadFrom(body); err != nil {
			t.Fatal(err)
		}
		code := res.Topics[0].Partitions[0].ErrorCode
		if code == 0 {
			return
		}
		if kafka.Error(code) != kafka.InvalidTimestamp || attempt == 50 {
			t.Fatalf("producing records stamped %d ms to %s/%d: %v", ms, topic, partition, kafka.Error(code))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stall is the longest a partition stood still with records left to read.
type stall struct {
	partition int
	d         time.Duration // how long it stood still
	outside   time.Duration // of d, the time no fault was under way
	at        time.Time     // when it began
	offset    int64         // the committed offset it stood at
	metadata  string        // that commit's metadata
}

// s3BehindProxy is a bucket the members reach through a fault proxy (the
// test's AWS_ENDPOINT_URL_S3 from here on) and the server's own endpoint,
// for pyarrow and for members that must not meet the faults.
func s3BehindProxy(t *testing.T) (bucket, direct string, proxy *testkit.FaultProxy) {
	t.Helper()
	bucket = s3Env(t)
	direct = os.Getenv("AWS_ENDPOINT_URL_S3")
	proxy = testkit.StartFaultProxy(t, direct)
	t.Setenv("AWS_ENDPOINT_URL_S3", proxy.URL)
	return bucket, direct, proxy
}

// window is when a fault was under way.
type window struct{ from, to time.Time }

// faultWindows records the faults of a run as they happen.
type faultWindows struct {
	mu   sync.Mutex
	list []window
}

// add records a fault that began at from and ended now.
func (f *faultWindows) add(from time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.list = append(f.list, window{from, time.Now()})
}

// outside is how much of [from, to) no fault covered.
func (f *faultWindows) outside(from, to time.Time) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	ws := slices.Clone(f.list)
	slices.SortFunc(ws, func(a, b window) int { return a.from.Compare(b.from) })
	free, at := time.Duration(0), from // at: covered or counted up to here
	for _, w := range ws {
		if !w.to.After(at) {
			continue
		}
		if w.from.After(at) {
			free += min(w.from.Sub(at), to.Sub(at))
		}
		if !w.to.Before(to) {
			return free
		}
		at = w.to
	}
	return free + max(to.Sub(at), 0)
}

// watchStalls polls the group's committed offsets until stop is called and
// returns the stall that lasted longest outside the faults: the time a
// partition's offset stayed where it was below its end, less the time
// faults were under way then. Faults that come one after another add up;
// only the time between and after them is the job's own. A partition with
// no committed offset (deleted by the test) is not judged until it has one
// again.
func watchStalls(t *testing.T, group, topic string, ends []int64, faults *faultWindows) (stop func() stall) {
	client := &kafka.Client{Addr: kafka.TCP(strings.Split(bootstrap, ",")...), Timeout: 10 * time.Second}
	parts := make([]int, len(ends))
	for p := range parts {
		parts[p] = p
	}
	last := make([]int64, len(ends))
	meta := make([]string, len(ends))
	since := make([]time.Time, len(ends))
	for p := range since {
		since[p] = time.Now()
	}
	var (
		mu    sync.Mutex
		worst stall
	)
	judge := func(p int, now time.Time) {
		st := stall{partition: p, d: now.Sub(since[p]), outside: faults.outside(since[p], now), at: since[p], offset: last[p], metadata: meta[p]}
		if st.outside > worst.outside {
			worst = st
		}
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			case <-time.After(500 * time.Millisecond):
			}
			resp, err := client.OffsetFetch(context.Background(), &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
			if err != nil {
				continue // a broker stopped by the test: the next poll sees it
			}
			now := time.Now()
			mu.Lock()
			for _, po := range resp.Topics[topic] {
				p, o := po.Partition, po.CommittedOffset
				switch {
				case o < 0:
				case o != last[p]:
					last[p], meta[p], since[p] = o, po.Metadata, now
				case o < ends[p]:
					judge(p, now)
				}
			}
			mu.Unlock()
		}
	}()
	return func() stall {
		close(done)
		<-finished
		mu.Lock()
		defer mu.Unlock()
		return worst
	}
}

// checkEveryFile reads every Parquet file below out (rows, dead letters,
// everything) with pyarrow, verifying each page's checksum: a file that
// does not read back whole is a corrupt one (scripts/chaos/checkfiles.py).
func checkEveryFile(t *testing.T, out string) {
	t.Helper()
	res, err := exec.Command("python3", filepath.Join("..", "..", "scripts", "chaos", "checkfiles.py"), out).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("checking every file: %v\n%s", err, msg)
	}
	var v struct {
		Files   int               `json:"files"`
		Rows    int               `json:"rows"`
		Corrupt map[string]string `json:"corrupt"`
	}
	if err := json.Unmarshal(res, &v); err != nil {
		t.Fatalf("checkfiles.py said %s: %v", res, err)
	}
	for f, why := range v.Corrupt {
		t.Errorf("%s does not read back: %s", f, why)
	}
	if v.Files == 0 {
		t.Error("no file read back")
	}
	t.Logf("every file read back with its checksums: %d files, %d rows", v.Files, v.Rows)
}

// stallTimeline is what explains a stall, for a failed run's log: the
// group coordinator's lines about group from the brokers' logs and the
// members' generations, departures, warnings and lines about the stalled
// partition, from a little before the stall to its end, in time order.
func stallTimeline(t *testing.T, group string, st stall, members []*chaosMember) string {
	from, to := st.at.Add(-5*time.Second), st.at.Add(st.d+5*time.Second)
	type line struct {
		at   time.Time
		text string
	}
	var lines []line
	keep := func(at time.Time, text string) {
		if !at.Before(from) && !at.After(to) {
			lines = append(lines, line{at, text})
		}
	}
	brokerLogs, _ := filepath.Glob(filepath.Join(testkit.StateDir(t), "kafka", "node-*", "logs", "server.log*"))
	for _, name := range brokerLogs {
		b, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		node := filepath.Base(filepath.Dir(filepath.Dir(name)))
		for l := range strings.Lines(string(b)) {
			// [2026-12-04 20:37:13,087] INFO [GroupCoordinator id=2 ...] ...
			if !strings.Contains(l, group) || len(l) < 25 || l[0] != '[' {
				continue
			}
			at, err := time.ParseInLocation("2006-01-02 15:04:05,000", l[1:24], time.Local)
			if err == nil {
				keep(at, node+": "+strings.TrimSpace(l[25:]))
			}
		}
	}
	partition := fmt.Sprintf(`"partition":%d,`, st.partition)
	for i, m := range members {
		for l := range strings.Lines(m.logs()) {
			var rec struct {
				Time  time.Time `json:"time"`
				Level string    `json:"level"`
				Msg   string    `json:"msg"`
			}
			if json.Unmarshal([]byte(l), &rec) != nil {
				continue
			}
			if rec.Msg == "generation" || rec.Level == "WARN" || rec.Level == "ERROR" || strings.Contains(l, partition) ||
				strings.Contains(rec.Msg, "group") {
				keep(rec.Time, fmt.Sprintf("member %d (%s): %s", i, m.rack, strings.TrimSpace(l)))
			}
		}
	}
	slices.SortStableFunc(lines, func(a, b line) int { return a.at.Compare(b.at) })
	var b strings.Builder
	fmt.Fprintf(&b, "what happened around the stall of partition %d at offset %d (metadata %q) (%s to %s):\n", st.partition, st.offset, st.metadata, from.Format("15:04:05.000"), to.Format("15:04:05.000"))
	const most = 150
	for i, l := range lines {
		if i == most {
			fmt.Fprintf(&b, "... and %d lines more\n", len(lines)-most)
			break
		}
		text := l.text
		if len(text) > 400 {
			text = text[:400] + "…"
		}
		fmt.Fprintf(&b, "%s %s\n", l.at.Format("15:04:05.000"), text)
	}
	return b.String()
}

// addUntil records a fault that began at from and ends when the call to
// until returns.
func (f *faultWindows) addUntil(from time.Time, until func()) {
	until()
	f.add(from)
}

// memberID is the member id a member's log last names (when the
// coordinator named it, in each generation), "" if none.
func memberID(log string) string {
	id := ""
	for l := range strings.Lines(log) {
		var rec struct{ Msg, Member string }
		if json.Unmarshal([]byte(l), &rec) == nil && rec.Member != "" &&
			(rec.Msg == "generation" || rec.Msg == "the coordinator named this member") {
			id = rec.Member
		}
	}
	return id
}

// untilDropped waits until the group's coordinator no longer counts
// member among group's members (at most limit). A SIGKILLed dynamic
// member stays in the group until its session times out, longer when it
// died with a JoinGroup under way (the coordinator keeps a member awaiting
// join until the join completes, up to the rebalance timeout) or as the
// generation's leader (the others wait in SyncGroup until its session
// ends): time the protocol takes, not the job.
func untilDropped(group, member string, limit time.Duration) {
	client := &kafka.Client{Addr: kafka.TCP(strings.Split(bootstrap, ",")...), Timeout: 10 * time.Second}
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		resp, err := client.DescribeGroups(context.Background(), &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
		if err != nil || len(resp.Groups) != 1 || resp.Groups[0].Error != nil {
			continue
		}
		if !slices.ContainsFunc(resp.Groups[0].Members, func(m kafka.DescribeGroupsResponseMember) bool { return m.MemberID == member }) {
			return
		}
	}
}
