//go:build integration

package group

// The consumer-protocol member against the real coordinator where the
// broker's own behaviour is the point: a session the group sets, a topic
// deleted under the member. Run with
//
//	go test -count=1 -tags integration -run 'TestConsumerProtocol(SlowAssign|DeletedTopic)' ./pipeline/group/

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/internal/testkit"
)

// adminClient is a franz-go client for the requests kafka-go has no
// call for (group configs, ConsumerGroupDescribe).
func adminClient(t *testing.T) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(testkit.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// setGroupSession gives one group its own consumer session and heartbeat
// interval (KIP-848 group configs, Kafka 4.0+), as short as asked where
// the brokers' bounds allow (group.consumer.min.session.timeout.ms and
// group.consumer.min.heartbeat.interval.ms are read-only: the test
// cluster's script lowers them, a cluster started before keeps 45 s and
// 5 s), and says what it set.
func setGroupSession(t *testing.T, cl *kgo.Client, group string, session, interval time.Duration) (time.Duration, time.Duration) {
	t.Helper()
	session = max(session, brokerMS(t, cl, "group.consumer.min.session.timeout.ms"))
	interval = max(interval, brokerMS(t, cl, "group.consumer.min.heartbeat.interval.ms"))
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for k, v := range map[string]time.Duration{groupSessionConfig: session, "consumer.heartbeat.interval.ms": interval} {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = k, kmsg.StringPtr(strconv.FormatInt(v.Milliseconds(), 10))
		r.Configs = append(r.Configs, c)
	}
	req.Resources = append(req.Resources, r)
	res, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, rr := range res.Resources {
		if err := kerr.ErrorForCode(rr.ErrorCode); err != nil {
			t.Fatalf("group %s: session %v, heartbeat %v: %v (%s)", group, session, interval, err, stringOf(rr.ErrorMessage))
		}
	}
	t.Logf("group %s: consumer session %v, heartbeat interval %v", group, session, interval)
	return session, interval
}

// brokerMS reads a broker config in milliseconds.
func brokerMS(t *testing.T, cl *kgo.Client, key string) time.Duration {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeBroker, "1", []string{key}
	req.Resources = append(req.Resources, r)
	res, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, rr := range res.Resources {
		for _, c := range rr.Configs {
			if c.Name == key && c.Value != nil {
				ms, err := strconv.ParseInt(*c.Value, 10, 64)
				if err != nil {
					t.Fatalf("%s = %q", key, *c.Value)
				}
				return time.Duration(ms) * time.Millisecond
			}
		}
	}
	t.Fatalf("broker 1 has no %s", key)
	return 0
}

// describeMember is the coordinator's view of the group's one member.
func describeMember(t *testing.T, cl *kgo.Client, group string) kmsg.ConsumerGroupDescribeResponseGroupMember {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	res, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Groups) != 1 || len(res.Groups[0].Members) != 1 {
		t.Fatalf("group %s: %+v; want one member", group, res.Groups)
	}
	return res.Groups[0].Members[0]
}

func clusterMember(t *testing.T, cfg ConsumerConfig, log *slog.Logger) *ConsumerMember {
	cfg.Brokers = testkit.Brokers
	cfg.Dialer = &kafka.Dialer{ClientID: "logstore-" + cfg.Group, Timeout: 10 * time.Second}
	cfg.RebalanceTimeout = 10 * time.Second
	cfg.Log = log
	return NewConsumer(cfg)
}

// TestConsumerProtocolSlowAssignKeepsItsPartitions: on the real
// coordinator, a group with a short session (2 s where the brokers allow
// it, their minimum otherwise) and an Assign longer than the session plus
// a heartbeat (the job's, waiting out a dead member's transaction): the
// member heartbeats through it, holds its 4 partitions, Assign runs once,
// nothing is lost; and the member learnt the group's session from the
// broker.
func TestConsumerProtocolSlowAssignKeepsItsPartitions(t *testing.T) {
	_, cfg := consumerGroupOn(t, 4)
	cl := adminClient(t)
	session, interval := setGroupSession(t, cl, cfg.Group, 2*time.Second, 500*time.Millisecond)
	m := clusterMember(t, cfg, slog.New(slog.NewTextHandler(testWriter{t}, nil)))
	h := &slowHandler{assignFor: session + 2*interval}
	done := runMember(t, m, h)
	waitHeld(t, h, 4, 30*time.Second)
	time.Sleep(h.assignFor + 2*interval)
	assigns, revokes, lost, owned := h.counts()
	t.Logf("after an Assign of %v under a %v session: %d assigns, %d revokes, %d losses, %d held; the member's session %v",
		h.assignFor, session, assigns, revokes, lost, owned, m.session)
	if assigns != 1 || lost != 0 || revokes != 0 || owned != 4 {
		t.Errorf("want 1 assign, none lost or revoked, 4 held")
	}
	if m.session != session {
		t.Errorf("the member counts a %v session; the group's is %v", m.session, session)
	}
	select {
	case err := <-done:
		t.Fatalf("Run ended: %v", err)
	default:
	}
}

// TestConsumerProtocolDeletedTopicLeavesTheSubscription: an input topic
// deleted under a running member leaves its subscription (the
// coordinator's view says so) with an error naming it; its partitions are
// lost, the other topic's stay, never revoked, and Run goes on.
func TestConsumerProtocolDeletedTopicLeavesTheSubscription(t *testing.T) {
	_, cfg := consumerGroupOn(t, 2)
	client := testkit.RequireCluster(t)
	doomed := testkit.CreateTopic(t, client, []int{1, 2, 3}, []int{2, 3, 1})
	kept := cfg.Topics[0]
	cfg.Topics = append(cfg.Topics, doomed)
	var logged testkit.LogBuffer
	m := clusterMember(t, cfg, slog.New(slog.NewTextHandler(&logged, nil)))
	h := &slowHandler{}
	done := runMember(t, m, h)
	waitHeld(t, h, 4, 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := client.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: []string{doomed}}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	waitHeld(t, h, 2, 30*time.Second)
	t.Logf("the deleted topic's partitions let go of %v after the delete", time.Since(deleted).Round(time.Millisecond))
	var sub []string
	for limit := time.Now().Add(10 * time.Second); time.Now().Before(limit); time.Sleep(100 * time.Millisecond) {
		if sub = describeMember(t, adminClient(t), cfg.Group).SubscribedTopics; slices.Equal(sub, []string{kept}) {
			break
		}
	}
	h.mu.Lock()
	held, lost, revokes := h.owned.Clone(), h.lost, h.revokes
	h.mu.Unlock()
	if len(held[kept]) != 2 || len(held[doomed]) != 0 || lost != 1 || revokes != 0 {
		t.Errorf("after the delete: held %v, %d losses, %d revokes; want %s's 2 partitions held, the deleted topic's lost once", held, lost, revokes, kept)
	}
	if !slices.Equal(sub, []string{kept}) {
		t.Errorf("the coordinator sees the member subscribed to %v; want [%s]", sub, kept)
	}
	if log := logged.String(); !strings.Contains(log, "level=ERROR") || !strings.Contains(log, "topic="+doomed) {
		t.Errorf("no error names the deleted topic; the log:\n%s", log)
	}
	select {
	case err := <-done:
		t.Fatalf("Run ended: %v", err)
	default:
	}
}

// movingName resolves one name to an address the test moves, as DNS does
// for a cluster that came back elsewhere; other names as written.
type movingName struct {
	name string
	mu   sync.Mutex
	addr string
}

func (n *movingName) LookupHost(_ context.Context, host string) ([]string, error) {
	if host != n.name {
		return nil, nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return []string{n.addr}, nil
}

// TestConsumerProtocolMemberFollowsAClusterThatMoves: a member whose only
// bootstrap address is a name; the whole cluster goes away and comes back
// at other addresses. The member finds its coordinator again through the
// name (resolved anew at every lookup) within its session: it keeps its
// partitions, nothing lost or assigned again, and the coordinator still
// counts it.
func TestConsumerProtocolMemberFollowsAClusterThatMoves(t *testing.T) {
	_, cfg := consumerGroupOn(t, 2)
	before := testkit.StartKafkaProxy(t, testkit.Brokers)
	name := &movingName{name: "kafka.logstore.test", addr: before.Addrs[testkit.Brokers[0]]}
	m := clusterMember(t, cfg, slog.New(slog.NewTextHandler(testWriter{t}, nil)))
	m.cfg.Brokers = []string{name.name + ":9092"}
	m.cfg.Dialer.Resolver = name
	m.coord = newCoordinator(m.cfg.Dialer, m.cfg.Brokers, m.cfg.Group)
	m.commit = newCoordinator(m.cfg.Dialer, m.cfg.Brokers, m.cfg.Group)
	h := &slowHandler{}
	done := runMember(t, m, h)
	waitHeld(t, h, 2, 30*time.Second)
	epoch, _ := m.Current()

	before.Close()
	after := testkit.StartKafkaProxy(t, testkit.Brokers)
	name.mu.Lock()
	name.addr = after.Addrs[testkit.Brokers[0]]
	name.mu.Unlock()
	time.Sleep(3 * m.interval) // heartbeats through the new addresses
	assigns, revokes, lost, owned := h.counts()
	now, _ := m.Current()
	member := describeMember(t, adminClient(t), cfg.Group)
	t.Logf("after the move: %d assigns, %d revokes, %d losses, %d held; epoch %d -> %d; coordinator sees epoch %d", assigns, revokes, lost, owned, epoch, now, member.MemberEpoch)
	if assigns != 1 || revokes != 0 || lost != 0 || owned != 2 || member.MemberEpoch != now {
		t.Errorf("want the member to keep its 2 partitions through the move, counted by the coordinator")
	}
	select {
	case err := <-done:
		t.Fatalf("Run ended: %v", err)
	default:
	}
}

// TestConsumerProtocolCoordinatorSeesTheMembersRack: the rack a member
// joins with reaches the real coordinator (ConsumerGroupHeartbeat's
// RackId, as ConsumerGroupDescribe reports it), which hands it to the
// broker-side assignor: what a rack-aware assignor needs from the member.
// (Kafka 4.4's uniform and range assignors receive it and do not use it,
// KAFKA-19387; warnRackBlind says what that costs.)
func TestConsumerProtocolCoordinatorSeesTheMembersRack(t *testing.T) {
	_, cfg := consumerGroupOn(t, 2)
	cfg.Rack = "az-b"
	m := clusterMember(t, cfg, slog.New(slog.NewTextHandler(testWriter{t}, nil)))
	h := &slowHandler{}
	runMember(t, m, h)
	waitHeld(t, h, 2, 30*time.Second)
	member := describeMember(t, adminClient(t), cfg.Group)
	if member.RackID == nil || *member.RackID != "az-b" {
		t.Errorf("the coordinator has rack %v for the member; want az-b", member.RackID)
	}
}
