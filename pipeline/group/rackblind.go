package group

import (
	"context"
	"fmt"
	"slices"
)

// The broker-side assignors of Kafka 4.x (uniform, range; simple for share
// groups) never look at racks: the coordinator hands them each member's
// rack and each partition's replica racks, and none of them uses either
// (KAFKA-19387; checked in kafka-group-coordinator 4.4.0, whose assignors
// hold no reference to a rack). So under kafka.group_protocol: consumer a
// member may be given partitions with no replica in its zone, and reads
// them across zones. Follower fetching makes that moot for a partition
// with an in-sync replica in every zone (RF >= zones); warnRackBlind
// names the partitions for which it does not.

// maxNamed bounds the partitions the warning lists by name.
const maxNamed = 20

// warnRackBlind logs, at the start, which partitions this member would
// read across zones if the rack-blind assignor gave them to it.
func (m *ConsumerMember) warnRackBlind(ctx context.Context) {
	if m.cfg.Rack == "" {
		return // rack-blind by configuration: nothing to keep local
	}
	if err := m.refresh(ctx); err != nil {
		m.log.Warn("the broker's assignor is not rack-aware (KAFKA-19387) and the metadata to say which partitions that costs could not be read; "+
			"reads may cross zones; kafka.group_protocol: classic keeps the rack-aware planner", "err", err)
		return
	}
	m.mu.Lock()
	far := remotePartitions(m.topics.partitions, m.cfg.Rack, m.cfg.FollowerFetching)
	total := len(m.topics.partitions)
	m.mu.Unlock()
	if len(far) == 0 {
		m.log.Info("the broker's assignor is not rack-aware (KAFKA-19387), but every partition has an in-sync replica in this zone, so reads stay local",
			"rack", m.cfg.Rack, "assignor", m.cfg.Assignor, "partitions", total)
		return
	}
	named := far[:min(len(far), maxNamed)]
	m.log.Warn("the broker's assignor is not rack-aware (KAFKA-19387): partitions with no replica this member can read in its zone are read across zones when assigned here; "+
		"kafka.group_protocol: classic keeps the rack-aware planner, or give every partition a replica in every zone (RF >= zones) with follower fetching",
		"rack", m.cfg.Rack, "assignor", m.cfg.Assignor, "follower_fetching", m.cfg.FollowerFetching,
		"remote", len(far), "partitions", total, "named", named)
}

// remotePartitions lists, as topic/partition, the partitions this rack
// cannot read locally: no in-sync replica in it with follower fetching,
// else a leader elsewhere.
func remotePartitions(ps []topicReplica, rack string, follower bool) []string {
	var out []string
	for _, p := range ps {
		local := p.LeaderRack == rack
		if follower {
			local = local || slices.Contains(p.ISRRacks, rack)
		}
		if !local {
			out = append(out, fmt.Sprintf("%s/%d", p.Topic, p.Partition))
		}
	}
	slices.Sort(out)
	return out
}
