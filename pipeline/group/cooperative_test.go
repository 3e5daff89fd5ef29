package group

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/pipeline/group/wire"
)

// TestWithholdKeepsAPartitionFromItsNewOwnerWhileTheOldOneHoldsIt: the
// leader's plan moves partitions; in the same round no partition may reach
// a new owner while its old owner still holds it.
func TestWithholdKeepsAPartitionFromItsNewOwnerWhileTheOldOneHoldsIt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		plan   map[string]Assignment
		claims []claim
		want   map[string]Assignment
		moving int
	}{{
		name:   "a join: the newcomer gets nothing yet",
		plan:   map[string]Assignment{"a": {"t": {0, 1}}, "b": {"t": {3, 4}}, "c": {"t": {2, 5}}},
		claims: []claim{{"a", Assignment{"t": {0, 1, 2}}, 4}, {"b", Assignment{"t": {3, 4, 5}}, 4}, {"c", nil, -1}},
		want:   map[string]Assignment{"a": {"t": {0, 1}}, "b": {"t": {3, 4}}, "c": {"t": {}}},
		moving: 2,
	}, {
		name:   "a leave: the leaver's partitions are nobody's, so they move at once",
		plan:   map[string]Assignment{"a": {"t": {0, 1, 2}}, "b": {"t": {3, 4, 5}}},
		claims: []claim{{"a", Assignment{"t": {0, 1}}, 7}, {"b", Assignment{"t": {3, 4}}, 7}},
		want:   map[string]Assignment{"a": {"t": {0, 1, 2}}, "b": {"t": {3, 4, 5}}},
	}, {
		name: "a stale claim from an older generation loses to the current owner",
		plan: map[string]Assignment{"a": {"t": {0}}, "b": {"t": {1}}},
		// b missed a generation and still claims 0, which a owns now.
		claims: []claim{{"a", Assignment{"t": {0}}, 9}, {"b", Assignment{"t": {0, 1}}, 8}},
		want:   map[string]Assignment{"a": {"t": {0}}, "b": {"t": {1}}},
	}, {
		name: "a swap: each waits for the other to let go",
		plan: map[string]Assignment{"a": {"t": {1}}, "b": {"t": {0}}},
		// b's claim on 1 is old but nobody else's: b may still read it.
		claims: []claim{{"a", Assignment{"t": {0}}, 9}, {"b", Assignment{"t": {0, 1}}, 8}},
		want:   map[string]Assignment{"a": {"t": {}}, "b": {"t": {}}},
		moving: 2,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			moving := withhold(tc.plan, tc.claims)
			if moving != tc.moving {
				t.Errorf("withheld %d; want %d", moving, tc.moving)
			}
			for m, a := range tc.want {
				got := tc.plan[m]
				for _, topic := range slices.Sorted(maps.Keys(a)) {
					if !slices.Equal(got[topic], a[topic]) {
						t.Errorf("member %s: %v; want %v", m, got, a)
					}
				}
			}
		})
	}
}

// TestSubscriptionIsJavasLayout: a cooperative subscription is Java's
// ConsumerProtocolSubscription v2 (read here with franz-go's kmsg, which
// follows Java's schema), so kafka-consumer-groups.sh and other tools
// describe the group; an eager one is version 1 without owned partitions,
// the layout kafka-go's ConsumerGroup reads.
func TestSubscriptionIsJavasLayout(t *testing.T) {
	s := wire.Subscription{Version: wire.CooperativeVersion, Topics: []string{"logs", "more"}, UserData: []byte{1, 2, 3},
		Owned: Assignment{"logs": {0, 4}, "more": {7}}, Generation: 12}
	var k kmsg.ConsumerMemberMetadata
	if err := k.ReadFrom(s.Encode()); err != nil {
		t.Fatal(err)
	}
	if k.Version != 2 || !slices.Equal(k.Topics, s.Topics) || !slices.Equal(k.UserData, s.UserData) || k.Generation != 12 || len(k.OwnedPartitions) != 2 {
		t.Errorf("kmsg reads %+v", k)
	}
	back, err := wire.DecodeSubscription(s.Encode())
	if err != nil || !reflect.DeepEqual(back, s) {
		t.Errorf("decoded %+v, %v; want %+v", back, err, s)
	}
	eager := wire.Subscription{Version: wire.EagerVersion, Topics: []string{"logs"}, UserData: []byte{9}}
	want := []byte{0, 1, 0, 0, 0, 1, 0, 4, 'l', 'o', 'g', 's', 0, 0, 0, 1, 9}
	if got := eager.Encode(); !slices.Equal(got, want) {
		t.Errorf("eager subscription % x; want % x", got, want)
	}
	a := Assignment{"logs": {3, 1}}
	var ka kmsg.ConsumerMemberAssignment
	if err := ka.ReadFrom(wire.EncodeAssignment(a, false)); err != nil || len(ka.Topics) != 1 || !slices.Equal(ka.Topics[0].Partitions, []int32{1, 3}) {
		t.Errorf("kmsg reads the assignment as %+v, %v", ka, err)
	}
}

// TestDecodeRefusesForgedCounts: a member's metadata is read by the leader
// from the wire; a count past the data fails instead of allocating.
func TestDecodeRefusesForgedCounts(t *testing.T) {
	for _, b := range [][]byte{
		{0, 2, 0x7f, 0xff, 0xff, 0xff},
		{0, 2, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x7f, 0, 0, 0},
		{0, 1, 0, 0, 0, 1, 0, 9, 'x'},
	} {
		if _, err := wire.DecodeSubscription(b); err == nil {
			t.Errorf("% x decoded without error", b)
		}
	}
}

// TestAssignmentCarriesTheFollowUp: an assignment from a round that
// withheld partitions says so in its user data, which the Java client's
// reader (kmsg) takes as opaque; one from any other round carries none.
func TestAssignmentCarriesTheFollowUp(t *testing.T) {
	for _, rejoin := range []bool{true, false} {
		b := wire.EncodeAssignment(Assignment{"logs": {2, 0}}, rejoin)
		var ka kmsg.ConsumerMemberAssignment
		if err := ka.ReadFrom(b); err != nil || !slices.Equal(ka.Topics[0].Partitions, []int32{0, 2}) || (ka.UserData != nil) != rejoin {
			t.Errorf("rejoin %v: kmsg reads %+v, %v", rejoin, ka, err)
		}
		a, got, err := wire.DecodeAssignment(b)
		if err != nil || got != rejoin || !reflect.DeepEqual(Assignment(a), Assignment{"logs": {0, 2}}) {
			t.Errorf("rejoin %v: decoded %v, %v, %v", rejoin, a, got, err)
		}
	}
	// kafka-go's ConsumerGroup and an older member of ours write no user
	// data field at all.
	old := wire.EncodeAssignment(Assignment{"logs": {1}}, false)
	if a, rejoin, err := wire.DecodeAssignment(old[:len(old)-4]); err != nil || rejoin || !Assignment(a).Has("logs", 1) {
		t.Errorf("an assignment without user data: %v, %v, %v", a, rejoin, err)
	}
}
