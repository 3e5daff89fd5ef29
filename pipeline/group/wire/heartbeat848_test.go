package wire

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The codecs are checked against franz-go's kmsg, generated from Kafka's
// own message definitions: what we write it reads, what it writes we read.

var (
	idA = [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	idB = [16]byte{0xff, 1}
)

func TestConsumerHeartbeatEncodesWhatKafkaReads(t *testing.T) {
	tests := []struct {
		name string
		h    ConsumerHeartbeat
	}{
		{"join", ConsumerHeartbeat{Group: "g", MemberID: "m-1", Epoch: EpochJoin, InstanceID: "pod-0", Rack: "az-a",
			RebalanceTimeoutMS: 30000, Topics: []string{"logs", "more"}, Assignor: "uniform", Owned: TopicPartitions{}}},
		{"ack", ConsumerHeartbeat{Group: "g", MemberID: "m-1", Epoch: 7, Rack: "az-b", RebalanceTimeoutMS: 30000,
			Topics: []string{"logs"}, Owned: TopicPartitions{idB: {5, 1}, idA: {0, 3, 2}}}},
		{"leave", ConsumerHeartbeat{Group: "g", MemberID: "m-1", Epoch: EpochLeaveStatic, InstanceID: "pod-0", RebalanceTimeoutMS: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := kmsg.NewConsumerGroupHeartbeatRequest()
			got.Version = ConsumerHeartbeatVersion
			if err := got.ReadFrom(tt.h.Encode()); err != nil {
				t.Fatalf("kmsg cannot read the request: %v", err)
			}
			h := tt.h
			if got.Group != h.Group || got.MemberID != h.MemberID || got.MemberEpoch != h.Epoch || got.RebalanceTimeoutMillis != h.RebalanceTimeoutMS {
				t.Errorf("read %+v from %+v", got, h)
			}
			if str(got.InstanceID) != h.InstanceID || str(got.RackID) != h.Rack || str(got.ServerAssignor) != h.Assignor || got.SubscribedTopicRegex != nil {
				t.Errorf("nullable strings: instance %v rack %v assignor %v regex %v", got.InstanceID, got.RackID, got.ServerAssignor, got.SubscribedTopicRegex)
			}
			if !reflect.DeepEqual(got.SubscribedTopicNames, h.Topics) {
				t.Errorf("topics %v, want %v", got.SubscribedTopicNames, h.Topics)
			}
			if (got.Topics == nil) != (h.Owned == nil) {
				t.Fatalf("owned null %v, want null %v", got.Topics == nil, h.Owned == nil)
			}
			owned := TopicPartitions{}
			for i, tp := range got.Topics {
				if i > 0 && string(got.Topics[i-1].TopicID[:]) > string(tp.TopicID[:]) {
					t.Errorf("topics not in id order")
				}
				owned[tp.TopicID] = tp.Partitions
			}
			for id, ps := range h.Owned {
				want := sorted32(ps)
				if !reflect.DeepEqual(owned[id], want) {
					t.Errorf("owned %x: %v, want %v", id, owned[id], want)
				}
			}
		})
	}
}

func TestConsumerHeartbeatAnswerReadsWhatKafkaWrites(t *testing.T) {
	res := kmsg.NewConsumerGroupHeartbeatResponse()
	res.Version = ConsumerHeartbeatVersion
	res.ErrorCode = 0
	res.MemberID = kmsg.StringPtr("m-1")
	res.MemberEpoch = 12
	res.HeartbeatIntervalMillis = 5000
	a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
	for _, tp := range []struct {
		id [16]byte
		ps []int32
	}{{idA, []int32{4, 0, 2}}, {idB, []int32{}}} {
		t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
		t.TopicID, t.Partitions = tp.id, tp.ps
		a.Topics = append(a.Topics, t)
	}
	res.Assignment = &a

	got, err := DecodeConsumerHeartbeatAnswer(res.AppendTo(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := ConsumerHeartbeatAnswer{MemberID: "m-1", Epoch: 12, HeartbeatIntervalMS: 5000,
		Assignment: TopicPartitions{idA: {0, 2, 4}, idB: nil}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}

	// No assignment (unchanged) and an error with its message.
	res.Assignment = nil
	res.ErrorCode = 110
	res.ErrorMessage = kmsg.StringPtr("fenced")
	got, err = DecodeConsumerHeartbeatAnswer(res.AppendTo(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got.Assignment != nil || got.ErrorCode != 110 || got.ErrorMessage != "fenced" {
		t.Errorf("got %+v", got)
	}
}

func TestConsumerHeartbeatAnswerTruncatedIsAnError(t *testing.T) {
	res := kmsg.NewConsumerGroupHeartbeatResponse()
	res.Version = ConsumerHeartbeatVersion
	a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
	tp := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
	tp.TopicID, tp.Partitions = idA, []int32{1, 2, 3}
	a.Topics = append(a.Topics, tp)
	res.Assignment = &a
	body := res.AppendTo(nil)
	for n := range len(body) - 1 {
		if _, err := DecodeConsumerHeartbeatAnswer(body[:n]); !errors.Is(err, ErrMalformed) {
			t.Fatalf("%d of %d bytes: err %v, want ErrMalformed", n, len(body), err)
		}
	}
}

func TestOffsetCommitV9EncodesWhatKafkaReads(t *testing.T) {
	c := OffsetCommit{Group: "g", MemberID: "m-1", InstanceID: "pod-1", Epoch: 9, Offsets: []CommitOffset{
		{Topic: "logs", Partition: 3, Offset: 981, Metadata: "cut:990"},
		{Topic: "audit", Partition: 0, Offset: 7, Metadata: "at:1"},
		{Topic: "logs", Partition: 5, Offset: 12, Metadata: ""},
	}}
	got := kmsg.NewOffsetCommitRequest()
	got.Version = OffsetCommitMemberVersion
	if err := got.ReadFrom(c.Encode()); err != nil {
		t.Fatal(err)
	}
	if got.Group != "g" || got.Generation != 9 || got.MemberID != "m-1" || str(got.InstanceID) != "pod-1" || len(got.Topics) != 2 {
		t.Fatalf("read %+v", got)
	}
	var read []string
	for _, tp := range got.Topics {
		for _, p := range tp.Partitions {
			if p.LeaderEpoch != -1 {
				t.Errorf("%s/%d: leader epoch %d, want -1", tp.Topic, p.Partition, p.LeaderEpoch)
			}
			read = append(read, fmt.Sprintf("%s/%d@%d:%s", tp.Topic, p.Partition, p.Offset, str(p.Metadata)))
		}
	}
	if want := "[logs/3@981:cut:990 logs/5@12: audit/0@7:at:1]"; fmt.Sprint(read) != want {
		t.Errorf("read %v, want %s", read, want)
	}
}

func TestOffsetCommitAnswerFindsThePartition(t *testing.T) {
	res := kmsg.NewOffsetCommitResponse()
	res.Version = OffsetCommitMemberVersion
	for _, name := range []string{"other", "logs"} {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = name
		for p, code := range []int16{0, 0, 0, 113} {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = int32(p), code
			rt.Partitions = append(rt.Partitions, rp)
		}
		res.Topics = append(res.Topics, rt)
	}
	body := res.AppendTo(nil)
	for _, tt := range []struct {
		topic     string
		partition int32
		want      int16
	}{{"logs", 3, 113}, {"logs", 1, 0}, {"logs", 9, -1}, {"none", 0, -1}} {
		got, err := DecodeOffsetCommitAnswer(body, tt.topic, tt.partition)
		if err != nil || got != tt.want {
			t.Errorf("%s/%d: %d, %v; want %d", tt.topic, tt.partition, got, err, tt.want)
		}
	}
}

func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func sorted32(ps []int32) []int32 {
	out := append([]int32(nil), ps...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
