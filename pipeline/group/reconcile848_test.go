package group

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"testing"
)

// callLog is a Handler that records its calls in order.
type callLog struct{ calls []string }

func (c *callLog) Assign(g Generation) { c.calls = append(c.calls, "assign "+describe(g.Added)) }
func (c *callLog) Revoke(a Assignment) { c.calls = append(c.calls, "revoke "+describe(a)) }
func (c *callLog) Lose(a Assignment)   { c.calls = append(c.calls, "lose "+describe(a)) }

func describe(a Assignment) string { return fmt.Sprint(map[string][]int(a)) }

// TestConsumerReconcileRevokesBeforeItAssigns: an assignment from the
// coordinator is reconciled incrementally: only what left is revoked
// (committed while still owned) and only what came is started, revoke
// first; an unchanged assignment does nothing and asks for no
// acknowledgement.
func TestConsumerReconcileRevokesBeforeItAssigns(t *testing.T) {
	tests := []struct {
		name          string
		owned, target Assignment
		want          []string
		changed       bool
	}{
		{"first assignment", Assignment{}, Assignment{"logs": {0, 1}}, []string{"assign map[logs:[0 1]]"}, true},
		{"one moves away, one comes", Assignment{"logs": {0, 1}, "more": {2}}, Assignment{"logs": {1, 3}, "more": {2}},
			[]string{"revoke map[logs:[0]]", "assign map[logs:[3]]"}, true},
		{"only a revoke", Assignment{"logs": {0, 1}}, Assignment{"logs": {1}}, []string{"revoke map[logs:[0]]", "assign map[]"}, true},
		{"unchanged", Assignment{"logs": {0, 1}}, Assignment{"logs": {0, 1}}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewConsumer(ConsumerConfig{Group: "g", Log: slog.New(slog.DiscardHandler)})
			h := &callLog{}
			_, changed := m.reconcile(context.Background(), h, tt.owned, tt.target, 3)
			if changed != tt.changed || !reflect.DeepEqual(h.calls, tt.want) {
				t.Errorf("changed %v, calls %q; want %v, %q", changed, h.calls, tt.changed, tt.want)
			}
		})
	}
}

func TestRemotePartitionsNamesWhatNoLocalReplicaServes(t *testing.T) {
	ps := []topicReplica{
		{Topic: "logs", Partition: 0, LeaderRack: "az-a", ISRRacks: []string{"az-a", "az-b"}},
		{Topic: "logs", Partition: 1, LeaderRack: "az-b", ISRRacks: []string{"az-b", "az-a"}},
		{Topic: "logs", Partition: 2, LeaderRack: "az-c", ISRRacks: []string{"az-c", "az-b"}},
	}
	if got, want := remotePartitions(ps, "az-a", true), []string{"logs/2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("with follower fetching: %v, want %v", got, want)
	}
	if got, want := remotePartitions(ps, "az-a", false), []string{"logs/1", "logs/2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("from leaders only: %v, want %v", got, want)
	}
}
