//go:build integration

package pipeline

// Membership tests: the group member of pipeline/group under joins,
// restarts and twins, as real Jobs against the three-rack cluster. Run
// them with
//
//	go test -tags integration -run 'TestGroup(Cooperative|Static|Revoked)' -count=1 -v ./pipeline/

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logstore/logstore/internal/testkit"
	"github.com/logstore/logstore/pipeline/worker"
	"github.com/logstore/logstore/sink"
)

// metricValue is the job's metric name (the sum of its series), -1 when
// absent.
func metricValue(j *Job, name string) float64 {
	families, _ := j.Metrics().reg.Gather()
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		v := 0.0
		for _, m := range f.GetMetric() {
			switch {
			case m.GetCounter() != nil:
				v += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				v += m.GetGauge().GetValue()
			}
		}
		return v
	}
	return -1
}

func workerStarts(m *member) float64 { return metricValue(m.job, "logstore_partition_starts_total") }

// subset says whether every element of a is in b.
func subset(a, b []int) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// TestGroupCooperativeJoinKeepsWorkers: two members read twelve partitions
// while records arrive; a third joins. The two that stay keep reading the
// partitions they keep: none of their workers is started again (their
// start counts do not move), only the partitions the newcomer takes move,
// and every record is written once. Under kafka.rebalance: eager (kafka-go's
// ConsumerGroup, and this project before its own member) every worker of
// both is started again.
func TestGroupCooperativeJoinKeepsWorkers(t *testing.T) {
	for _, tc := range []struct {
		rebalance string
		keep      bool // the staying members' workers go on
	}{{RebalanceCooperative, true}, {RebalanceEager, false}} {
		t.Run(tc.rebalance, func(t *testing.T) {
			const partitions = 12
			client := testkit.RequireCluster(t)
			topic := createGroupTopic(t, client, spreadRF3()...)
			produced, stopProducing := produceSteadily(t, topic, partitions)
			defer stopProducing()
			store := newBatchStore()
			o := groupOptions{topic: topic, group: groupName(t, ""), follower: "on", rebalance: tc.rebalance}
			ab := startMembers(t, o, store, Mode{}, "az-a", "az-b")
			before := waitForBalance(t, client, o.group, ab, partitions/2, 60*time.Second)
			time.Sleep(2 * time.Second) // the members start what they were given
			starts := map[string]float64{}
			for _, m := range ab {
				starts[m.zone] = workerStarts(m)
			}
			c := startMembers(t, o, store, Mode{}, "az-c")
			all := append(slices.Clone(ab), c...)
			after := waitForBalance(t, client, o.group, all, partitions/3, 60*time.Second)
			time.Sleep(2 * time.Second) // the members start what they were given
			for _, m := range ab {
				got := workerStarts(m)
				t.Logf("member %s: partitions %v, then %v; workers started %v, then %v (generation %v)", m.zone, before[m.zone], after[m.zone], starts[m.zone], got, generation(m.job))
				if !subset(after[m.zone], before[m.zone]) {
					t.Errorf("member %s was given %v, having %v: a join must only take partitions away from the members that stay", m.zone, after[m.zone], before[m.zone])
				}
				if restarted := got != starts[m.zone]; restarted == tc.keep {
					t.Errorf("member %s: %v workers started before the join, %v after; want them kept: %v", m.zone, starts[m.zone], got, tc.keep)
				}
			}
			stopProducing()
			finishExactlyOnce(t, client, topic, partitions, produced.Load(), store, all)
		})
	}
}

// slowSink writes to the store after a pause that ends early when ctx
// ends, as an upload cut short does: a partition revoked mid-write.
type slowSink struct {
	memberSink
	pause   time.Duration
	mu      sync.Mutex
	writing map[int]bool // partitions with a write under way
}

func (s *slowSink) Write(ctx context.Context, b *sink.Batch) error {
	s.mu.Lock()
	s.writing[b.Partition] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.writing, b.Partition)
		s.mu.Unlock()
	}()
	select {
	case <-time.After(s.pause):
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.memberSink.Write(ctx, b)
}

func (s *slowSink) busy() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for p := range s.writing {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// TestGroupRevokedWhileBatchWritten: every write of member az-a takes
// three seconds (a slow upload), so when az-c joins, the partitions az-a
// must give up are being written. With kafka.revoke: handover the write is
// cut short and the batch dropped; the new owner re-cuts it at the same
// offsets (its mark was committed) under the same name. With write, az-a
// finishes the write and commits before the partition moves. Either way
// every record is written once, and a batch written twice holds the same
// records.
func TestGroupRevokedWhileBatchWritten(t *testing.T) {
	for _, revoke := range []string{RevokeHandover, RevokeWrite} {
		t.Run(revoke, func(t *testing.T) {
			const partitions = 12
			client := testkit.RequireCluster(t)
			topic := createGroupTopic(t, client, spreadRF3()...)
			produced, stopProducing := produceSteadily(t, topic, partitions)
			defer stopProducing()
			store := newBatchStore()
			slow := &slowSink{memberSink: memberSink{store, "az-a"}, pause: 3 * time.Second, writing: map[int]bool{}}
			o := groupOptions{topic: topic, group: groupName(t, ""), follower: "on", revoke: revoke, maxAge: 4 * time.Second,
				sink: func(zone string) sink.Sink {
					if zone == "az-a" {
						return slow
					}
					return memberSink{store, zone}
				}}
			ab := startMembers(t, o, store, Mode{}, "az-a", "az-b")
			waitForBalance(t, client, o.group, ab, partitions/2, 60*time.Second)
			// Join while az-a writes most of its partitions.
			waitWhileRunning(t, ab, "az-a writing four batches at once", 30*time.Second, func() bool { return len(slow.busy()) >= 4 })
			busy := slow.busy()
			joined := time.Now()
			c := startMembers(t, o, store, Mode{}, "az-c")
			all := append(slices.Clone(ab), c...)
			after := waitForBalance(t, client, o.group, all, partitions/3, 60*time.Second)
			t.Logf("az-a was writing %v when az-c joined; balanced after %v: %v", busy, time.Since(joined).Round(time.Millisecond), after)
			stopProducing()
			finishExactlyOnce(t, client, topic, partitions, produced.Load(), store, all)
			store.mu.Lock()
			t.Logf("revoke %s: %d distinct batches, %d written twice under one name", revoke, len(store.batches), store.rewrites)
			store.mu.Unlock()
		})
	}
}

// TestGroupStaticRestartCausesNoRebalance: three static members; az-b stops
// (the graceful stop of a rolling restart: it writes what it holds and,
// being static, does not leave) and a new process with its instance id
// starts within the session timeout. It gets az-b's partitions back and
// the others never notice: their generation stays, none of their workers
// restarts. Every record once.
func TestGroupStaticRestartCausesNoRebalance(t *testing.T) {
	const partitions = 12
	client := testkit.RequireCluster(t)
	topic := createGroupTopic(t, client, spreadRF3()...)
	produced, stopProducing := produceSteadily(t, topic, partitions)
	defer stopProducing()
	store := newBatchStore()
	o := groupOptions{topic: topic, group: groupName(t, ""), follower: "on",
		instance: map[string]string{"az-a": "logstore-0", "az-b": "logstore-1", "az-c": "logstore-2"}}
	ms := startMembers(t, o, store, Mode{}, zones...)
	before := waitForBalance(t, client, o.group, ms, partitions/3, 60*time.Second)
	time.Sleep(2 * time.Second) // batches under way in every partition
	type seen struct{ gen, starts float64 }
	others := []*member{ms[0], ms[2]}
	was := map[string]seen{}
	for _, m := range others {
		was[m.zone] = seen{generation(m.job), workerStarts(m)}
	}
	ms[1].cancel()
	<-ms[1].done
	if ms[1].err != nil {
		t.Fatalf("az-b's stop: %v", ms[1].err)
	}
	restarted := startMembers(t, o, store, Mode{}, "az-b")[0]
	waitWhileRunning(t, []*member{restarted}, "the restarted az-b in a generation", 30*time.Second, func() bool { return generation(restarted.job) > 0 })
	all := []*member{ms[0], restarted, ms[2]}
	after := waitForBalance(t, client, o.group, all, partitions/3, 30*time.Second)
	if !slices.Equal(after["az-b"], before["az-b"]) {
		t.Errorf("the restarted az-b holds %v; it held %v", after["az-b"], before["az-b"])
	}
	time.Sleep(3 * time.Second) // a rebalance the restart caused would show by now
	for _, m := range others {
		now := seen{generation(m.job), workerStarts(m)}
		t.Logf("member %s: generation %v, workers started %v; before the restart %v, %v", m.zone, now.gen, now.starts, was[m.zone].gen, was[m.zone].starts)
		if now != was[m.zone] {
			t.Errorf("member %s noticed az-b's restart: generation %v and %v workers started, before %v and %v", m.zone, now.gen, now.starts, was[m.zone].gen, was[m.zone].starts)
		}
	}
	if g := generation(restarted.job); g != was["az-a"].gen {
		t.Errorf("the restarted az-b joined generation %v; the group was in %v", g, was["az-a"].gen)
	}
	stopProducing()
	finishExactlyOnce(t, client, topic, partitions, produced.Load(), store, all)
}

// TestGroupStaticTwinFenced: a second process starts with the instance id
// of a running static member (two pods given one id). The group takes the
// newcomer and fences the first, which stops with ErrFencedInstance and an
// error naming kafka.group_instance_id, without writing on; the twin reads
// on, and every record is written once.
func TestGroupStaticTwinFenced(t *testing.T) {
	const partitions = 12
	client := testkit.RequireCluster(t)
	topic := createGroupTopic(t, client, spreadRF3()...)
	produced, stopProducing := produceSteadily(t, topic, partitions)
	defer stopProducing()
	store := newBatchStore()
	o := groupOptions{topic: topic, group: groupName(t, ""), follower: "on", instance: map[string]string{"az-a": "twin", "az-b": "twin"}}
	first := startMembers(t, o, store, Mode{}, "az-a")[0]
	waitForBalance(t, client, o.group, []*member{first}, partitions, 60*time.Second)
	twin := startMembers(t, o, store, Mode{}, "az-b")[0]
	select {
	case <-first.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the first member still runs 30s after its twin joined with its instance id")
	}
	if !errors.Is(first.err, ErrFencedInstance) || !strings.Contains(first.err.Error(), "kafka.group_instance_id") {
		t.Errorf("the fenced member ended with %v; want ErrFencedInstance naming kafka.group_instance_id", first.err)
	}
	// The coordinator keeps a replaced static member's client id, so the
	// twin shows under az-a's: wait for one member holding everything.
	waitWhileRunning(t, []*member{twin}, "the twin holding every partition", 30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		got, stable := groupAssignment(ctx, client, o.group, 1)
		for _, ps := range got {
			return stable && len(ps) == partitions
		}
		return false
	})
	stopProducing()
	finishExactlyOnce(t, client, topic, partitions, produced.Load(), store, []*member{twin})
}

// TestGroupFailingPartitionHoldsAlone (issue 26): one partition cannot
// start (its resume record in the output is unreadable). It is held,
// counted and tried again, while the member's other partitions are read
// to the end and committed; once the record is fixed the held partition
// catches up. Before, the error ended the generation for every partition
// and the member rejoined in a loop, reading nothing.
func TestGroupFailingPartitionHoldsAlone(t *testing.T) {
	const partitions, broken = 12, 3
	client := testkit.RequireCluster(t)
	topic := createGroupTopic(t, client, spreadRF3()...)
	produceLogs(t, topic, partitions, 500, 7)
	to := endOffsets(t, client, topic, partitions)
	o := groupOptions{topic: topic, group: groupName(t, ""), follower: "on"}
	cfg := memberConfig(t, o, "az-a")
	record := filepath.Join(cfg.Sinks.Files.URL, worker.ResumeName(topic, broken))
	if err := os.MkdirAll(filepath.Dir(record), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(record, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(testLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	job, err := NewJob(context.Background(), cfg, Deps{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { job.Close() })
	m := &member{zone: "az-a", job: job, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() {
		defer close(m.done)
		m.err = job.Run(ctx, Mode{})
	}()
	t.Cleanup(func() { cancel(); <-m.done })
	ids := map[string][]int{topic: partitionIDs(partitions)}
	committed := func(p int) int64 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		pos, err := fetchPositions(ctx, client, o.group, ids)
		if err != nil {
			return -1
		}
		return pos[topic][p].Offset
	}
	waitWhileRunning(t, []*member{m}, "every partition but the broken one committed to its end", 60*time.Second, func() bool {
		for p := range partitions {
			if p != broken && committed(p) != to[p] {
				return false
			}
		}
		return true
	})
	if c := committed(broken); c >= 0 {
		t.Errorf("partition %d, whose resume record is unreadable, committed %d", broken, c)
	}
	if f := metricValue(job, "logstore_partition_failures_total"); f < 1 {
		t.Errorf("logstore_partition_failures_total is %v; want the broken partition counted", f)
	}
	if g := generation(job); g != 1 {
		t.Errorf("the member is in generation %v; a failing partition must not make it rejoin", g)
	}
	if err := os.Remove(record); err != nil {
		t.Fatal(err)
	}
	waitWhileRunning(t, []*member{m}, "the held partition caught up once its record was fixed", 90*time.Second, func() bool { return committed(broken) == to[broken] })
	stopAll(t, []*member{m})
}
