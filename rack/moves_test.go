package rack

import (
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"testing"
)

func TestPartitionsMoved(t *testing.T) {
	a, b, c := TopicPartition{"logs", 0}, TopicPartition{"logs", 1}, TopicPartition{"logs", 2}
	before := map[string][]TopicPartition{"m1": {a, b}, "m2": {c}}
	for _, tc := range []struct {
		name  string
		after map[string][]TopicPartition
		want  int
	}{
		{"unchanged", map[string][]TopicPartition{"m1": {a, b}, "m2": {c}}, 0},
		{"one handed over", map[string][]TopicPartition{"m1": {a}, "m2": {b, c}}, 1},
		{"a member joins", map[string][]TopicPartition{"m1": {a}, "m2": {c}, "m3": {b}}, 1},
		{"a member leaves", map[string][]TopicPartition{"m2": {a, b, c}}, 2},
		{"a new partition", map[string][]TopicPartition{"m1": {a, b}, "m2": {c, {"logs", 3}}}, 1},
		{"a partition gone", map[string][]TopicPartition{"m1": {a}, "m2": {c}}, 0},
	} {
		if got := PartitionsMoved(before, tc.after); got != tc.want {
			t.Errorf("%s: %d moved, want %d", tc.name, got, tc.want)
		}
	}
	if got := PartitionsMoved(nil, before); got != 3 {
		t.Errorf("first generation: %d moved, want 3", got)
	}
}

// groupTopology draws what a consumer group on a real cluster looks like:
// one to four racks, each with at least one broker, partitions of one topic
// laid out by Kafka's round robin from a random broker at RF 1-3, with some
// followers out of sync, and members in those racks, in a rack without
// brokers, or without a rack.
func groupTopology(rng *rand.Rand) (Cluster, []string) {
	racks := []string{"az-a", "az-b", "az-c", "az-d"}[:1+rng.Intn(4)]
	var c Cluster
	c.FollowerFetching = rng.Intn(2) == 0
	nb := len(racks) + rng.Intn(4)
	for id := 1; id <= nb; id++ {
		c.Brokers = append(c.Brokers, Broker{id, racks[(id-1)%len(racks)]})
	}
	rf := 1 + rng.Intn(min(3, nb))
	first := rng.Intn(nb)
	for i := range 1 + rng.Intn(600) {
		replicas := make([]int, rf)
		for r := range replicas {
			replicas[r] = c.Brokers[(first+i+r)%nb].ID
		}
		isr := slices.Clone(replicas)
		if rf > 1 && rng.Intn(8) == 0 {
			isr = isr[:rf-1]
		}
		c.Partitions = append(c.Partitions, Partition{Topic: "logs", ID: i, Leader: replicas[0], Replicas: replicas, ISR: isr})
	}
	memberRacks := append(slices.Clone(racks), "", "az-z")
	return c, memberRacks
}

func memberRack(rng *rand.Rand, racks []string) string {
	if rng.Intn(8) == 0 {
		return racks[len(racks)-2+rng.Intn(2)] // no rack, or one without brokers
	}
	return racks[rng.Intn(len(racks)-2)]
}

// rackBlind is the members with their racks forgotten: planned so, the
// group's moves are the fewest any balanced assignment makes.
func rackBlind(members []Member) []Member {
	out := slices.Clone(members)
	for i := range out {
		out[i].Rack = ""
	}
	return out
}

// TestPlanJoinLeaveMoves replays joins and leaves, each from the sticky plan
// before it, over random topologies of up to 600 partitions, 12 members and
// four racks. Each plan must be complete, within one, and the same whatever
// the input order. Its moves (PartitionsMoved) are held to two bounds:
//
//   - What balance forces: the plan the same group gets with its racks
//     forgotten moves the fewest partitions any balanced assignment can:
//     floor(P/M) to a member that joins, the leaver's own when one leaves;
//     both at most ⌈P/M⌉ for the M members after the event.
//   - What locality needs: every further move of the rack-aware plan buys a
//     local read. Its moves beyond the rack-blind plan's are at most its
//     local partitions beyond the rack-blind plan's.
func TestPlanJoinLeaveMoves(t *testing.T) {
	rng := rand.New(rand.NewSource(23))
	var events, joins, leaves, extraEvents, worstExtra int
	for topo := range 150 {
		c, racks := groupTopology(rng)
		P := len(c.Partitions)
		var members []Member
		for i := range 1 + rng.Intn(12) {
			members = append(members, Member{ID: fmt.Sprintf("m%02d", i), Rack: memberRack(rng, racks), Topics: []string{"logs"}})
		}
		next := len(members)
		plan := Plan(c, members)
		for step := range 6 {
			members = withOwned(members, plan)
			var event string
			switch {
			case len(members) < 12 && (len(members) == 1 || rng.Intn(2) == 0):
				m := Member{ID: fmt.Sprintf("m%02d", next), Rack: memberRack(rng, racks), Topics: []string{"logs"}}
				next++
				members = append(members, m)
				event = "join of " + m.ID + " in " + m.Rack
				joins++
			default:
				gone := rng.Intn(len(members))
				event = "leave of " + members[gone].ID
				members = slices.Delete(members, gone, gone+1)
				leaves++
			}
			events++
			where := fmt.Sprintf("topology %d step %d (%s; %d partitions, %d members, follower fetching %v)", topo, step, event, P, len(members), c.FollowerFetching)

			after := Plan(c, members)
			assertComplete(t, c, after)
			if s := spreadOf(after); s > 1 {
				t.Fatalf("%s: counts %v", where, counts(after))
			}
			c2, m2 := shuffled(rng, c, members)
			if again := Plan(c2, m2); !maps.EqualFunc(after.Assignments, again.Assignments, slices.Equal) {
				t.Fatalf("%s: shuffled input, other plan", where)
			}

			blind := Plan(c, rackBlind(members))
			forced := PartitionsMoved(plan.Assignments, blind.Assignments)
			want := P / len(members)                  // a joiner's share
			if len(plan.Assignments) > len(members) { // one left
				want = 0
				for id, tps := range plan.Assignments {
					if _, stays := blind.Assignments[id]; !stays {
						want = len(tps)
					}
				}
			}
			if limit := (P + len(members) - 1) / len(members); forced != want || forced > limit {
				t.Fatalf("%s: rack-blind plan moves %d, balance forces %d (⌈P/M⌉ = %d)", where, forced, want, limit)
			}
			moved := PartitionsMoved(plan.Assignments, after.Assignments)
			blindLocal := scoreOf(c, members, PlanResult{Assignments: blind.Assignments}).local
			gained := after.Local - blindLocal
			if gained < 0 {
				t.Fatalf("%s: rack-blind plan reads %d locally, rack-aware %d", where, blindLocal, after.Local)
			}
			if extra := moved - forced; extra > gained {
				t.Fatalf("%s: moved %d, balance forces %d, only %d more local reads", where, moved, forced, gained)
			} else if extra > 0 {
				extraEvents++
				worstExtra = max(worstExtra, extra)
			}
			plan = after
		}
	}
	t.Logf("%d events (%d joins, %d leaves); %d moved more than balance forces, at most %d more", events, joins, leaves, extraEvents, worstExtra)
}
