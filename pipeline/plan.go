package pipeline

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/segmentio/kafka-go"

	"github.com/logstore/logstore/rack"
)

// PlanLive runs the rack-aware planner on the live cluster: the configured
// topics' partitions and the group's current members (their racks and owned
// partitions from their JoinGroup user data), as the group leader would at
// the next rebalance.
func PlanLive(ctx context.Context, cfg *Config, log *slog.Logger) (rack.PlanResult, error) {
	if cfg.Kafka.GroupProtocol == GroupProtocolConsumer {
		return rack.PlanResult{}, fmt.Errorf("kafka.group_protocol is consumer: the broker assigns (kafka.group_remote_assignor %s, not rack-aware), not this planner; "+
			"plan a classic group, or give --topology FILE", cfg.Kafka.GroupRemoteAssignor)
	}
	conn, err := NewClients(ctx, cfg.Kafka)
	if err != nil {
		return rack.PlanResult{}, err
	}
	defer conn.Close()
	md, err := conn.Client.Metadata(ctx, &kafka.MetadataRequest{Topics: cfg.Kafka.Topics})
	if err != nil {
		return rack.PlanResult{}, fmt.Errorf("reading topic metadata: %w", err)
	}
	var partitions []kafka.Partition
	for _, t := range md.Topics {
		if t.Error != nil {
			return rack.PlanResult{}, fmt.Errorf("topic %s: %w", t.Name, t.Error)
		}
		partitions = append(partitions, t.Partitions...)
	}
	groups, err := conn.Client.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{cfg.Kafka.Group}})
	if err != nil {
		return rack.PlanResult{}, fmt.Errorf("describing group %s: %w", cfg.Kafka.Group, err)
	}
	var members []kafka.GroupMember
	for _, g := range groups.Groups {
		if g.Error != nil {
			return rack.PlanResult{}, fmt.Errorf("describing group %s: %w", g.GroupID, g.Error)
		}
		for _, m := range g.Members {
			members = append(members, kafka.GroupMember{ID: m.MemberID, Topics: m.MemberMetadata.Topics, UserData: m.MemberMetadata.UserData})
		}
	}
	if len(members) == 0 {
		return rack.PlanResult{}, fmt.Errorf("group %s has no members now; start the workers, or use --topology FILE", cfg.Kafka.Group)
	}
	b := rack.NewBalancer("", followerFetching(ctx, conn, cfg.Rack.FollowerFetching, log))
	b.AssignGroups(members, partitions)
	return b.LastPlan(), nil
}
