package rack

import (
	"fmt"
	"testing"
)

// benchGroup is a cluster of six brokers over three racks, topics of 100
// partitions at RF 3, and members spread 40/35/25 % over the racks, all
// subscribed to every topic.
func benchGroup(partitions, members int, follower bool) (Cluster, []Member) {
	brokers := []Broker{{1, "az-a"}, {2, "az-b"}, {3, "az-c"}, {4, "az-a"}, {5, "az-b"}, {6, "az-c"}}
	c := Cluster{Brokers: brokers, FollowerFetching: follower}
	var topics []string
	for t := 0; t*100 < partitions; t++ {
		name := fmt.Sprintf("logs-%d", t)
		topics = append(topics, name)
		c.Partitions = append(c.Partitions, spread(name, min(100, partitions-t*100), 3, brokers)...)
	}
	ms := make([]Member, members)
	for i := range ms {
		rack := "az-a"
		switch f := i * 100 / members; {
		case f >= 75:
			rack = "az-c"
		case f >= 40:
			rack = "az-b"
		}
		ms[i] = Member{ID: fmt.Sprintf("logstore-%03d", i), Rack: rack, Topics: topics}
	}
	return c, ms
}

func benchmarkPlan(b *testing.B, partitions, members int, follower, sticky bool) {
	c, ms := benchGroup(partitions, members, follower)
	if sticky {
		ms = withOwned(ms, Plan(c, ms))
	}
	b.ReportAllocs()
	for b.Loop() {
		Plan(c, ms)
	}
}

// BenchmarkPlan1000x100 is a first plan, nothing owned, leader-only.
func BenchmarkPlan1000x100(b *testing.B) { benchmarkPlan(b, 1000, 100, false, false) }

// BenchmarkPlan1000x100Sticky replans a group that owns the last plan.
func BenchmarkPlan1000x100Sticky(b *testing.B) { benchmarkPlan(b, 1000, 100, false, true) }

func BenchmarkPlan1000x100FollowerFetching(b *testing.B) { benchmarkPlan(b, 1000, 100, true, false) }

func BenchmarkPlan100x10(b *testing.B) { benchmarkPlan(b, 100, 10, false, false) }

func BenchmarkPlan12x3(b *testing.B) { benchmarkPlan(b, 12, 3, false, false) }

// BenchmarkPlan1000x100MixedTopics has every other member subscribed to
// half the topics, the slower path of balance.
func BenchmarkPlan1000x100MixedTopics(b *testing.B) {
	c, ms := benchGroup(1000, 100, false)
	for i := range ms {
		if i%2 == 1 {
			ms[i].Topics = ms[i].Topics[:5]
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		Plan(c, ms)
	}
}

// BenchmarkPlan600x2Join is the grouplab's scale join: one member owns
// all 600 partitions and a second joins (follower fetching on, as there).
// It says what the planner costs of a join's rebalance: milliseconds
// (1.5–5 ms on a loaded 2-core machine) of the 0.8–5.7 s the lab
// measured; the rest was a heartbeat interval between the two rounds.
func BenchmarkPlan600x2Join(b *testing.B) {
	c, one := benchGroup(600, 1, true)
	_, two := benchGroup(600, 2, true)
	two[0].Owned = withOwned(one, Plan(c, one))[0].Owned
	b.ReportAllocs()
	for b.Loop() {
		Plan(c, two)
	}
}
