package group

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The session a consumer-protocol member has is the group's, set on the
// broker, never the member's: consumer.session.timeout.ms on the group
// (KIP-848's group configs, IncrementalAlterConfigs on a GROUP resource),
// else the brokers' group.consumer.session.timeout.ms. The member needs
// it to know when the coordinator gave its partitions away: a member
// that assumed 45 s under a 10 s session would write partitions already
// another's for 35 s.
const (
	groupSessionConfig  = "consumer.session.timeout.ms"
	brokerSessionConfig = "group.consumer.session.timeout.ms"
	// defaultConsumerSession is Kafka's default, used until the brokers
	// say (and when they cannot).
	defaultConsumerSession = 45 * time.Second
)

// readSession asks the coordinator for the group's session. A broker that
// does not answer leaves the one the member has, with a warning: the
// member then may count its partitions lost later than the coordinator.
func (m *ConsumerMember) readSession(ctx context.Context) {
	d, source, err := m.describeSession(ctx)
	if err != nil {
		m.log.Warn("the group's session timeout is unknown; counting partitions lost after the default", "session", m.session, "err", err)
		return
	}
	if d != m.session {
		m.log.Info("session timeout", "session", d, "from", source)
	}
	m.session = d
}

// describeSession reads the group's config, and the coordinator's broker
// config where the group has no value (brokers before Kafka 4.0 know no
// GROUP resource; some fakes answer it without defaults).
func (m *ConsumerMember) describeSession(ctx context.Context) (time.Duration, string, error) {
	group, err := m.describeConfig(ctx, kmsg.ConfigResourceTypeGroupConfig, m.cfg.Group, groupSessionConfig)
	if err == nil && group != "" {
		return parseMS(group, groupSessionConfig)
	}
	node, nerr := m.coord.nodeID(ctx)
	if nerr != nil {
		return 0, "", nerr
	}
	broker, berr := m.describeConfig(ctx, kmsg.ConfigResourceTypeBroker, strconv.Itoa(int(node)), brokerSessionConfig)
	if berr != nil {
		return 0, "", fmt.Errorf("group config: %v; broker config: %w", err, berr)
	}
	if broker == "" {
		return 0, "", fmt.Errorf("broker %d has no %s", node, brokerSessionConfig)
	}
	return parseMS(broker, brokerSessionConfig)
}

func parseMS(v, key string) (time.Duration, string, error) {
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms <= 0 {
		return 0, "", fmt.Errorf("%s is %q, not a count of milliseconds", key, v)
	}
	return time.Duration(ms) * time.Millisecond, key, nil
}

// describeConfig reads one config of one resource from the coordinator's
// broker (a BROKER resource must be asked of that broker itself).
func (m *ConsumerMember) describeConfig(ctx context.Context, typ kmsg.ConfigResourceType, name, key string) (string, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version = describeConfigsVersion
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = typ, name, []string{key}
	req.Resources = append(req.Resources, r)
	body, err := m.coord.Exchange(ctx, req.Key(), req.Version, req.IsFlexible(), req.AppendTo(nil))
	if err != nil {
		return "", fmt.Errorf("DescribeConfigs %s %s: %w", typ, name, err)
	}
	res := kmsg.NewPtrDescribeConfigsResponse()
	res.Version = req.Version
	if err := res.ReadFrom(body); err != nil {
		return "", fmt.Errorf("DescribeConfigs %s %s answer: %w", typ, name, err)
	}
	for _, rr := range res.Resources {
		if err := brokerError(rr.ErrorCode, stringOf(rr.ErrorMessage)); err != nil {
			return "", fmt.Errorf("DescribeConfigs %s %s: %w", typ, name, err)
		}
		for _, c := range rr.Configs {
			if c.Name == key && c.Value != nil {
				return *c.Value, nil
			}
		}
	}
	return "", nil
}

// describeConfigsVersion is DescribeConfigs v4 (flexible, Kafka 2.6+).
const describeConfigsVersion int16 = 4

func stringOf(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
