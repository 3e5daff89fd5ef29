//go:build integration

package pipeline

import (
	"testing"
	"time"

	"github.com/logstore/logstore/internal/testkit"
)

// TestGroupStaticScaleInWaitsForSessionTimeout: three static members
// read twelve partitions; az-c is scaled in (stopped for good) with
// kafka.leave_on_shutdown: true. Its partitions must reach the two that
// stay well within the session timeout (45 s here, the broker's default
// under the consumer protocol): a static member that does not leave holds
// its partitions, unread, until the session times out. Both protocols:
// LeaveGroup by instance id (classic, KIP-345), a heartbeat with epoch -1
// rather than -2 (consumer).
func TestGroupStaticScaleInWaitsForSessionTimeout(t *testing.T) {
	const partitions = 12
	const session = 45 * time.Second
	for _, protocol := range []string{GroupProtocolClassic, GroupProtocolConsumer} {
		t.Run(protocol, func(t *testing.T) {
			client := testkit.RequireCluster(t)
			topic := createGroupTopic(t, client, spreadRF3()...)
			produced, stopProducing := produceSteadily(t, topic, partitions)
			defer stopProducing()
			store := newBatchStore()
			o := groupOptions{topic: topic, group: groupName(t, ""), follower: "on", protocol: protocol, leave: true, session: session,
				instance: map[string]string{"az-a": "logstore-0", "az-b": "logstore-1", "az-c": "logstore-2"}}
			ms := startMembers(t, o, store, Mode{}, "az-a", "az-b", "az-c")
			waitAssigned(t, ms, partitions/3, 60*time.Second)
			stopped := time.Now()
			ms[2].cancel()
			<-ms[2].done
			if ms[2].err != nil {
				t.Fatalf("az-c's stop: %v", ms[2].err)
			}
			stay := ms[:2]
			waitAssigned(t, stay, partitions/2, session/3)
			t.Logf("az-c's 4 partitions reached az-a and az-b %v after its stop began (session timeout %v)", time.Since(stopped).Round(time.Millisecond), session)
			stopProducing()
			finishExactlyOnce(t, client, topic, partitions, produced.Load(), store, ms)
		})
	}
}
