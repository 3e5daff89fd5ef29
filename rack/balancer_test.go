package rack

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/segmentio/kafka-go"
)

// kafkaBrokers are brokers as kafka-go reports them from metadata. KRaft
// clusters often number brokers from 0, which kafka-go also uses for "no
// leader": the tests use 0 on purpose.
var kafkaBrokers = []kafka.Broker{
	{ID: 0, Host: "kafka-0", Port: 9092, Rack: "az-a"},
	{ID: 1, Host: "kafka-1", Port: 9092, Rack: "az-b"},
	{ID: 2, Host: "kafka-2", Port: 9092, Rack: "az-c"},
}

// kafkaPartitions lays out n partitions the way spread does.
func kafkaPartitions(topic string, n, rf int) []kafka.Partition {
	parts := make([]kafka.Partition, n)
	for i := range parts {
		var replicas []kafka.Broker
		for r := range rf {
			replicas = append(replicas, kafkaBrokers[(i+r)%len(kafkaBrokers)])
		}
		parts[i] = kafka.Partition{Topic: topic, ID: i, Leader: replicas[0], Replicas: replicas, Isr: slices.Clone(replicas)}
	}
	return parts
}

// joinGroup is what the leader's AssignGroups receives: one GroupMember per
// balancer, with that balancer's user data.
func joinGroup(t *testing.T, topics []string, balancers map[string]*Balancer) []kafka.GroupMember {
	t.Helper()
	var members []kafka.GroupMember
	for _, id := range slices.Sorted(maps.Keys(balancers)) {
		data, err := balancers[id].UserData()
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, kafka.GroupMember{ID: id, Topics: topics, UserData: data})
	}
	return members
}

func localReads(a kafka.GroupMemberAssignments, parts []kafka.Partition, racks map[string]string, follower bool) int {
	n := 0
	for member, topics := range a {
		for topic, ids := range topics {
			for _, id := range ids {
				for _, p := range parts {
					if p.Topic != topic || p.ID != id {
						continue
					}
					near := []kafka.Broker{p.Leader}
					if follower {
						near = p.Isr
					}
					if slices.ContainsFunc(near, func(b kafka.Broker) bool { return b.Rack == racks[member] }) {
						n++
					}
				}
			}
		}
	}
	return n
}

func TestBalancerAssignsWithinRacks(t *testing.T) {
	tests := []struct {
		name     string
		rf       int
		racks    map[string]string
		follower bool
		local    int
	}{
		{"RF 3, a member per zone, leader only", 3, map[string]string{"m-a": "az-a", "m-b": "az-b", "m-c": "az-c"}, false, 12},
		{"RF 2, no az-c member, follower fetching", 2, map[string]string{"m-a": "az-a", "m-b": "az-b"}, true, 12},
		{"RF 2, no az-c member, leader only", 2, map[string]string{"m-a": "az-a", "m-b": "az-b"}, false, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parts := kafkaPartitions("logs", 12, tt.rf)
			balancers := make(map[string]*Balancer)
			for id, r := range tt.racks {
				balancers[id] = NewBalancer(r, tt.follower)
			}
			leader := balancers["m-a"]
			got := leader.AssignGroups(joinGroup(t, []string{"logs"}, balancers), parts)

			if n := localReads(got, parts, tt.racks, tt.follower); n != tt.local {
				t.Errorf("%d local reads, want %d: %v", n, tt.local, got)
			}
			for id := range tt.racks {
				if n := len(got[id]["logs"]); n != 12/len(tt.racks) {
					t.Errorf("%s has %d partitions, want %d", id, n, 12/len(tt.racks))
				}
			}
			if p := leader.LastPlan(); p.Local != tt.local || p.Total != 12 {
				t.Errorf("LastPlan %d/%d", p.Local, p.Total)
			}
		})
	}
}

func TestBalancerKeepsOwnedPartitions(t *testing.T) {
	parts := kafkaPartitions("logs", 12, 3)
	// Rack-blind members: only stickiness decides who reads what.
	balancers := map[string]*Balancer{"m1": NewBalancer("", false), "m2": NewBalancer("", false), "m3": NewBalancer("", false)}
	first := balancers["m1"].AssignGroups(joinGroup(t, []string{"logs"}, balancers), parts)
	for id, b := range balancers {
		b.SetOwned(first[id])
	}
	// m3 leaves; m1 and m2 keep theirs and split m3's.
	delete(balancers, "m3")
	second := balancers["m1"].AssignGroups(joinGroup(t, []string{"logs"}, balancers), parts)
	for _, id := range []string{"m1", "m2"} {
		for _, p := range first[id]["logs"] {
			if !slices.Contains(second[id]["logs"], p) {
				t.Errorf("%s lost partition %d: %v → %v", id, p, first, second)
			}
		}
		if n := len(second[id]["logs"]); n != 6 {
			t.Errorf("%s has %d partitions, want 6", id, n)
		}
	}
}

func TestBalancerMalformedUserData(t *testing.T) {
	parts := kafkaPartitions("logs", 12, 3)
	good, _ := NewBalancer("az-a", false).UserData()
	members := []kafka.GroupMember{
		{ID: "good", Topics: []string{"logs"}, UserData: good},
		// kafka-go's RackAffinityGroupBalancer sends the bare rack.
		{ID: "rack-affinity", Topics: []string{"logs"}, UserData: []byte("az-b")},
		{ID: "empty", Topics: []string{"logs"}},
		{ID: "truncated", Topics: []string{"logs"}, UserData: good[:len(good)-1]},
	}
	var log strings.Builder
	b := NewBalancer("az-a", false)
	b.SetLogger(kafka.LoggerFunc(func(format string, args ...any) { fmt.Fprintf(&log, format+"\n", args...) }))
	got := b.AssignGroups(members, parts)
	for _, m := range members {
		if n := len(got[m.ID]["logs"]); n != 3 {
			t.Errorf("%s has %d partitions, want 3", m.ID, n)
		}
	}
	if n := localReads(got, parts, map[string]string{"good": "az-a"}, false); n != 3 {
		t.Errorf("the member with a rack reads %d locally, want 3", n)
	}
	for _, id := range []string{"rack-affinity", "empty", "truncated"} {
		if !strings.Contains(log.String(), "member "+id+":") {
			t.Errorf("no warning about %s in log:\n%s", id, log.String())
		}
	}
}

func TestBalancerWithoutLeader(t *testing.T) {
	// A partition without a leader comes as the zero Broker: ID 0, which is
	// also az-a's broker here. It must not count as led from az-a.
	parts := kafkaPartitions("logs", 3, 3)
	parts[0].Leader = kafka.Broker{}
	balancers := map[string]*Balancer{"m-a": NewBalancer("az-a", false)}
	b := balancers["m-a"]
	b.AssignGroups(joinGroup(t, []string{"logs"}, balancers), parts)
	if p := b.LastPlan(); p.Local != 0 || p.Total != 3 {
		t.Errorf("local %d/%d, want 0/3 (partition 0 has no leader, 1 and 2 lead elsewhere)", p.Local, p.Total)
	}
}

func TestBalancerTopicsPerMember(t *testing.T) {
	parts := append(kafkaPartitions("logs", 4, 3), kafkaPartitions("audit", 2, 3)...)
	members := []kafka.GroupMember{
		{ID: "both", Topics: []string{"logs", "audit"}},
		{ID: "logs-only", Topics: []string{"logs"}},
	}
	got := NewBalancer("", false).AssignGroups(members, parts)
	if len(got) != 2 {
		t.Fatalf("assignments for %d members, want 2: %v", len(got), got)
	}
	if len(got["logs-only"]["audit"]) != 0 {
		t.Errorf("logs-only got audit partitions: %v", got)
	}
	total := len(got["both"]["logs"]) + len(got["both"]["audit"]) + len(got["logs-only"]["logs"])
	if total != 6 || len(got["both"]["logs"])+len(got["both"]["audit"]) != 3 {
		t.Errorf("want 3 and 3 of 6: %v", got)
	}
}

func TestUserDataRoundTrip(t *testing.T) {
	tests := []memberData{
		{},
		{Rack: "apne2-az1"},
		{Rack: "az-a", Owned: map[string][]int{"logs": {7, 0, 3, 3}, "audit": {2147483647}, "empty": nil}},
	}
	for _, d := range tests {
		got, err := decodeUserData(encodeUserData(d))
		if err != nil {
			t.Fatalf("%+v: %v", d, err)
		}
		if !reflect.DeepEqual(normalized(got), normalized(d)) {
			t.Errorf("round trip %+v → %+v", d, got)
		}
	}
}

func TestUserDataLaterVersionKeepsPrefix(t *testing.T) {
	v1 := encodeUserData(memberData{Rack: "az-b", Owned: map[string][]int{"logs": {1}}})
	v2 := append([]byte{2}, v1[1:]...)
	v2 = append(v2, "some field of version 2"...)
	got, err := decodeUserData(v2)
	if err != nil || got.Rack != "az-b" || !slices.Equal(got.Owned["logs"], []int{1}) {
		t.Errorf("version 2: %+v, %v", got, err)
	}
	if _, err := decodeUserData(append(v1, 0)); err == nil {
		t.Error("version 1 with a trailing byte: no error")
	}
}

// normalized sorts and dedupes owned IDs and drops empty topics, as the
// encoding does.
func normalized(d memberData) memberData {
	out := memberData{Rack: d.Rack}
	for t, ids := range d.Owned {
		ids = slices.Clone(ids)
		slices.Sort(ids)
		ids = slices.Compact(ids)
		if len(ids) == 0 {
			continue
		}
		if out.Owned == nil {
			out.Owned = make(map[string][]int)
		}
		out.Owned[t] = ids
	}
	return out
}

// FuzzDecodeUserData: whatever a member sends, decoding neither panics nor
// allocates without bound, and what it accepts survives a round trip. The
// seed corpus runs with every `go test`.
func FuzzDecodeUserData(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("az-a"))
	f.Add([]byte{0})
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{1, 0, 1, 4, 'l', 'o', 'g', 's', 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{1, 0, 1, 1, 'x', 2, 0xff, 0xff, 0xff, 0xff, 0x07, 0xff, 0xff, 0xff, 0xff, 0x07})
	f.Add(encodeUserData(memberData{Rack: "az-a", Owned: map[string][]int{"logs": {0, 5, 9}, "audit": {1}}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := decodeUserData(data)
		if err != nil {
			if !errors.Is(err, errUserData) || !reflect.DeepEqual(d, memberData{}) {
				t.Fatalf("failed decode returned %+v, %v", d, err)
			}
			return
		}
		again, err := decodeUserData(encodeUserData(d))
		if err != nil {
			t.Fatalf("re-encoded %+v does not decode: %v", d, err)
		}
		if !reflect.DeepEqual(normalized(again), normalized(d)) {
			t.Fatalf("round trip %+v → %+v", d, again)
		}
		if data[0] == userDataVersion && !bytes.Equal(encodeUserData(d), encodeUserData(again)) {
			t.Fatalf("encoding is not stable for %+v", d)
		}
	})
}
