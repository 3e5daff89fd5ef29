package fetch

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/apiversions"
	"github.com/twmb/franz-go/pkg/kmsg"
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
	conn, err := c.pool.conn(ctx, st.Leader)
	if err != nil {
		return "", err
	}
	id, err := conn.topicID(ctx, topic)
	if err != nil {
		c.pool.drop(st.Leader, conn)
		return "", fmt.Errorf("topic id of %s from broker %d: %w", topic, st.Leader, err)
	}
	return id, nil
}

// topicID asks for the topic's metadata at the highest version both sides
// speak, from v10 up; the broker's own highest version is asked first
// (the connection's negotiated one is capped by kafka-go's).
func (c *brokerConn) topicID(ctx context.Context, topic string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.reauthenticateIfDue(ctx); err != nil {
		return "", err
	}
	msg, err := c.roundTrip(ctx, &apiversions.Request{})
	if err != nil {
		return "", err
	}
	version := int16(-1)
	for _, k := range msg.(*apiversions.Response).ApiKeys {
		if protocol.ApiKey(k.ApiKey) == protocol.Metadata {
			version = min(k.MaxVersion, topicIDVersion)
		}
	}
	if version < 10 {
		return "", nil
	}
	req := kmsg.NewPtrMetadataRequest()
	req.Version = version
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(topic)
	req.Topics = []kmsg.MetadataRequestTopic{t}
	var body []byte
	err = c.within(ctx, func() error {
		c.nextID++
		out := kmsg.NewRequestFormatter(kmsg.FormatterClientID(c.clientID)).AppendRequest(nil, req, c.nextID)
		if _, err := c.pc.Write(out); err != nil {
			return err
		}
		var head [8]byte
		if _, err := io.ReadFull(c.pc, head[:]); err != nil {
			return err
		}
		size := int32(binary.BigEndian.Uint32(head[:4]))
		if got := int32(binary.BigEndian.Uint32(head[4:])); size < 4 || got != c.nextID {
			return fmt.Errorf("metadata v%d: a response of %d bytes with correlation id %d, want %d", version, size, got, c.nextID)
		}
		body = make([]byte, size-4)
		_, err := io.ReadFull(c.pc, body)
		return err
	})
	if err != nil {
		return "", err
	}
	// A flexible response header ends in tagged fields: none are defined.
	if len(body) == 0 || body[0] != 0 {
		return "", fmt.Errorf("metadata v%d: a response header with tagged fields", version)
	}
	res := kmsg.NewPtrMetadataResponse()
	res.Version = version
	if err := res.ReadFrom(body[1:]); err != nil {
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
