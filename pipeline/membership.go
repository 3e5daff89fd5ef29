package pipeline

import (
	"context"
	"time"

	"github.com/logstore/logstore/pipeline/group"
	"github.com/logstore/logstore/pipeline/worker"
	"github.com/logstore/logstore/rack"
)

// groupMember is the member of kafka.group_protocol, with the set's
// committer wired to it: classic (this member's rack-aware planner
// assigns; commits carry the generation) or consumer (KIP-848: the
// broker assigns; commits carry the member epoch).
func (j *Job) groupMember(set *partitionSet) interface {
	Run(ctx context.Context, h group.Handler) error
} {
	k := j.cfg.Kafka
	if k.GroupProtocol == GroupProtocolConsumer {
		m := group.NewConsumer(group.ConsumerConfig{
			Group: k.Group, Topics: k.Topics, InstanceID: k.GroupInstanceID, LeaveOnShutdown: k.LeaveOnShutdown,
			Brokers: k.Brokers, Dialer: j.conn.Dialer,
			Rack: j.rack.Rack, FollowerFetching: j.follower, Assignor: k.GroupRemoteAssignor,
			RebalanceTimeout: k.RebalanceTimeout, InitialDelay: k.initialRebalanceDelay(), Log: j.log,
		})
		set.commit = worker.NewMemberCommitter(j.conn.Client, k.Group, m, set.owns, k.RebalanceTimeout, m)
		return m
	}
	m := group.New(group.Config{
		Group: k.Group, Topics: k.Topics, InstanceID: k.GroupInstanceID, LeaveOnShutdown: k.LeaveOnShutdown,
		Brokers: k.Brokers, Dialer: j.conn.Dialer, Client: j.conn.Client,
		Assignor:       rack.NewGroupBalancer(j.cfg.Rack, j.rack.Rack, j.follower),
		Eager:          k.Rebalance == RebalanceEager,
		SessionTimeout: k.SessionTimeout, RebalanceTimeout: k.RebalanceTimeout, HeartbeatInterval: k.HeartbeatInterval,
		Log: j.log,
	})
	set.commit = worker.NewMemberCommitter(j.conn.Client, k.Group, m, set.owns, k.RebalanceTimeout, nil)
	return m
}

// initialRebalanceDelay is kafka.group_initial_rebalance_delay, its
// default when unset (a config built without SetDefaults).
func (k InputConfig) initialRebalanceDelay() time.Duration {
	if k.GroupInitialRebalanceDelay == nil {
		return group.DefaultInitialDelay
	}
	return *k.GroupInitialRebalanceDelay
}
