//go:build integration

package pipeline

// Group tests: logstore members, one per rack, run as real Jobs (group
// membership with the rack-aware balancer, fetch-from-follower readers,
// decoding, batching, the commit protocol) against the three-rack cluster of
// scripts/kafka-cluster.sh. Run them with
//
//	go test -tags integration -run TestGroup -count=1 -v ./pipeline/

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/internal/loggen"
	"github.com/logstore/logstore/internal/testkit"
	"github.com/logstore/logstore/pipeline/fetch"
	"github.com/logstore/logstore/rack"
	"github.com/logstore/logstore/sink"
)

// batchStore is the collecting sink a test's members share. It keeps batches
// by name, so a batch written again replaces the first copy, as in the files
// sink; exactly-once is then a property of the distinct batches.
type batchStore struct {
	mu       sync.Mutex
	batches  map[string]storedBatch
	rewrites int
	bad      []string // rows that do not belong to their batch, rewrites that differ
}

type storedBatch struct {
	member    string
	partition int
	offsets   []int64 // from the rows' kafka_offset column
}

func newBatchStore() *batchStore { return &batchStore{batches: map[string]storedBatch{}} }

// memberSink is one member's handle on the store.
type memberSink struct {
	store  *batchStore
	member string
}

func (s memberSink) Write(_ context.Context, b *sink.Batch) error {
	pi, oi := b.Schema.Index("kafka_partition"), b.Schema.Index("kafka_offset")
	got := storedBatch{member: s.member, partition: b.Partition, offsets: make([]int64, 0, len(b.Rows))}
	var bad []string
	for i, row := range b.Rows {
		p, _ := row[pi].(int32)
		o, _ := row[oi].(int64)
		if int(p) != b.Partition || o < b.First || o > b.Last || o != b.Sources[i].Offset {
			bad = append(bad, fmt.Sprintf("batch %s row %d: partition %v offset %v, source offset %d", b.Name(), i, row[pi], row[oi], b.Sources[i].Offset))
		}
		got.offsets = append(got.offsets, o)
	}
	s.store.mu.Lock()
	defer s.store.mu.Unlock()
	if old, ok := s.store.batches[b.Name()]; ok {
		s.store.rewrites++
		if !slices.Equal(old.offsets, got.offsets) {
			bad = append(bad, fmt.Sprintf("batch %s written again with other records: %d rows, then %d", b.Name(), len(old.offsets), len(got.offsets)))
		}
	}
	s.store.batches[b.Name()] = got
	s.store.bad = append(s.store.bad, bad...)
	return nil
}

func (memberSink) Close() error { return nil }

// covered counts the distinct offsets in [from[p], to[p]) the batches hold.
func (s *batchStore) covered(from, to map[int]int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[[2]int64]bool{}
	for _, b := range s.batches {
		for _, o := range b.offsets {
			if o >= from[b.partition] && o < to[b.partition] {
				seen[[2]int64{int64(b.partition), o}] = true
			}
		}
	}
	return len(seen)
}

// checkExactlyOnce fails unless the distinct batches hold every offset in
// [from[p], to[p]) of every partition exactly once, and nothing else.
func (s *batchStore) checkExactlyOnce(t *testing.T, from, to map[int]int64) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.bad {
		t.Error(b)
	}
	count := map[int]map[int64]int{}
	problems := 0
	for name, b := range s.batches {
		if count[b.partition] == nil {
			count[b.partition] = map[int64]int{}
		}
		for _, o := range b.offsets {
			if (o < from[b.partition] || o >= to[b.partition]) && problems < 10 {
				problems++
				t.Errorf("batch %s holds offset %d of partition %d, outside [%d, %d)", name, o, b.partition, from[b.partition], to[b.partition])
			}
			count[b.partition][o]++
		}
	}
	total := 0
	for p, end := range to {
		for o := from[p]; o < end; o++ {
			total++
			if n := count[p][o]; n != 1 && problems < 10 {
				problems++
				t.Errorf("partition %d offset %d written %d times; want once", p, o, n)
			}
		}
	}
	t.Logf("%d records in %d distinct batches (%d batches written twice under the same name)", total, len(s.batches), s.rewrites)
}

// partitionsBy lists the partitions each member wrote batches for.
func (s *batchStore) partitionsBy() map[string][]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]int{}
	for _, b := range s.batches {
		if !slices.Contains(out[b.member], b.partition) {
			out[b.member] = append(out[b.member], b.partition)
		}
	}
	for _, ps := range out {
		slices.Sort(ps)
	}
	return out
}

// groupOptions are what differ between the members of the tests.
type groupOptions struct {
	topic, group string
	follower     string            // rack.follower_fetching
	lease        time.Duration     // kafka.fetch.preferred_replica_lease; 0 keeps the default
	rate         map[string]int    // kafka.max_records_per_second by zone; 0 unlimited
	instance     map[string]string // kafka.group_instance_id by zone; "" dynamic
	rebalance    string            // kafka.rebalance; "" keeps the default
	revoke       string            // kafka.revoke; "" keeps the default
	protocol     string            // kafka.group_protocol; "" keeps the default
	leave        bool              // kafka.leave_on_shutdown
	session      time.Duration     // kafka.session_timeout; 0 is 10s
	maxAge       time.Duration     // batch.max_age; 0 is 1s
	// sink, when set, is the member's sink instead of the store's.
	sink func(zone string) sink.Sink
}

// memberConfig is a member's job config: rack static, short batches and
// timeouts; every record is a row carrying its partition and offset.
func memberConfig(t *testing.T, o groupOptions, zone string) *Config {
	t.Helper()
	lease := ""
	if o.lease > 0 {
		lease = "preferred_replica_lease: " + o.lease.String()
	}
	group := ""
	if id := o.instance[zone]; id != "" {
		group += "\n  group_instance_id: " + id
	}
	if o.rebalance != "" {
		group += "\n  rebalance: " + o.rebalance
	}
	if o.revoke != "" {
		group += "\n  revoke: " + o.revoke
	}
	if o.protocol != "" {
		group += "\n  group_protocol: " + o.protocol
	}
	if o.leave {
		group += "\n  leave_on_shutdown: true"
	}
	session := 10 * time.Second
	if o.session > 0 {
		session = o.session
	}
	maxAge := time.Second
	if o.maxAge > 0 {
		maxAge = o.maxAge
	}
	yaml := fmt.Sprintf(`
kafka:
  brokers: [%s]
  topics: [%s]
  group: %s
  client_id: logstore-%s
  isolation: read_uncommitted
  start_offset: earliest
  session_timeout: %s
  heartbeat_interval: 1s
  rebalance_timeout: 10s%s
  max_records_per_second: %d
  fetch:
    max_wait: 250ms
    %s
rack:
  static: %s
  providers: [static]
  follower_fetching: %s
schema:
  format: json
  columns:
    - {name: ts, type: timestamp, unit: ms, required: true}
    - {name: level, type: string, required: true}
    - {name: service, type: string, required: true}
    - {name: status, type: int32, source: http.status}
    - {name: kafka_partition, type: int32, source: kafka.partition}
    - {name: kafka_offset, type: int64, source: kafka.offset}
batch:
  max_age: %s
sinks:
  files: {url: %s}
dead_letter:
  on_error: fail
run:
  shutdown_timeout: 10s
  progress_interval: 5s
`, strings.Join(testkit.Brokers, ", "), o.topic, o.group, zone, session, group, o.rate[zone], lease, zone, o.follower, maxAge, t.TempDir())
	cfg, err := Parse(zone+".yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// member is one running logstore worker of a test group.
type member struct {
	zone    string
	job     *Job
	cancel  context.CancelFunc
	done    chan struct{}
	err     error
	elapsed time.Duration
}

// startMembers builds one Job per zone, then starts them together so they
// join the group at about the same time. Cleanup stops and closes them.
func startMembers(t *testing.T, o groupOptions, store *batchStore, mode Mode, racks ...string) []*member {
	t.Helper()
	var ms []*member
	for _, zone := range racks {
		log := slog.New(slog.NewTextHandler(testLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo})).With("zone", zone)
		var out sink.Sink = memberSink{store, zone}
		if o.sink != nil {
			out = o.sink(zone)
		}
		job, err := NewJob(context.Background(), memberConfig(t, o, zone), Deps{Log: log, Sinks: []sink.Sink{out}})
		if err != nil {
			t.Fatalf("member %s: %v", zone, err)
		}
		t.Cleanup(func() { job.Close() })
		if job.Rack().Rack != zone {
			t.Fatalf("member %s runs in rack %q", zone, job.Rack().Rack)
		}
		ms = append(ms, &member{zone: zone, job: job, done: make(chan struct{})})
	}
	for _, m := range ms {
		ctx, cancel := context.WithCancel(context.Background())
		m.cancel = cancel
		go func() {
			defer close(m.done)
			start := time.Now()
			m.err = m.job.Run(ctx, mode)
			m.elapsed = time.Since(start)
			t.Logf("member %s: run ended after %v: %v", m.zone, m.elapsed.Round(time.Millisecond), m.err)
		}()
	}
	t.Cleanup(func() {
		for _, m := range ms {
			m.cancel()
		}
		for _, m := range ms {
			<-m.done
		}
	})
	return ms
}

// stopAll ends the members' runs together (the graceful stop: flush,
// commit, leave) and waits for them.
func stopAll(t *testing.T, ms []*member) {
	t.Helper()
	for _, m := range ms {
		m.cancel()
	}
	for _, m := range ms {
		select {
		case <-m.done:
		case <-time.After(30 * time.Second):
			t.Fatalf("member %s did not stop within 30s of its context ending", m.zone)
		}
		if m.err != nil {
			t.Errorf("member %s: its run failed after %v: %v", m.zone, m.elapsed.Round(time.Millisecond), m.err)
		}
	}
}

// runUntilNow writes perPartition records to each partition of a fresh
// spreadRF3 topic, then runs one member per zone with --until now. It waits
// for every member to end on its own (at most 20 s after the sink holds
// every record) and checks that every record was written once.
func runUntilNow(t *testing.T, perPartition int, seed uint64, rate map[string]int) ([]*member, *batchStore) {
	t.Helper()
	client := testkit.RequireCluster(t)
	replicas := spreadRF3()
	topic := createGroupTopic(t, client, replicas...)
	produceLogs(t, topic, len(replicas), perPartition, seed)
	from, to := map[int]int64{}, endOffsets(t, client, topic, len(replicas))

	store := newBatchStore()
	o := groupOptions{topic: topic, group: groupName(t, ""), follower: "on", rate: rate}
	ms := startMembers(t, o, store, Mode{UntilNow: true}, zones...)
	waitCovered(t, store, from, to, 60*time.Second, ms...)
	waitEnded(t, ms, 20*time.Second)
	store.checkExactlyOnce(t, from, to)
	return ms, store
}

// waitEnded waits until every member's --until now run has ended by
// itself, at most limit, and fails for each that ended in an error.
func waitEnded(t *testing.T, ms []*member, limit time.Duration) {
	t.Helper()
	deadline := time.After(limit)
	for _, m := range ms {
		select {
		case <-m.done:
		case <-deadline:
			t.Fatalf("member %s still runs %v after every record was written and committed (generation %v); --until now must end by itself",
				m.zone, limit, generation(m.job))
		}
		if m.err != nil {
			t.Errorf("member %s: %v", m.zone, m.err)
		}
	}
}

// generation is the group generation the job last joined.
func generation(j *Job) float64 {
	families, _ := j.Metrics().reg.Gather()
	for _, f := range families {
		if f.GetName() == "logstore_group_generation" && len(f.GetMetric()) > 0 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}

// ended says whether every member's run has returned.
func ended(ms []*member) bool {
	for _, m := range ms {
		select {
		case <-m.done:
		default:
			return false
		}
	}
	return true
}

type testLogWriter struct{ t testing.TB }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// locality is what one member fetched, split by the broker's rack.
type locality struct {
	same, cross           int64
	crossFetches, fetches int64
	bytesByBroker         map[int32]int64
}

func localityOf(s fetch.Snapshot, zone string) locality {
	l := locality{same: s.SameRackBytes, cross: s.CrossRackBytes, bytesByBroker: map[int32]int64{}}
	for _, b := range s.Brokers {
		l.bytesByBroker[b.ID] = b.Bytes
		l.fetches += b.Fetches
		if b.Rack != zone {
			l.crossFetches += b.Fetches
		}
	}
	return l
}

// since is l minus an earlier reading.
func (l locality) since(before locality) locality {
	d := locality{same: l.same - before.same, cross: l.cross - before.cross,
		crossFetches: l.crossFetches - before.crossFetches, fetches: l.fetches - before.fetches,
		bytesByBroker: map[int32]int64{}}
	for id, n := range l.bytesByBroker {
		d.bytesByBroker[id] = n - before.bytesByBroker[id]
	}
	return d
}

func (l locality) share() float64 {
	if l.same+l.cross == 0 {
		return 0
	}
	return float64(l.same) / float64(l.same+l.cross)
}

// groupName is unique per run.
func groupName(t *testing.T, suffix string) string {
	return fmt.Sprintf("logstore-%s%s-%d", testkit.UnsafeTopicChars.ReplaceAllString(t.Name(), "-"), suffix, time.Now().UnixNano())
}

// produceLogs writes perPartition loggen records to each of the topic's
// partitions, acknowledged by every in-sync replica.
func produceLogs(t *testing.T, topic string, partitions, perPartition int, seed uint64) {
	t.Helper()
	cl := testkit.Producer(t, topic)
	defer cl.Close()
	gen := loggen.New(seed, time.Now().Add(-time.Hour), time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const chunk = 100
	for i := 0; i < perPartition; i += chunk {
		var recs []*kgo.Record
		for p := range partitions {
			for range min(chunk, perPartition-i) {
				recs = append(recs, logRecord(gen, p))
			}
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
}

func logRecord(gen *loggen.Gen, partition int) *kgo.Record {
	key, value, at := gen.Next()
	return &kgo.Record{Partition: int32(partition), Key: slices.Clone(key), Value: slices.Clone(value), Timestamp: at}
}

// endOffsets are the high watermarks of partitions 0..n-1.
func endOffsets(t *testing.T, client *kafka.Client, topic string, n int) map[int]int64 {
	t.Helper()
	return afterLeadersSettle(t, "listing the end offsets of "+topic, 30*time.Second, func(ctx context.Context) (map[int]int64, error) {
		return listOffsets(ctx, client, topic, partitionIDs(n), kafka.ReadUncommitted, kafka.LastOffsetOf)
	})
}

func partitionIDs(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// groupAssignment asks the coordinator what each member (by rack, from its
// client id) holds; stable is false until the group is stable with members
// members. franz-go's kmsg reads the answer: kafka-go's DescribeGroups
// refuses a cooperative member's subscription (it reads version 0 only).
func groupAssignment(ctx context.Context, _ *kafka.Client, group string, members int) (assigned map[string][]int, stable bool) {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, describeClient())
	if err != nil || len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		return nil, false
	}
	g := resp.Groups[0]
	out := map[string][]int{}
	for _, m := range g.Members {
		zone := strings.TrimPrefix(m.ClientID, "logstore-")
		var a kmsg.ConsumerMemberAssignment
		if err := a.ReadFrom(m.MemberAssignment); err != nil {
			return nil, false
		}
		for _, tp := range a.Topics {
			for _, p := range tp.Partitions {
				out[zone] = append(out[zone], int(p))
			}
		}
		slices.Sort(out[zone])
	}
	return out, g.State == "Stable" && len(g.Members) == members
}

// describeClient is one franz-go client for every test's DescribeGroups.
var describeClient = sync.OnceValue(func() *kgo.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(testkit.Brokers...))
	if err != nil {
		panic(err)
	}
	return cl
})

// waitForBalance waits until the group is stable with the members, each
// holding per partitions.
func waitForBalance(t *testing.T, client *kafka.Client, group string, ms []*member, per int, limit time.Duration) map[string][]int {
	t.Helper()
	deadline := time.Now().Add(limit)
	var last map[string][]int
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		got, stable := groupAssignment(ctx, client, group, len(ms))
		cancel()
		last = got
		balanced := stable
		for _, m := range ms {
			balanced = balanced && len(got[m.zone]) == per
		}
		if balanced {
			return got
		}
		requireRunning(t, ms)
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("group %s not balanced at %d partitions per member within %v; last seen %v", group, per, limit, last)
	return nil
}

// requireRunning fails the test if a member's run ended.
func requireRunning(t *testing.T, ms []*member) {
	t.Helper()
	for _, m := range ms {
		select {
		case <-m.done:
			t.Fatalf("member %s ended after %v: %v", m.zone, m.elapsed.Round(time.Millisecond), m.err)
		default:
		}
	}
}

// waitCovered waits until the store holds every offset in [from, to). It
// gives up early when every member's run has ended.
func waitCovered(t *testing.T, store *batchStore, from, to map[int]int64, limit time.Duration, ms ...*member) {
	t.Helper()
	want := 0
	for p, end := range to {
		want += int(end - from[p])
	}
	deadline := time.Now().Add(limit)
	for {
		got := store.covered(from, to)
		if got == want {
			return
		}
		if time.Now().After(deadline) || len(ms) > 0 && ended(ms) {
			t.Fatalf("the sink holds %d of %d records", got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// spreadRF3 is 12 partitions with replicas on all three brokers, leaders
// taking turns.
func spreadRF3() [][]int {
	var out [][]int
	for p := range 12 {
		switch p % 3 {
		case 0:
			out = append(out, []int{1, 2, 3})
		case 1:
			out = append(out, []int{2, 3, 1})
		default:
			out = append(out, []int{3, 1, 2})
		}
	}
	return out
}

var zones = []string{"az-a", "az-b", "az-c"}

// createGroupTopic is testkit.CreateTopic (which waits until every
// broker's metadata has the topic: a member asks whichever broker it
// reaches).
func createGroupTopic(t *testing.T, client *kafka.Client, replicas ...[]int) string {
	t.Helper()
	return testkit.CreateTopic(t, client, replicas...)
}

// TestGroupReadsZoneLocally: three members, one per rack, read an RF 3 topic
// to its end (--until now). Every member reads 4 partitions, all from
// brokers in its own rack but for the leaders' first answers that name the
// local replica, and the three together write every record once.
func TestGroupReadsZoneLocally(t *testing.T) {
	const partitions = 12
	ms, store := runUntilNow(t, 2000, 1, nil)
	by := store.partitionsBy()
	for _, m := range ms {
		l := localityOf(m.job.FetchStats().Snapshot(), m.zone)
		s := m.job.Summary()
		t.Logf("member %s: %v, %d records, %d rows; same-rack %d B, cross-rack %d B in %d of %d fetches (share %.4f); bytes by broker %v; wrote partitions %v",
			m.zone, m.elapsed.Round(time.Millisecond), s.Records, s.Rows, l.same, l.cross, l.crossFetches, l.fetches, l.share(), l.bytesByBroker, by[m.zone])
		if l.share() < 0.99 {
			t.Errorf("member %s: same-rack share %.4f; want >= 0.99", m.zone, l.share())
		}
		// Only the leaders' answers naming the local replica cross racks:
		// no records, a few hundred bytes each.
		if l.cross > 1024*l.crossFetches {
			t.Errorf("member %s: %d cross-rack bytes in %d fetches; want each under 1 KiB (no records across racks)", m.zone, l.cross, l.crossFetches)
		}
		if len(by[m.zone]) != partitions/len(zones) {
			t.Errorf("member %s wrote partitions %v; want %d", m.zone, by[m.zone], partitions/len(zones))
		}
	}
}

// TestGroupUntilNowEndsAfterAMemberLeft: with --until now, a member that
// reaches its end offsets first stays in the group until the others have
// read theirs (a member that left at its own share could leave a dead
// member's partitions unread). Every member must end once the group is
// done, without rebalancing over and over.
func TestGroupUntilNowEndsAfterAMemberLeft(t *testing.T) {
	// az-a and az-c read at 1,500 records/s, so az-b is done seconds before
	// them and waits.
	ms, _ := runUntilNow(t, 1000, 4, map[string]int{"az-a": 1500, "az-c": 1500})
	for _, m := range ms {
		snap := m.job.FetchStats().Snapshot()
		t.Logf("member %s: ended after %v in generation %v; %d seed connections, by broker %v", m.zone, m.elapsed.Round(time.Millisecond), generation(m.job), snap.SeedDials, brokerDials(snap))
		if g := generation(m.job); g > 10 {
			t.Errorf("member %s ended in generation %v: the group rebalanced over and over", m.zone, g)
		}
		// One control and one fetch-session connection per broker, kept
		// across the generations: readers of a new generation dial nothing.
		for id, n := range brokerDials(snap) {
			if n > 2 {
				t.Errorf("member %s opened %d connections to broker %d over %v generations; want at most 2, kept across generations", m.zone, n, id, generation(m.job))
			}
		}
	}
}

func brokerDials(s fetch.Snapshot) map[int32]int64 {
	out := map[int32]int64{}
	for _, b := range s.Brokers {
		out[b.ID] = b.Dials
	}
	return out
}

// rf2Replicas places 12 RF 2 partitions so the zones hold different replica
// sets: az-c (broker 3) holds only three of them and leads one, so neither a
// leader-only nor a follower-fetching group can read everything locally, and
// the two optima differ.
var rf2Replicas = [][]int{
	{1, 2}, {1, 2}, {1, 2}, {1, 2}, {1, 2}, {1, 3}, {1, 2},
	{2, 1}, {2, 1}, {2, 1}, {2, 3},
	{3, 1},
}

// TestGroupRF2LocalShareEqualsPlannerOptimum: on an RF 2 topic, the share of
// bytes three members (one per rack) read within their rack is the
// planner's optimum local/total, with follower fetching and leader-only.
func TestGroupRF2LocalShareEqualsPlannerOptimum(t *testing.T) {
	client := testkit.RequireCluster(t)
	const partitions, perPartition = 12, 1000
	for _, tc := range []struct {
		follower string
		on       bool
	}{{"on", true}, {"off", false}} {
		t.Run("follower_fetching_"+tc.follower, func(t *testing.T) {
			topic := createGroupTopic(t, client, rf2Replicas...)
			optimum := plannerOptimum(t, client, topic, tc.on)
			if optimum.Local == optimum.Total {
				t.Fatalf("the planner reads all %d partitions locally; the topology no longer tells optimum from luck", optimum.Total)
			}

			// Records are produced once the group is balanced, so the bytes
			// measured are those of the final assignment, not of the
			// members that joined first and briefly held more.
			store := newBatchStore()
			o := groupOptions{topic: topic, group: groupName(t, ""), follower: tc.follower}
			ms := startMembers(t, o, store, Mode{}, zones...)
			assigned := waitForBalance(t, client, o.group, ms, partitions/len(zones), 30*time.Second)
			local := 0
			for zone, ps := range assigned {
				for _, p := range ps {
					if readsLocally(rf2Replicas[p], zone, tc.on) {
						local++
					}
				}
			}
			t.Logf("group assignment %v: %d of %d partitions local; planner optimum %d of %d", assigned, local, partitions, optimum.Local, optimum.Total)
			if local != optimum.Local {
				t.Errorf("the group reads %d partitions locally; the planner's optimum is %d", local, optimum.Local)
			}

			before := map[string]locality{}
			for _, m := range ms {
				before[m.zone] = localityOf(m.job.FetchStats().Snapshot(), m.zone)
			}
			from := endOffsets(t, client, topic, partitions)
			produceLogs(t, topic, partitions, perPartition, 2)
			to := endOffsets(t, client, topic, partitions)
			waitCovered(t, store, from, to, 30*time.Second)
			var sum locality
			for _, m := range ms {
				d := localityOf(m.job.FetchStats().Snapshot(), m.zone).since(before[m.zone])
				t.Logf("member %s (partitions %v): same-rack %d B, cross-rack %d B, share %.4f; bytes by broker %v",
					m.zone, assigned[m.zone], d.same, d.cross, d.share(), d.bytesByBroker)
				sum.same += d.same
				sum.cross += d.cross
			}
			stopAll(t, ms)
			store.checkExactlyOnce(t, from, to)

			want := float64(optimum.Local) / float64(optimum.Total)
			t.Logf("local share %.4f; planner optimum %d/%d = %.4f", sum.share(), optimum.Local, optimum.Total, want)
			if d := sum.share() - want; d < -0.01 || d > 0.01 {
				t.Errorf("local share %.4f; want the planner's optimum %.4f ± 0.01", sum.share(), want)
			}
		})
	}
}

// readsLocally says whether a member in zone reads a partition with these
// replicas (the first leads) in its own rack.
func readsLocally(replicas []int, zone string, follower bool) bool {
	if !follower {
		return testkit.Racks[replicas[0]] == zone
	}
	return slices.ContainsFunc(replicas, func(id int) bool { return testkit.Racks[id] == zone })
}

// plannerOptimum runs rack.Plan on the topic's live topology with one
// member per zone.
func plannerOptimum(t *testing.T, client *kafka.Client, topic string, follower bool) rack.PlanResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		t.Fatal(err)
	}
	c := rack.Cluster{FollowerFetching: follower}
	for _, b := range md.Brokers {
		c.Brokers = append(c.Brokers, rack.Broker{ID: b.ID, Rack: b.Rack})
	}
	ids := func(bs []kafka.Broker) []int {
		var out []int
		for _, b := range bs {
			out = append(out, b.ID)
		}
		return out
	}
	for _, p := range md.Topics[0].Partitions {
		c.Partitions = append(c.Partitions, rack.Partition{Topic: topic, ID: p.ID, Leader: p.Leader.ID, Replicas: ids(p.Replicas), ISR: ids(p.Isr)})
	}
	if len(c.Partitions) != len(rf2Replicas) {
		t.Fatalf("metadata lists %d partitions of %s; want %d", len(c.Partitions), topic, len(rf2Replicas))
	}
	var members []rack.Member
	for _, z := range zones {
		members = append(members, rack.Member{ID: z, Rack: z, Topics: []string{topic}})
	}
	return rack.Plan(c, members)
}

// TestGroupFailoverWhenLocalBrokerStops: three members stream an RF 3 topic
// while records keep arriving. When the az-a broker stops, the az-a member
// goes on from brokers in other racks within 10 s; when it returns, the
// member reads in its rack again; nothing is lost or written twice.
func TestGroupFailoverWhenLocalBrokerStops(t *testing.T) {
	client := testkit.RequireCluster(t)
	const partitions = 12
	topic, group, stopped := outageSetup(t, client, 1)

	// Records arrive once the group is balanced: the joins' rebalances are
	// not what this test is about.
	store := newBatchStore()
	o := groupOptions{topic: topic, group: group, follower: "on", lease: 2 * time.Second}
	ms := startMembers(t, o, store, Mode{}, zones...)
	a := ms[0]
	assigned := waitForBalance(t, client, group, ms, partitions/len(zones), 30*time.Second)
	t.Logf("group assignment %v", assigned)

	// From now on, one record per partition every 20 ms.
	produced, stopProducer := produceSteadily(t, topic, partitions)
	defer stopProducer()

	// rows is what the az-a member has committed; fetched what it read,
	// split by rack.
	rows := func() int64 { return a.job.Stats().Rows.Load() }
	fetched := func() locality { return localityOf(a.job.FetchStats().Snapshot(), a.zone) }
	waitFor := func(what string, limit time.Duration, ok func() bool) time.Time {
		t.Helper()
		return waitWhileRunning(t, ms[:1], what, limit, ok) // the others' failures are reported at the end
	}
	start := fetched()
	startRows := rows()
	waitFor("the az-a member reading and committing in its rack", 20*time.Second, func() bool {
		return fetched().same-start.same > 16<<10 && rows() > startRows
	})
	before := fetched()
	t.Logf("before the stop: az-a member same-rack %d B, cross-rack %d B, %d rows", before.same, before.cross, rows())

	stopAt := time.Now()
	stopped.Store(true)
	testkit.ClusterScript(t, "stop-node", "1")
	down := time.Now()
	atDown, rowsAtDown := fetched(), rows()
	crossAt := waitFor("the az-a member reading from another rack", 30*time.Second, func() bool {
		return fetched().cross-atDown.cross > 8<<10
	})
	rowsAtCross := rows()
	committedAt := waitFor("the az-a member committing records read from another rack", 30*time.Second, func() bool {
		return rows() > rowsAtCross
	})
	t.Logf("stop-node 1 took %v; after the node was down the az-a member read records across racks in %v and committed them in %v (rows %d -> %d)",
		down.Sub(stopAt).Round(time.Millisecond), crossAt.Sub(down).Round(time.Millisecond), committedAt.Sub(down).Round(time.Millisecond), rowsAtDown, rows())
	if committedAt.Sub(down) > 10*time.Second {
		t.Errorf("the az-a member took %v after its broker went down to commit records read elsewhere; want within 10s", committedAt.Sub(down))
	}
	if same := fetched().same - atDown.same; same != 0 {
		t.Errorf("%d same-rack bytes while the only az-a broker was down", same)
	}

	startAt := time.Now()
	testkit.ClusterScript(t, "start-node", "1")
	stopped.Store(false)
	up := time.Now()
	atUp := fetched()
	backAt := waitFor("the az-a member reading in its rack again", 60*time.Second, func() bool {
		return fetched().same-atUp.same > 16<<10
	})
	t.Logf("start-node 1 took %v; local reads again %v after it was up (lease %v)",
		up.Sub(startAt).Round(time.Millisecond), backAt.Sub(up).Round(time.Millisecond), o.lease)

	stopProducer()
	finishExactlyOnce(t, client, topic, partitions, produced.Load(), store, ms)
	for _, m := range ms {
		l := localityOf(m.job.FetchStats().Snapshot(), m.zone)
		t.Logf("member %s: %d rows; same-rack %d B, cross-rack %d B (share %.4f); bytes by broker %v",
			m.zone, m.job.Summary().Rows, l.same, l.cross, l.share(), l.bytesByBroker)
	}
}

// groupAwayFrom returns a fresh group name whose coordinator is neither on
// broker down nor preferring it (the first replica of its __consumer_offsets
// partition), so stopping that broker tests the readers, not a coordinator
// move.
func groupAwayFrom(t *testing.T, client *kafka.Client, down int) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A fresh cluster creates __consumer_offsets at the first
	// FindCoordinator; wait until every partition of it has a leader.
	var md *kafka.MetadataResponse
	for {
		var err error
		_, _ = client.FindCoordinator(ctx, &kafka.FindCoordinatorRequest{Key: "logstore-probe"})
		md, err = client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{"__consumer_offsets"}})
		if err == nil && len(md.Topics) == 1 && md.Topics[0].Error == nil && len(md.Topics[0].Partitions) > 0 &&
			!slices.ContainsFunc(md.Topics[0].Partitions, func(p kafka.Partition) bool { return p.Leader.Host == "" }) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("reading __consumer_offsets metadata: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// A cluster whose brokers started one by one may have every
	// __consumer_offsets partition led by the first one up until the
	// leader rebalance (minutes later): elect the preferred leaders now.
	if moved := movedLeaders(md.Topics[0].Partitions); len(moved) > 0 {
		if _, err := client.ElectLeaders(ctx, &kafka.ElectLeadersRequest{Topic: "__consumer_offsets", Partitions: moved, Timeout: 10 * time.Second}); err != nil {
			t.Logf("electing the preferred leaders of __consumer_offsets: %v", err)
		}
		for len(moved) > 0 && ctx.Err() == nil {
			time.Sleep(200 * time.Millisecond)
			if m, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{"__consumer_offsets"}}); err == nil && len(m.Topics) == 1 && m.Topics[0].Error == nil {
				md, moved = m, movedLeaders(m.Topics[0].Partitions)
			}
		}
	}
	offsets := map[int]kafka.Partition{}
	for _, p := range md.Topics[0].Partitions {
		offsets[p.ID] = p
	}
	for i := range 100 {
		name := groupName(t, fmt.Sprint("-", i))
		// The coordinator's partition: Java's String.hashCode, made
		// non-negative with Kafka's Utils.abs, modulo the partition count.
		var h int32
		for _, c := range []byte(name) {
			h = 31*h + int32(c)
		}
		n := int64(h)
		switch {
		case h == math.MinInt32:
			n = 0
		case n < 0:
			n = -n
		}
		p := offsets[int(n%int64(len(offsets)))]
		if p.Leader.ID == down || p.Replicas[0].ID == down {
			continue
		}
		fc, err := client.FindCoordinator(ctx, &kafka.FindCoordinatorRequest{Key: name})
		if err == nil && fc.Error == nil && fc.Coordinator.NodeID != p.Leader.ID {
			t.Fatalf("group %s: the coordinator is broker %d, but its __consumer_offsets partition %d is led by %d", name, fc.Coordinator.NodeID, p.ID, p.Leader.ID)
		}
		return name
	}
	t.Fatalf("no group name found whose coordinator avoids broker %d", down)
	return ""
}

// movedLeaders lists the partitions not led by their preferred (first)
// replica.
func movedLeaders(ps []kafka.Partition) []int {
	var out []int
	for _, p := range ps {
		if len(p.Replicas) > 0 && p.Leader.ID != p.Replicas[0].ID {
			out = append(out, p.ID)
		}
	}
	return out
}
