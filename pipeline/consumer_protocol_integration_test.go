//go:build integration

package pipeline

import (
	"slices"
	"testing"
	"time"

	"github.com/logstore/logstore/internal/testkit"
)

// waitAssigned waits until each member's job holds per partitions by its
// own count (logstore_assigned_partitions), as the broker's assignor of
// the next-generation protocol decides: DescribeGroups does not describe
// such a group.
func waitAssigned(t *testing.T, ms []*member, per int, limit time.Duration) {
	t.Helper()
	waitWhileRunning(t, ms, "every member holding its share", limit, func() bool {
		for _, m := range ms {
			if metricValue(m.job, "logstore_assigned_partitions") != float64(per) {
				return false
			}
		}
		return true
	})
}

// TestGroupConsumerProtocolExactlyOnce: kafka.group_protocol: consumer
// (KIP-848, the broker assigns). Two members read twelve partitions while
// records arrive, a third joins, and the broker's uniform assignor moves
// four partitions to it; the two that stay keep their other partitions'
// workers (incremental reconciliation), and every record is written once,
// with commits carrying the member epoch (OffsetCommit v9). Every
// partition has a replica in every zone, so the members read in their own
// zone although the assignor never looked at one.
func TestGroupConsumerProtocolExactlyOnce(t *testing.T) {
	const partitions = 12
	client := testkit.RequireCluster(t)
	topic := createGroupTopic(t, client, spreadRF3()...)
	produced, stopProducing := produceSteadily(t, topic, partitions)
	defer stopProducing()
	store := newBatchStore()
	o := groupOptions{topic: topic, group: groupName(t, ""), follower: "on", protocol: GroupProtocolConsumer}
	ab := startMembers(t, o, store, Mode{}, "az-a", "az-b")
	waitAssigned(t, ab, partitions/2, 60*time.Second)
	time.Sleep(2 * time.Second) // the members start what they were given
	starts := map[string]float64{}
	for _, m := range ab {
		starts[m.zone] = workerStarts(m)
	}
	joined := time.Now()
	c := startMembers(t, o, store, Mode{}, "az-c")
	all := append(slices.Clone(ab), c...)
	waitAssigned(t, all, partitions/3, 60*time.Second)
	t.Logf("balanced at 4 each %v after az-c started", time.Since(joined).Round(time.Millisecond))
	for _, m := range ab {
		if got := workerStarts(m); got != starts[m.zone] {
			t.Errorf("member %s: %v workers started before the join, %v after: a member that keeps a partition must keep its worker", m.zone, starts[m.zone], got)
		}
	}
	// The joined member's reads are measured below: let it read enough
	// that the leader's first answers, which name the local replica and
	// cross zones (a few hundred bytes), do not decide its share.
	waitWhileRunning(t, all, "az-c reading 64 KiB", 30*time.Second, func() bool {
		l := localityOf(c[0].job.FetchStats().Snapshot(), c[0].zone)
		return l.same+l.cross >= 64<<10
	})
	stopProducing()
	finishExactlyOnce(t, client, topic, partitions, produced.Load(), store, all)
	// The broker's assignor is rack-blind, but every partition has an
	// in-sync replica in every zone: follower fetching keeps reads local.
	for _, m := range all {
		l := localityOf(m.job.FetchStats().Snapshot(), m.zone)
		t.Logf("member %s: same-rack %d B, cross-rack %d B in %d of %d fetches (share %.4f)", m.zone, l.same, l.cross, l.crossFetches, l.fetches, l.share())
		if l.share() < 0.99 {
			t.Errorf("member %s: same-rack share %.4f; want >= 0.99 with a replica of every partition in its zone", m.zone, l.share())
		}
	}
}
