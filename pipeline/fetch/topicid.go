package fetch

import (
	"context"
	"encoding/hex"
	"fmt"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/internal/kafka/conn"
)

// topicIDVersion is the Metadata version asked for a topic's id: v10
// (Kafka 2.8, KIP-516) is the first with ids; v12 is what Kafka 3.1 and
// later answer, and kafka-go's own Metadata stops at v8, so this request is
// encoded and decoded with kmsg.
const topicIDVersion = 12

// TopicID is the id Kafka gave the topic when it was created (KIP-516): a
// topic deleted and created again under the same name gets a new one,
// while its offsets begin again at 0, so a position remembered for the old
// topic is not one in the new. It is "" when the brokers are older than
// Kafka 2.8 and keep no ids.
func (c *Client) TopicID(ctx context.Context, topic string) (string, error) {
	if c.cfgErr != nil {
		return "", c.cfgErr
	}
	st, err := c.pool.partition(ctx, topic, 0)
	if err != nil {
		return "", err
	}
	bc, err := c.pool.conn(ctx, st.Leader)
	if err != nil {
		return "", err
	}
	id, err := topicID(ctx, bc, topic)
	if err != nil {
		c.pool.drop(st.Leader, bc)
		return "", fmt.Errorf("topic id of %s from broker %d: %w", topic, st.Leader, err)
	}
	return id, nil
}

// topicID asks for the topic's metadata at the highest version both sides
// speak, from v10 up (the connection's negotiated one is capped by
// kafka-go's, which stops at v8).
func topicID(ctx context.Context, c *conn.Conn, topic string) (string, error) {
	version := min(c.BrokerMax(protocol.Metadata), topicIDVersion)
	if version < 10 {
		return "", nil
	}
	req := kmsg.NewPtrMetadataRequest()
	req.Version = version
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(topic)
	req.Topics = []kmsg.MetadataRequestTopic{t}
	body, err := c.Kmsg(ctx, req)
	if err != nil {
		return "", err
	}
	res := kmsg.NewPtrMetadataResponse()
	res.Version = version
	if err := res.ReadFrom(body); err != nil {
		return "", fmt.Errorf("metadata v%d: %w", version, err)
	}
	for _, rt := range res.Topics {
		if rt.Topic == nil || *rt.Topic != topic {
			continue
		}
		if rt.ErrorCode != 0 {
			return "", fmt.Errorf("metadata for topic %q: %w", topic, kafka.Error(rt.ErrorCode))
		}
		if rt.TopicID == ([16]byte{}) {
			return "", nil
		}
		return hex.EncodeToString(rt.TopicID[:]), nil
	}
	return "", fmt.Errorf("metadata has no topic %q: %w", topic, kafka.UnknownTopicOrPartition)
}
