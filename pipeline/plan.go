package pipeline

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol/describegroups"

	"github.com/logstore/logstore/pipeline/group/wire"
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
	members, err := describeMembers(ctx, conn, cfg.Kafka.Group)
	if err != nil {
		return rack.PlanResult{}, err
	}
	if len(members) == 0 {
		return rack.PlanResult{}, fmt.Errorf("group %s has no members now; start the workers, or use --topology FILE", cfg.Kafka.Group)
	}
	b := rack.NewBalancer("", followerFetching(ctx, conn, cfg.Rack.FollowerFetching, log))
	b.AssignGroups(members, partitions)
	return b.LastPlan(), nil
}

// describeMembers is the group's members with their subscribed topics and
// user data. The members' metadata is read as our members write it
// (wire.Subscription): with kafka.rebalance cooperative that is the
// consumer protocol's subscription version 2, owned partitions and
// generation after the user data, which kafka-go's DescribeGroups refuses
// ("Got non-zero number of bytes remaining"), so the request is sent raw.
func describeMembers(ctx context.Context, conn *Clients, groupID string) ([]kafka.GroupMember, error) {
	msg, err := conn.Transport.RoundTrip(ctx, conn.Client.Addr, &describegroups.Request{Groups: []string{groupID}})
	if err != nil {
		return nil, fmt.Errorf("describing group %s: %w", groupID, err)
	}
	var members []kafka.GroupMember
	for _, g := range msg.(*describegroups.Response).Groups {
		if g.ErrorCode != 0 {
			return nil, fmt.Errorf("describing group %s: %w", g.GroupID, kafka.Error(g.ErrorCode))
		}
		for _, m := range g.Members {
			if len(m.MemberMetadata) == 0 {
				continue // a member between joins
			}
			s, err := wire.DecodeSubscription(m.MemberMetadata)
			if err != nil {
				return nil, fmt.Errorf("describing group %s: member %s (client %s at %s): reading its subscription: %w", g.GroupID, m.MemberID, m.ClientID, m.ClientHost, err)
			}
			members = append(members, kafka.GroupMember{ID: m.MemberID, Topics: s.Topics, UserData: s.UserData})
		}
	}
	return members, nil
}
