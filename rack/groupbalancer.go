package rack

import "github.com/segmentio/kafka-go"

// Modes of Config.Mode.
const (
	// ModeAware sends the rack in every fetch and, with the rack-aware
	// balancer, places partitions by rack: the production mode.
	ModeAware = "aware"
	// ModeBlind reads as a rack-unaware consumer does (Spark, kafka-go's
	// Reader): no rack in fetches, so every fetch goes to the leader, and a
	// rack-blind balancer. The rack is still detected and fetched bytes are
	// still counted by rack, so a blind run is the baseline that shows what
	// zone-local reading saves.
	ModeBlind = "blind"
)

// Balancer names of Config.Balancer.
const (
	BalancerRackAware  = "rack-aware"
	BalancerRange      = "range"
	BalancerRoundRobin = "round-robin"
)

// NewGroupBalancer returns the group balancer that c.Balancer names: the
// rack-aware planner (a *Balancer, announcing rack to the group leader) or
// kafka-go's range or round-robin balancer, which ignore racks (the group
// member runs each cooperatively too). Members offering different
// balancers cannot form a group (INCONSISTENT_GROUP_PROTOCOL), so a group
// switches balancer only by stopping every member.
func NewGroupBalancer(c Config, rack string, followerFetching bool) kafka.GroupBalancer {
	switch c.Balancer {
	case BalancerRange:
		return kafka.RangeGroupBalancer{}
	case BalancerRoundRobin:
		return kafka.RoundRobinGroupBalancer{}
	}
	return NewBalancer(rack, followerFetching)
}
