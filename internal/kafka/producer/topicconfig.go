package producer

import (
	"context"
	"fmt"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol/describeconfigs"
)

// resourceTopic is DescribeConfigs' resource type of a topic.
const resourceTopic = 2

// TopicConfig reads the named configs of topic (DescribeConfigs, any
// broker): their effective values, a topic's own or its broker's default.
// A name the brokers do not know is absent from the answer.
func (p *Producer) TopicConfig(ctx context.Context, topic string, names ...string) (map[string]string, error) {
	msg, err := p.ctl.call(ctx, &describeconfigs.Request{Resources: []describeconfigs.RequestResource{{
		ResourceType: resourceTopic, ResourceName: topic, ConfigNames: names,
	}}})
	if err != nil {
		return nil, fmt.Errorf("describing the configs of topic %q: %w", topic, err)
	}
	res := msg.(*describeconfigs.Response)
	if len(res.Resources) == 0 {
		return nil, fmt.Errorf("describing the configs of topic %q: an empty answer", topic)
	}
	r := res.Resources[0]
	if r.ErrorCode != 0 {
		return nil, fmt.Errorf("describing the configs of topic %q: %w", topic, kafka.Error(r.ErrorCode))
	}
	out := make(map[string]string, len(r.ConfigEntries))
	for _, e := range r.ConfigEntries {
		out[e.ConfigName] = e.ConfigValue
	}
	return out, nil
}
