package group

import (
	"context"
	"errors"
	"fmt"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The next-generation protocol names topics by id (KIP-516), which
// kafka-go's Metadata (v8) does not carry; Metadata v12 is encoded with
// kmsg, as the fetch client asks for a topic's id.
const (
	apiMetadata       int16 = 3
	topicIDsMDVersion int16 = 12
)

// topicReplica is one partition's placement: the racks of its leader and
// of its in-sync replicas.
type topicReplica struct {
	Topic      string
	Partition  int
	LeaderRack string
	ISRRacks   []string
}

// topicMetadata is what the member knows of its topics.
type topicMetadata struct {
	names      map[[16]byte]string
	ids        map[string][16]byte
	partitions []topicReplica
	gone       []string // asked for, and unknown to the brokers: deleted
}

// describe asks the coordinator for the topics' ids and placement.
func (m *ConsumerMember) describe(ctx context.Context, topics []string) (topicMetadata, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = topicIDsMDVersion
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	body, err := m.coord.Exchange(ctx, apiMetadata, topicIDsMDVersion, true, req.AppendTo(nil))
	if err != nil {
		return topicMetadata{}, fmt.Errorf("metadata of %v: %w", topics, err)
	}
	res := kmsg.NewPtrMetadataResponse()
	res.Version = topicIDsMDVersion
	if err := res.ReadFrom(body); err != nil {
		return topicMetadata{}, fmt.Errorf("metadata of %v: %w", topics, err)
	}
	racks := map[int32]string{}
	for _, b := range res.Brokers {
		if b.Rack != nil {
			racks[b.NodeID] = *b.Rack
		}
	}
	md := topicMetadata{names: map[[16]byte]string{}, ids: map[string][16]byte{}}
	for _, t := range res.Topics {
		if t.Topic == nil {
			continue
		}
		if err := kafka.Error(t.ErrorCode); errors.Is(err, kafka.UnknownTopicOrPartition) || errors.Is(err, kafka.UnknownTopicID) {
			md.gone = append(md.gone, *t.Topic)
			continue
		}
		if t.ErrorCode != 0 {
			m.log.Warn("topic has no metadata; it is not read until it has", "topic", *t.Topic, "err", kafka.Error(t.ErrorCode))
			continue
		}
		md.names[t.TopicID] = *t.Topic
		md.ids[*t.Topic] = t.TopicID
		for _, p := range t.Partitions {
			r := topicReplica{Topic: *t.Topic, Partition: int(p.Partition), LeaderRack: racks[p.Leader]}
			for _, n := range p.ISR {
				r.ISRRacks = append(r.ISRRacks, racks[n])
			}
			md.partitions = append(md.partitions, r)
		}
	}
	return md, nil
}
