//go:build integration

package pipeline

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/internal/testkit"
)

// shareWatch samples, every 50 ms while members run, how many partitions
// each member's job holds (its peak) and when the coordinator first shows
// each member with its share.
type shareWatch struct {
	mu       sync.Mutex
	peak     map[string]float64
	atShare  map[string]time.Duration
	stop     chan struct{}
	finished chan struct{}
	end      func() // stops the sampling; also at the test's end
}

func watchShares(t *testing.T, ms []*member, group, protocol string, share int) *shareWatch {
	w := &shareWatch{peak: map[string]float64{}, atShare: map[string]time.Duration{}, stop: make(chan struct{}), finished: make(chan struct{})}
	w.end = sync.OnceFunc(func() {
		close(w.stop)
		<-w.finished
	})
	t.Cleanup(w.end)
	began := time.Now()
	go func() {
		defer close(w.finished)
		for {
			held := coordinatorShares(group, protocol)
			w.mu.Lock()
			for _, m := range ms {
				w.peak[m.zone] = max(w.peak[m.zone], metricValue(m.job, "logstore_assigned_partitions"))
				if _, seen := w.atShare[m.zone]; !seen && held[m.zone] == share {
					w.atShare[m.zone] = time.Since(began)
				}
			}
			w.mu.Unlock()
			select {
			case <-w.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return w
}

// coordinatorShares is how many partitions the coordinator has each member
// (by rack, from its client id) hold: DescribeGroups on the classic
// protocol, ConsumerGroupDescribe on the consumer protocol.
func coordinatorShares(group, protocol string) map[string]int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	out := map[string]int{}
	if protocol == GroupProtocolClassic {
		assigned, _ := groupAssignment(ctx, nil, group, 0)
		for zone, ps := range assigned {
			out[zone] = len(ps)
		}
		return out
	}
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	res, err := req.RequestWith(ctx, describeClient())
	if err != nil || len(res.Groups) != 1 {
		return out
	}
	for _, m := range res.Groups[0].Members {
		n := 0
		for _, tp := range m.Assignment.TopicPartitions {
			n += len(tp.Partitions)
		}
		out[strings.TrimPrefix(m.ClientID, "logstore-")] = n
	}
	return out
}

// TestGroupMembersStartedTogetherShareTheBacklog: three members, one per
// zone, started together with --until now on a backlog of twelve
// partitions that one member alone reads in about twelve seconds (each
// member is held to 1,000 records/s, standing in for a backlog larger than
// one heartbeat interval's reading). A user who starts three pods expects
// them to share it: each member must read a third of the records, give or
// take a quarter of a third, every record written once and read once (a
// partition that moves after it was read is read again by its new owner,
// or with kafka.revoke: write costs a file more), and one file per
// partition (batch.max_age is longer than the run). On the classic
// protocol the broker's group.initial.rebalance.delay.ms gathers the
// members before the first assignment; the consumer protocol (KIP-848)
// has no such delay in Kafka 4.x, and its first member was given all
// twelve partitions and read them until its next heartbeat, five seconds
// on (60–62 % of the backlog, 3,200–3,500 records read twice), until the member
// held an empty group's first assignment back
// (kafka.group_initial_rebalance_delay).
func TestGroupMembersStartedTogetherShareTheBacklog(t *testing.T) {
	const partitions, perPartition, rate = 12, 1000, 1000
	for _, protocol := range []string{GroupProtocolClassic, GroupProtocolConsumer} {
		t.Run(protocol, func(t *testing.T) {
			client := testkit.RequireCluster(t)
			if protocol == GroupProtocolClassic {
				requireInitialRebalanceDelay(t)
			}
			topic := createGroupTopic(t, client, spreadRF3()...)
			produceLogs(t, topic, partitions, perPartition, 7)
			from, to := map[int]int64{}, endOffsets(t, client, topic, partitions)

			store := newBatchStore()
			o := groupOptions{topic: topic, group: groupName(t, ""), follower: "on", protocol: protocol,
				rate: map[string]int{"az-a": rate, "az-b": rate, "az-c": rate}, maxAge: time.Minute}
			ms := startMembers(t, o, store, Mode{UntilNow: true}, zones...)
			began := time.Now()
			w := watchShares(t, ms, o.group, protocol, partitions/len(zones))
			waitCovered(t, store, from, to, 60*time.Second, ms...)
			waitEnded(t, ms, 20*time.Second)
			w.end()
			store.checkExactlyOnce(t, from, to)

			total := float64(partitions * perPartition)
			files, read := 0, int64(0)
			for _, m := range ms {
				s := m.job.Summary()
				files, read = files+int(s.Batches), read+s.Records
				share := float64(s.Records) / total
				t.Logf("member %s: %d records (%.1f %% of the backlog), %d files; held at most %v partitions; the coordinator showed it with %d at %v",
					m.zone, s.Records, 100*share, s.Batches, w.peak[m.zone], partitions/len(zones), w.atShare[m.zone].Round(time.Millisecond))
				if share < 0.75/3 || share > 1.25/3 {
					t.Errorf("member %s read %.1f %% of the backlog; want a third (25–42 %%)", m.zone, 100*share)
				}
			}
			t.Logf("%s: the group read the backlog in %v: %d records read for %.0f, %d files for %d partitions",
				protocol, time.Since(began).Round(time.Millisecond), read, total, files, partitions)
			if read != int64(total) {
				t.Errorf("the members read %d records for a backlog of %.0f: partitions moved after they were read", read, total)
			}
			if files != partitions {
				t.Errorf("%d files for %d partitions: partitions moved after they were read", files, partitions)
			}
		})
	}
}

// requireInitialRebalanceDelay skips the classic case on a cluster whose
// brokers do not delay a new group's first rebalance: the classic
// protocol's share at the start is the broker's doing.
func requireInitialRebalanceDelay(t *testing.T) {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeBroker, "1", []string{"group.initial.rebalance.delay.ms"}
	req.Resources = append(req.Resources, r)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := req.RequestWith(ctx, describeClient())
	if err != nil {
		t.Fatal(err)
	}
	for _, rr := range res.Resources {
		for _, c := range rr.Configs {
			if c.Value != nil && *c.Value != "0" {
				return
			}
		}
	}
	t.Skip("the brokers run with group.initial.rebalance.delay.ms=0 (KAFKA_GROUP_REBALANCE_DELAY_MS); the classic protocol's share needs it")
}
