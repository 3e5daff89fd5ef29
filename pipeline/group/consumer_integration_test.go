//go:build integration

package group

// The next-generation member (KIP-848) against the three-rack cluster's
// real coordinator. Run with
//
//	flock /tmp/logstore-it.lock go test -count=1 -tags integration -run 'TestConsumerProtocol' ./pipeline/group/

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/logstore/logstore/internal/testkit"
)

// ownership records, for every partition, when each member held it: from
// Assign to the return of Revoke or Lose. One clock for every member of
// the test, so intervals of different members compare.
type ownership struct {
	mu    sync.Mutex
	open  map[string]map[int]time.Time // member → partition → since
	spans map[int][]span
}

type span struct {
	member     string
	from, till time.Time
}

func newOwnership() *ownership {
	return &ownership{open: map[string]map[int]time.Time{}, spans: map[int][]span{}}
}

// handler is one member's Handler writing into the shared record.
func (o *ownership) handler(member string) Handler { return ownerHandler{o, member} }

type ownerHandler struct {
	o      *ownership
	member string
}

func (h ownerHandler) Assign(g Generation) {
	h.o.mu.Lock()
	defer h.o.mu.Unlock()
	if h.o.open[h.member] == nil {
		h.o.open[h.member] = map[int]time.Time{}
	}
	for _, ps := range g.Added {
		for _, p := range ps {
			h.o.open[h.member][p] = time.Now()
		}
	}
}

func (h ownerHandler) Revoke(a Assignment) {
	time.Sleep(50 * time.Millisecond) // a commit's worth of letting go
	h.end(a)
}

func (h ownerHandler) Lose(a Assignment) { h.end(a) }

func (h ownerHandler) end(a Assignment) {
	h.o.mu.Lock()
	defer h.o.mu.Unlock()
	for _, ps := range a {
		for _, p := range ps {
			if since, ok := h.o.open[h.member][p]; ok {
				h.o.spans[p] = append(h.o.spans[p], span{h.member, since, time.Now()})
				delete(h.o.open[h.member], p)
			}
		}
	}
}

// owned is what each member holds now.
func (o *ownership) owned() map[string][]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[string][]int{}
	for m, ps := range o.open {
		for p := range ps {
			out[m] = append(out[m], p)
		}
		slices.Sort(out[m])
	}
	return out
}

// checkOneOwner fails for any moment two members held one partition.
func (o *ownership) checkOneOwner(t *testing.T) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	now := time.Now()
	spans := map[int][]span{}
	for p, ss := range o.spans {
		spans[p] = slices.Clone(ss)
	}
	for m, ps := range o.open {
		for p, since := range ps {
			spans[p] = append(spans[p], span{m, since, now})
		}
	}
	for p, ss := range spans {
		for i, a := range ss {
			for _, b := range ss[i+1:] {
				if a.member != b.member && a.from.Before(b.till) && b.from.Before(a.till) {
					t.Errorf("partition %d held by %s (%v–%v) and %s (%v–%v) at once", p,
						a.member, a.from.Format("15:04:05.000"), a.till.Format("15:04:05.000"), b.member, b.from.Format("15:04:05.000"), b.till.Format("15:04:05.000"))
				}
			}
		}
	}
}

type runningMember struct {
	name    string
	cancel  context.CancelFunc
	done    chan error
	stopped sync.Once
}

func startConsumer(t *testing.T, cfg ConsumerConfig, o *ownership, name string) *runningMember {
	t.Helper()
	cfg.Brokers = testkit.Brokers
	cfg.Dialer = &kafka.Dialer{ClientID: "logstore-" + name, Timeout: 10 * time.Second}
	cfg.RebalanceTimeout = 10 * time.Second
	cfg.Log = slog.New(slog.NewTextHandler(testWriter{t}, nil)).With("member", name)
	m := NewConsumer(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	r := &runningMember{name: name, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- m.Run(ctx, o.handler(name)) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

func (r *runningMember) stop(t *testing.T) {
	r.stopped.Do(func() {
		r.cancel()
		select {
		case err := <-r.done:
			if err != nil {
				t.Errorf("member %s: %v", r.name, err)
			}
		case <-time.After(20 * time.Second):
			t.Errorf("member %s did not stop within 20s", r.name)
		}
	})
}

// waitOwned waits until the members hold per partitions each, and all
// partitions between them.
func waitOwned(t *testing.T, o *ownership, members []string, per int, limit time.Duration) (map[string][]int, time.Duration) {
	t.Helper()
	start := time.Now()
	var got map[string][]int
	for time.Since(start) < limit {
		got = o.owned()
		ok := len(got) >= len(members)
		for _, m := range members {
			ok = ok && len(got[m]) == per
		}
		if ok {
			return got, time.Since(start)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("members %v did not hold %d partitions each within %v: %v", members, per, limit, got)
	return nil, 0
}

// consumerGroupOn makes a topic of n partitions, RF 3 with leaders taking
// turns, and the config of a new group on it with the uniform assignor.
func consumerGroupOn(t *testing.T, n int) (*ownership, ConsumerConfig) {
	t.Helper()
	client := testkit.RequireCluster(t)
	var replicas [][]int
	for p := range n {
		replicas = append(replicas, []int{1 + p%3, 1 + (p+1)%3, 1 + (p+2)%3})
	}
	topic := testkit.CreateTopic(t, client, replicas...)
	group := fmt.Sprintf("logstore-%s-%d", testkit.UnsafeTopicChars.ReplaceAllString(t.Name(), "-"), time.Now().UnixNano())
	return newOwnership(), ConsumerConfig{Group: group, Topics: []string{topic}, Assignor: "uniform"}
}

// TestConsumerProtocolPartitionsHaveOneOwner: on the next-generation
// protocol two members share twelve partitions, a third joins, then the
// first leaves. At every moment each partition is held by at most one
// member, and after each change the broker's uniform assignor balances
// them (6/6, 4/4/4, 6/6) among the members that run.
func TestConsumerProtocolPartitionsHaveOneOwner(t *testing.T) {
	o, cfg := consumerGroupOn(t, 12)
	racks := map[string]string{"a": "az-a", "b": "az-b", "c": "az-c"}
	start := func(name string) *runningMember {
		c := cfg
		c.Rack = racks[name]
		return startConsumer(t, c, o, name)
	}
	a, _ := start("a"), start("b")
	_, took := waitOwned(t, o, []string{"a", "b"}, 6, 60*time.Second)
	t.Logf("a and b hold 6 each after %v", took)
	start("c")
	got, took := waitOwned(t, o, []string{"a", "b", "c"}, 4, 60*time.Second)
	t.Logf("c joined: %v after %v", got, took)
	a.stop(t)
	got, took = waitOwned(t, o, []string{"b", "c"}, 6, 60*time.Second)
	t.Logf("a left: %v after %v", got, took)
	if len(got["a"]) != 0 {
		t.Errorf("a still holds %v after it stopped", got["a"])
	}
	o.checkOneOwner(t)
}

// TestConsumerProtocolStaticRestartKeepsAssignment: on the next-generation
// protocol a static member that stops (epoch -2: "back soon") and comes
// back with its instance id within the session timeout, as a new process
// with a new member id, gets its partitions back, and the member that
// stayed never notices: nothing is revoked from or added to it.
func TestConsumerProtocolStaticRestartKeepsAssignment(t *testing.T) {
	o, cfg := consumerGroupOn(t, 6)
	start := func(name, instance string) *runningMember {
		c := cfg
		c.InstanceID = instance
		return startConsumer(t, c, o, name)
	}
	start("a", "pod-0")
	b := start("b", "pod-1")
	before, _ := waitOwned(t, o, []string{"a", "b"}, 3, 60*time.Second)
	// a may have held all six until b joined (a loaded machine starts a
	// first): what it gave up then is not the restart's doing.
	restart := time.Now()
	b.stop(t)
	time.Sleep(time.Second)
	start("b-again", "pod-1")
	after, took := waitOwned(t, o, []string{"a", "b-again"}, 3, 30*time.Second)
	t.Logf("before %v; after the restart %v, %v after it began", before, after, took)
	if !slices.Equal(after["b-again"], before["b"]) {
		t.Errorf("the restarted member got %v; it had %v", after["b-again"], before["b"])
	}
	o.mu.Lock()
	for p, ss := range o.spans {
		for _, s := range ss {
			if s.member == "a" && s.till.After(restart) {
				t.Errorf("member a let go of partition %d during b's restart", p)
			}
		}
	}
	o.mu.Unlock()
	o.checkOneOwner(t)
}

// TestConsumerProtocolStaticTwinStopsAtOnce: on the next-generation
// protocol a second process that joins with a running member's
// kafka.group_instance_id is refused by the coordinator with
// UNRELEASED_INSTANCE_ID (the broker keeps the member holding the id).
// The twin must stop at once with ErrFencedInstance naming the key; it
// went on asking for a minute before. The member that runs keeps every
// partition throughout.
func TestConsumerProtocolStaticTwinStopsAtOnce(t *testing.T) {
	o, cfg := consumerGroupOn(t, 4)
	cfg.InstanceID = "pod-0"
	startConsumer(t, cfg, o, "a")
	waitOwned(t, o, []string{"a"}, 4, 60*time.Second)
	joined := time.Now()
	twin := startConsumer(t, cfg, o, "twin")
	var err error
	select {
	case err = <-twin.done:
		twin.stopped.Do(func() {})
	case <-time.After(15 * time.Second):
		t.Fatalf("the twin still runs %v after it joined with a running member's instance id", time.Since(joined).Round(time.Second))
	}
	t.Logf("the twin stopped %v after it started: %v", time.Since(joined).Round(time.Millisecond), err)
	if !errors.Is(err, ErrFencedInstance) || !strings.Contains(err.Error(), "kafka.group_instance_id") {
		t.Errorf("the twin ended with %v; want ErrFencedInstance naming kafka.group_instance_id", err)
	}
	if got := o.owned(); len(got["a"]) != 4 || len(got["twin"]) != 0 {
		t.Errorf("after the twin stopped: %v; want a holding all 4 partitions", got)
	}
	o.mu.Lock()
	for p, ss := range o.spans {
		for _, s := range ss {
			t.Errorf("partition %d changed hands during the twin's attempt: %s held it %v–%v", p, s.member, s.from.Format("15:04:05.000"), s.till.Format("15:04:05.000"))
		}
	}
	o.mu.Unlock()
}
