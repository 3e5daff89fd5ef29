package group

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// startHandler records what a member started, and when it first did.
type startHandler struct {
	mu      sync.Mutex
	owned   Assignment
	peak    int
	revokes int
	first   time.Time
}

func (h *startHandler) Assign(g Generation) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.first.IsZero() {
		h.first = time.Now()
	}
	h.owned = g.Assigned.Clone()
	h.peak = max(h.peak, h.owned.Count())
}

func (h *startHandler) Revoke(a Assignment) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.revokes++
	h.owned = h.owned.Minus(a)
}

func (h *startHandler) Lose(a Assignment) { h.Revoke(a) }

func (h *startHandler) state() (owned, peak, revokes int, first time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.owned.Count(), h.peak, h.revokes, h.first
}

// runDelayed runs a member of group with the given initial delay; its
// handler records what it started.
func runDelayed(t *testing.T, c *kfake.Cluster, group string, delay time.Duration) (*startHandler, time.Time) {
	t.Helper()
	m := kfakeMember(t, c, group, "")
	m.cfg.InitialDelay = delay
	h := &startHandler{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	began := time.Now()
	go func() { done <- m.Run(ctx, h) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return h, began
}

// waitOwnedBy waits until every handler holds n partitions.
func waitOwnedBy(t *testing.T, n int, limit time.Duration, hs ...*startHandler) {
	t.Helper()
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		all := true
		for _, h := range hs {
			owned, _, _, _ := h.state()
			all = all && owned == n
		}
		if all {
			return
		}
	}
	t.Fatalf("the members did not hold %d partitions each within %v", n, limit)
}

// TestConsumerMembersStartedTogetherStartOnlyTheirShare: two members of
// an empty group start 100 ms apart. The coordinator gives the first all
// six partitions (the consumer protocol has no initial rebalance delay);
// with kafka.group_initial_rebalance_delay the first holds that back and
// starts only its three, so no partition is started and then revoked.
// With the delay at 0 the first starts all six and gives three up: the
// old behaviour, which the key turns back on.
func TestConsumerMembersStartedTogetherStartOnlyTheirShare(t *testing.T) {
	for _, tc := range []struct {
		name          string
		delay         time.Duration
		peak, revokes int
	}{
		{"delay 1s", time.Second, 3, 0},
		{"delay 0", 0, 6, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := kfakeConsumerGroup(t, 6, 10*time.Second, 200*time.Millisecond)
			a, began := runDelayed(t, c, "together", tc.delay)
			time.Sleep(100 * time.Millisecond)
			b, _ := runDelayed(t, c, "together", tc.delay)
			waitOwnedBy(t, 3, 10*time.Second, a, b)
			_, peak, revokes, first := a.state()
			_, bPeak, bRevokes, _ := b.state()
			t.Logf("first member: started after %v, held at most %d, %d revokes; second: at most %d, %d revokes",
				first.Sub(began).Round(time.Millisecond), peak, revokes, bPeak, bRevokes)
			if peak != tc.peak || revokes != tc.revokes || bPeak != 3 || bRevokes != 0 {
				t.Errorf("first member held at most %d with %d revokes, second %d with %d; want %d and %d, 3 and 0", peak, revokes, bPeak, bRevokes, tc.peak, tc.revokes)
			}
			if tc.delay > 0 && first.Sub(began) < tc.delay {
				t.Errorf("the first member started %v after its start; want at least the delay, %v", first.Sub(began), tc.delay)
			}
		})
	}
}

// TestConsumerMemberJoiningAGroupDoesNotWait: a member that joins a group
// which has a member already is not alone, and starts its share as soon
// as the coordinator gives it, however long its initial delay.
func TestConsumerMemberJoiningAGroupDoesNotWait(t *testing.T) {
	c := kfakeConsumerGroup(t, 6, 10*time.Second, 200*time.Millisecond)
	a, _ := runDelayed(t, c, "existing", 500*time.Millisecond)
	waitOwnedBy(t, 6, 10*time.Second, a)
	const delay = 10 * time.Second
	b, began := runDelayed(t, c, "existing", delay)
	waitOwnedBy(t, 3, delay/2, a, b)
	_, _, _, first := b.state()
	t.Logf("the joining member started its share %v after its start (its delay: %v)", first.Sub(began).Round(time.Millisecond), delay)
}

// TestConsumerMembersStartedTogetherStartSoonAfterTheDelay: the member
// that joined the first one's empty group is given its share when the
// first lets go of it, at the end of the first's delay, and must hear of
// it then, not at its next heartbeat a whole interval (here 4 s) after
// its join.
func TestConsumerMembersStartedTogetherStartSoonAfterTheDelay(t *testing.T) {
	const delay, interval = time.Second, 4 * time.Second
	c := kfakeConsumerGroup(t, 6, 3*interval, interval)
	a, _ := runDelayed(t, c, "soon", delay)
	time.Sleep(100 * time.Millisecond)
	b, began := runDelayed(t, c, "soon", delay)
	waitOwnedBy(t, 3, 2*interval, a, b)
	_, _, _, first := b.state()
	t.Logf("the second member started its share %v after its start (delay %v, heartbeat interval %v)", first.Sub(began).Round(time.Millisecond), delay, interval)
	if took := first.Sub(began); took > delay+joinPoll+time.Second {
		t.Errorf("the second member started %v after its start; want within the delay and a poll, not at its next heartbeat (%v)", took, interval)
	}
}
