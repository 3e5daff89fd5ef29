package group

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// slowHandler is a Handler whose Assign takes as long as the job's can
// (committed offsets read with require_stable, S3 and the table per
// partition), and that records every call.
type slowHandler struct {
	assignFor time.Duration

	mu                     sync.Mutex
	assigns, revokes, lost int
	owned                  Assignment
}

func (h *slowHandler) Assign(g Generation) {
	h.mu.Lock()
	h.assigns++
	h.owned = g.Assigned.Clone()
	h.mu.Unlock()
	time.Sleep(h.assignFor)
}

func (h *slowHandler) Revoke(a Assignment) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.revokes++
	h.owned = h.owned.Minus(a)
}

func (h *slowHandler) Lose(a Assignment) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if a.Count() > 0 {
		h.lost++
	}
	h.owned = h.owned.Minus(a)
}

func (h *slowHandler) counts() (assigns, revokes, lost, owned int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.assigns, h.revokes, h.lost, h.owned.Count()
}

// kfakeConsumerGroup is an in-process cluster with topics of n partitions
// ("logs" when none is named) whose coordinator gives next-generation
// members the session and heartbeat interval asked for.
func kfakeConsumerGroup(t *testing.T, n int, session, interval time.Duration, topics ...string) *kfake.Cluster {
	t.Helper()
	if len(topics) == 0 {
		topics = []string{"logs"}
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(n), topics...), kfake.BrokerConfigs(map[string]string{
		"group.consumer.session.timeout.ms":    durationMS(session),
		"group.consumer.heartbeat.interval.ms": durationMS(interval),
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// kfakeMember is a member of group on c's topics ("logs" when none is
// named).
func kfakeMember(t *testing.T, c *kfake.Cluster, group, instance string, topics ...string) *ConsumerMember {
	if len(topics) == 0 {
		topics = []string{"logs"}
	}
	return NewConsumer(ConsumerConfig{Group: group, Topics: topics, InstanceID: instance, Brokers: c.ListenAddrs(),
		Dialer: &kafka.Dialer{Timeout: 5 * time.Second}, RebalanceTimeout: 10 * time.Second,
		Log: slog.New(slog.NewTextHandler(testWriter{t}, nil))})
}

// runMember runs m until the test ends; done has Run's end.
func runMember(t *testing.T, m *ConsumerMember, h Handler) <-chan error {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, h) }()
	return done
}

// waitHeld waits until h holds n partitions.
func waitHeld(t *testing.T, h *slowHandler, n int, limit time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, _, _, owned := h.counts(); owned == n {
			return
		}
	}
	t.Fatalf("the member did not hold %d partitions within %v", n, limit)
}

func durationMS(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// testWriter sends a member's log to the test's.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// TestConsumerMemberHeartbeatsThroughASlowAssign: under the consumer
// protocol the job's Assign may take longer than the broker's session
// (require_stable waits out a dead member's transaction). The member must
// heartbeat meanwhile: it keeps its partitions, Assign runs once, nothing
// is lost. Before the fix the member sent no heartbeat inside Assign, was
// fenced, lost every partition and was assigned them again.
func TestConsumerMemberHeartbeatsThroughASlowAssign(t *testing.T) {
	const session = time.Second
	c := kfakeConsumerGroup(t, 4, session, 100*time.Millisecond)
	m := kfakeMember(t, c, "slow-assign", "")
	h := &slowHandler{assignFor: 3 * session}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, h) }()
	deadline := time.Now().Add(3*session + 5*time.Second)
	for time.Now().Before(deadline) {
		if a, _, _, owned := h.counts(); a > 0 && owned == 4 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(3*session + 2*session) // the slow Assign, then two sessions more
	assigns, revokes, lost, owned := h.counts()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	if assigns != 1 || lost != 0 || revokes != 0 || owned != 4 {
		t.Errorf("after an Assign of %v with a %v session: %d assigns, %d revokes, %d losses, %d partitions held; want 1 assign, none lost, 4 held",
			3*session, session, assigns, revokes, lost, owned)
	}
}

// TestConsumerMemberLosesPartitionsAtTheBrokersSession: a member whose
// heartbeats go unanswered counts its partitions lost when the group's
// session (the broker's group.consumer.session.timeout.ms, here 1 s) ends,
// as the coordinator gives them away then. Before, it assumed 45 s and
// went on writing partitions that were already another member's.
func TestConsumerMemberLosesPartitionsAtTheBrokersSession(t *testing.T) {
	const session = time.Second
	c := kfakeConsumerGroup(t, 2, session, 100*time.Millisecond)
	m := kfakeMember(t, c, "short-session", "")
	h := &slowHandler{}
	runMember(t, m, h)
	waitHeld(t, h, 2, 10*time.Second)
	silent := time.Now()
	c.ControlKey(int16(kmsg.ConsumerGroupHeartbeat), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		return nil, errors.New("coordinator unreachable"), true // closes the connection
	})
	limit := session + session/2
	for time.Since(silent) < limit {
		if _, _, lost, _ := h.counts(); lost > 0 {
			t.Logf("partitions lost %v after the heartbeats stopped being answered (session %v)", time.Since(silent).Round(time.Millisecond), session)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("the member still held its partitions %v after its heartbeats stopped being answered; the group's session is %v", limit, session)
}

// TestConsumerMemberStopsAtOnceWhenItsInstanceIDIsTaken: under the
// consumer protocol FENCED_INSTANCE_ID (a newer process took the id) and
// UNRELEASED_INSTANCE_ID (a running member holds it) cannot change by
// asking again: the member stops at once, its partitions lost, with an
// error naming kafka.group_instance_id. Before, FENCED_INSTANCE_ID was
// retried as a failed heartbeat until the session ended.
func TestConsumerMemberStopsAtOnceWhenItsInstanceIDIsTaken(t *testing.T) {
	for _, code := range []int16{82, 111} { // FENCED_INSTANCE_ID, UNRELEASED_INSTANCE_ID
		t.Run(strconv.Itoa(int(code)), func(t *testing.T) {
			c := kfakeConsumerGroup(t, 2, 5*time.Second, 100*time.Millisecond)
			m := kfakeMember(t, c, "taken-"+strconv.Itoa(int(code)), "pod-0")
			h := &slowHandler{}
			done := runMember(t, m, h)
			waitHeld(t, h, 2, 10*time.Second)
			taken := time.Now()
			c.ControlKey(int16(kmsg.ConsumerGroupHeartbeat), func(req kmsg.Request) (kmsg.Response, error, bool) {
				c.KeepControl()
				res := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
				res.ErrorCode = code
				return res, nil, true
			})
			select {
			case err := <-done:
				t.Logf("stopped %v after the refusal: %v", time.Since(taken).Round(time.Millisecond), err)
				if !errors.Is(err, ErrFencedInstance) || !strings.Contains(err.Error(), "kafka.group_instance_id") {
					t.Errorf("Run ended with %v; want ErrFencedInstance naming kafka.group_instance_id", err)
				}
				if _, _, lost, owned := h.counts(); lost != 1 || owned != 0 {
					t.Errorf("%d losses, %d partitions still held; want its partitions lost once", lost, owned)
				}
			case <-time.After(3 * time.Second):
				t.Errorf("the member still runs 3s after the coordinator refused its instance id with code %d", code)
			}
		})
	}
}
