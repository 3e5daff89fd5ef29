package rack

import (
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"testing"
)

// threeRacks is brokers 1, 2, 3 in az-a, az-b, az-c.
var threeRacks = []Broker{{1, "az-a"}, {2, "az-b"}, {3, "az-c"}}

// spread lays out n partitions of topic the way Kafka does without rack
// constraints: leaders round the brokers, followers on the next ones.
func spread(topic string, n, rf int, brokers []Broker) []Partition {
	parts := make([]Partition, n)
	for i := range parts {
		replicas := make([]int, rf)
		for r := range replicas {
			replicas[r] = brokers[(i+r)%len(brokers)].ID
		}
		parts[i] = Partition{Topic: topic, ID: i, Leader: replicas[0], Replicas: replicas, ISR: slices.Clone(replicas)}
	}
	return parts
}

// consumers makes one member per rack given, named m1, m2, … in order,
// subscribed to topics.
func consumers(topics []string, racks ...string) []Member {
	ms := make([]Member, len(racks))
	for i, r := range racks {
		ms[i] = Member{ID: fmt.Sprintf("m%d", i+1), Rack: r, Topics: topics}
	}
	return ms
}

func counts(r PlanResult) map[string]int {
	c := make(map[string]int)
	for m, tps := range r.Assignments {
		c[m] = len(tps)
	}
	return c
}

func spreadOf(r PlanResult) int {
	c := slices.Collect(maps.Values(counts(r)))
	if len(c) == 0 {
		return 0
	}
	return slices.Max(c) - slices.Min(c)
}

func TestPlanLocality(t *testing.T) {
	logs := []string{"logs"}
	tests := []struct {
		name     string
		cluster  Cluster
		members  []Member
		local    int
		total    int
		perRack  map[string]int // local partitions per member rack, where it matters
		wantEach map[string]int // partitions per member, where it matters
	}{
		{
			name:    "RF 3 over 3 zones, one member per zone",
			cluster: Cluster{Brokers: threeRacks, Partitions: spread("logs", 12, 3, threeRacks)},
			members: consumers(logs, "az-a", "az-b", "az-c"),
			local:   12, total: 12,
		},
		{
			name:    "RF 2 over 3 zones, leader only",
			cluster: Cluster{Brokers: threeRacks, Partitions: spread("logs", 12, 2, threeRacks)},
			members: consumers(logs, "az-a", "az-b", "az-c"),
			local:   12, total: 12,
		},
		{
			name:    "zone without consumers, leader only: its leaders are read across",
			cluster: Cluster{Brokers: threeRacks, Partitions: spread("logs", 12, 2, threeRacks)},
			members: consumers(logs, "az-a", "az-b"),
			local:   8, total: 12,
		},
		{
			name:    "zone without consumers, RF 2, follower fetching: followers cover it",
			cluster: Cluster{Brokers: threeRacks, Partitions: spread("logs", 12, 2, threeRacks), FollowerFetching: true},
			members: consumers(logs, "az-a", "az-b"),
			local:   12, total: 12,
		},
		{
			name:    "zone without consumers, RF 3, follower fetching",
			cluster: Cluster{Brokers: threeRacks, Partitions: spread("logs", 12, 3, threeRacks), FollowerFetching: true},
			members: consumers(logs, "az-a", "az-b"),
			local:   12, total: 12,
		},
		{
			name:    "zone without brokers reads across, balance holds",
			cluster: Cluster{Brokers: threeRacks, Partitions: spread("logs", 12, 3, threeRacks), FollowerFetching: true},
			members: consumers(logs, "az-a", "az-b", "az-d"),
			local:   8, total: 12,
			wantEach: map[string]int{"m1": 4, "m2": 4, "m3": 4},
		},
		{
			name:    "more members than partitions",
			cluster: Cluster{Brokers: threeRacks, Partitions: spread("logs", 3, 3, threeRacks)},
			members: consumers(logs, "az-a", "az-a", "az-b", "az-c", "az-c"),
			local:   3, total: 3,
			perRack: map[string]int{"az-a": 1, "az-b": 1, "az-c": 1},
		},
		{
			// 48/5: three members take 10. The lone az-c member must be one
			// of them, and reads 10 of az-c's 16 leaders locally.
			name:    "uneven members per zone, 2+2+1",
			cluster: Cluster{Brokers: threeRacks, Partitions: spread("logs", 48, 3, threeRacks)},
			members: consumers(logs, "az-a", "az-a", "az-b", "az-b", "az-c"),
			local:   42, total: 48,
			perRack:  map[string]int{"az-a": 16, "az-b": 16, "az-c": 10},
			wantEach: map[string]int{"m5": 10},
		},
		{
			name:    "rack-less member reads across",
			cluster: Cluster{Brokers: threeRacks, Partitions: spread("logs", 12, 3, threeRacks), FollowerFetching: true},
			members: consumers(logs, "az-a", "az-b", ""),
			local:   8, total: 12,
		},
		{
			name:    "no member has a rack",
			cluster: Cluster{Brokers: threeRacks, Partitions: spread("logs", 7, 3, threeRacks)},
			members: consumers(logs, "", ""),
			local:   0, total: 7,
		},
		{
			name:    "brokers without racks",
			cluster: Cluster{Brokers: []Broker{{1, ""}, {2, ""}}, Partitions: spread("logs", 4, 2, []Broker{{1, ""}, {2, ""}})},
			members: consumers(logs, "az-a", "az-b"),
			local:   0, total: 4,
		},
		{
			name: "two topics count together",
			cluster: Cluster{Brokers: threeRacks, Partitions: append(
				spread("logs", 6, 3, threeRacks), spread("metrics", 5, 3, threeRacks)...)},
			members: consumers([]string{"logs", "metrics"}, "az-a", "az-b", "az-c"),
			local:   11, total: 11,
			wantEach: nil,
		},
		{
			name:    "no members",
			cluster: Cluster{Brokers: threeRacks, Partitions: spread("logs", 3, 3, threeRacks)},
			local:   0, total: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Plan(tt.cluster, tt.members)
			if r.Local != tt.local || r.Total != tt.total {
				t.Errorf("local %d/%d, want %d/%d\n%v", r.Local, r.Total, tt.local, tt.total, r.Assignments)
			}
			if s := spreadOf(r); s > 1 {
				t.Errorf("counts %v differ by %d", counts(r), s)
			}
			for m, n := range tt.wantEach {
				if got := len(r.Assignments[m]); got != n {
					t.Errorf("%s has %d partitions, want %d", m, got, n)
				}
			}
			if tt.perRack != nil {
				got := make(map[string]int)
				for _, pm := range r.members {
					for _, l := range pm.local {
						if l {
							got[pm.rack]++
						}
					}
				}
				if !maps.Equal(got, tt.perRack) {
					t.Errorf("local per rack %v, want %v", got, tt.perRack)
				}
			}
			assertComplete(t, tt.cluster, r)
		})
	}
}

// assertComplete checks that every partition is assigned once or listed as
// unassigned.
func assertComplete(t *testing.T, c Cluster, r PlanResult) {
	t.Helper()
	seen := make(map[TopicPartition]string)
	for m, tps := range r.Assignments {
		for _, tp := range tps {
			if other, dup := seen[tp]; dup {
				t.Fatalf("%v assigned to %s and %s", tp, m, other)
			}
			seen[tp] = m
		}
	}
	for _, tp := range r.Unassigned {
		seen[tp] = ""
	}
	for _, p := range c.Partitions {
		if _, ok := seen[TopicPartition{p.Topic, p.ID}]; !ok {
			t.Fatalf("%s/%d neither assigned nor unassigned", p.Topic, p.ID)
		}
	}
	if len(seen) != len(c.Partitions) {
		t.Fatalf("%d partitions planned, cluster has %d", len(seen), len(c.Partitions))
	}
}

func TestPlanMixedSubscriptions(t *testing.T) {
	c := Cluster{Brokers: threeRacks, Partitions: append(
		spread("logs", 9, 3, threeRacks), spread("audit", 3, 3, threeRacks)...)}
	members := []Member{
		{ID: "a1", Rack: "az-a", Topics: []string{"logs"}},
		{ID: "b1", Rack: "az-b", Topics: []string{"logs", "audit"}},
		{ID: "c1", Rack: "az-c", Topics: []string{"audit"}},
		{ID: "c2", Rack: "az-c", Topics: []string{"metrics"}}, // no such topic
	}
	r := Plan(c, members)
	// c1 can read only audit's 3; a1 and b1 share logs' 9, 4 and 5.
	got := counts(r)
	if got["c1"] != 3 || got["c2"] != 0 || got["a1"]+got["b1"] != 9 || max(got["a1"], got["b1"]) != 5 {
		t.Errorf("counts %v, want c1 3, c2 0, a1 and b1 4 and 5", got)
	}
	for _, tp := range r.Assignments["a1"] {
		if tp.Topic != "logs" {
			t.Errorf("a1 got %v, it does not subscribe to it", tp)
		}
	}
	// a1 and b1 read their racks' logs leaders, c1 the az-c audit leader.
	if r.Local != 7 {
		t.Errorf("local %d, want 7: %v", r.Local, r.Assignments)
	}
	assertComplete(t, c, r)

	r = Plan(Cluster{Brokers: threeRacks, Partitions: spread("logs", 2, 1, threeRacks)},
		[]Member{{ID: "x", Rack: "az-a"}})
	if r.Total != 0 || len(r.Unassigned) != 2 || len(r.Assignments["x"]) != 0 {
		t.Errorf("member without topics: %+v", r)
	}
}

func TestPlanFeedBackIsStable(t *testing.T) {
	cases := []struct {
		name    string
		cluster Cluster
		members []Member
	}{
		{"uneven", Cluster{Brokers: threeRacks, Partitions: spread("logs", 48, 3, threeRacks)},
			consumers([]string{"logs"}, "az-a", "az-a", "az-b", "az-b", "az-c")},
		{"follower fetching, rack-less", Cluster{Brokers: threeRacks, Partitions: spread("logs", 20, 2, threeRacks), FollowerFetching: true},
			consumers([]string{"logs"}, "az-a", "", "az-b", "az-d")},
		{"mixed", Cluster{Brokers: threeRacks, Partitions: append(spread("logs", 9, 2, threeRacks), spread("audit", 5, 1, threeRacks)...)},
			[]Member{{ID: "a", Rack: "az-a", Topics: []string{"logs"}}, {ID: "b", Rack: "az-b", Topics: []string{"logs", "audit"}}, {ID: "c", Rack: "az-c", Topics: []string{"audit"}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			first := Plan(tc.cluster, tc.members)
			again := Plan(tc.cluster, withOwned(tc.members, first))
			if !maps.EqualFunc(first.Assignments, again.Assignments, slices.Equal) {
				t.Errorf("fed back, the plan changed:\n%v\n%v", first.Assignments, again.Assignments)
			}
		})
	}
}

func withOwned(members []Member, r PlanResult) []Member {
	out := slices.Clone(members)
	for i := range out {
		out[i].Owned = r.Assignments[out[i].ID]
	}
	return out
}

func TestPlanMemberLeaves(t *testing.T) {
	c := Cluster{Brokers: threeRacks, Partitions: spread("logs", 12, 3, threeRacks)}
	members := consumers([]string{"logs"}, "az-a", "az-a", "az-b", "az-b", "az-c", "az-c")
	before := Plan(c, members)
	if before.Local != 12 {
		t.Fatalf("before: local %d/12", before.Local)
	}
	gone := "m2"
	remaining := slices.DeleteFunc(withOwned(members, before), func(m Member) bool { return m.ID == gone })
	after := Plan(c, remaining)

	// 12 over 5: two members take 3. m1 is az-a's only member left and takes
	// one of m2's two; the other crosses racks. Nothing else moves.
	if after.Local != 11 {
		t.Errorf("after: local %d, want 11", after.Local)
	}
	if s := spreadOf(after); s > 1 {
		t.Errorf("after: counts %v", counts(after))
	}
	for _, m := range remaining {
		for _, tp := range m.Owned {
			if !slices.Contains(after.Assignments[m.ID], tp) {
				t.Errorf("%v moved away from %s", tp, m.ID)
			}
		}
	}
}

func TestPlanRebalanceMovesOnlyWhatBalanceNeeds(t *testing.T) {
	// A new member joins a rack-blind group: it takes exactly its share.
	c := Cluster{Brokers: threeRacks, Partitions: spread("logs", 12, 3, threeRacks)}
	members := consumers([]string{"logs"}, "", "", "")
	before := Plan(c, members)
	joined := append(withOwned(members, before), Member{ID: "m4", Topics: []string{"logs"}})
	after := Plan(c, joined)
	moved := 0
	for _, m := range joined[:3] {
		for _, tp := range m.Owned {
			if !slices.Contains(after.Assignments[m.ID], tp) {
				moved++
			}
		}
	}
	if moved != 3 || len(after.Assignments["m4"]) != 3 {
		t.Errorf("moved %d, m4 has %d; want 3 and 3", moved, len(after.Assignments["m4"]))
	}
}

func TestPlanStaleClaims(t *testing.T) {
	// Two members claim the same partition; a claim on a partition the
	// member no longer subscribes to, or that does not exist, is ignored.
	c := Cluster{Brokers: threeRacks, Partitions: spread("logs", 4, 1, threeRacks)}
	members := []Member{
		{ID: "a", Rack: "", Topics: []string{"logs"}, Owned: []TopicPartition{{"logs", 0}, {"logs", 1}, {"logs", 9}, {"gone", 0}}},
		{ID: "b", Rack: "", Topics: []string{"logs"}, Owned: []TopicPartition{{"logs", 0}, {"logs", 2}}},
	}
	r := Plan(c, members)
	if !slices.Equal(r.Assignments["a"], []TopicPartition{{"logs", 0}, {"logs", 1}}) {
		t.Errorf("a: %v", r.Assignments["a"])
	}
	if !slices.Equal(r.Assignments["b"], []TopicPartition{{"logs", 2}, {"logs", 3}}) {
		t.Errorf("b: %v", r.Assignments["b"])
	}
}

func TestPlanIgnoresInputOrder(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for range 50 {
		c, members := randomTopology(rng, 12, 5)
		want := Plan(c, members)
		for range 5 {
			c2, m2 := shuffled(rng, c, members)
			got := Plan(c2, m2)
			if !maps.EqualFunc(want.Assignments, got.Assignments, slices.Equal) || !slices.Equal(want.Unassigned, got.Unassigned) {
				t.Fatalf("shuffled input, other plan:\n%v\n%v", want.Assignments, got.Assignments)
			}
		}
	}
}

func shuffled(rng *rand.Rand, c Cluster, members []Member) (Cluster, []Member) {
	c.Brokers = slices.Clone(c.Brokers)
	rng.Shuffle(len(c.Brokers), func(i, j int) { c.Brokers[i], c.Brokers[j] = c.Brokers[j], c.Brokers[i] })
	c.Partitions = slices.Clone(c.Partitions)
	rng.Shuffle(len(c.Partitions), func(i, j int) { c.Partitions[i], c.Partitions[j] = c.Partitions[j], c.Partitions[i] })
	for i := range c.Partitions {
		p := &c.Partitions[i]
		p.Replicas, p.ISR = slices.Clone(p.Replicas), slices.Clone(p.ISR)
		rng.Shuffle(len(p.Replicas), func(i, j int) { p.Replicas[i], p.Replicas[j] = p.Replicas[j], p.Replicas[i] })
		rng.Shuffle(len(p.ISR), func(i, j int) { p.ISR[i], p.ISR[j] = p.ISR[j], p.ISR[i] })
	}
	members = slices.Clone(members)
	rng.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
	for i := range members {
		m := &members[i]
		m.Topics, m.Owned = slices.Clone(m.Topics), slices.Clone(m.Owned)
		rng.Shuffle(len(m.Topics), func(i, j int) { m.Topics[i], m.Topics[j] = m.Topics[j], m.Topics[i] })
		rng.Shuffle(len(m.Owned), func(i, j int) { m.Owned[i], m.Owned[j] = m.Owned[j], m.Owned[i] })
	}
	return c, members
}

// randomTopology draws up to maxParts partitions over one to three topics and
// up to maxMembers members, with racks, replica layouts, subscriptions and
// claims of every kind the planner must handle.
func randomTopology(rng *rand.Rand, maxParts, maxMembers int) (Cluster, []Member) {
	racks := []string{"az-a", "az-b", "az-c", ""}
	var c Cluster
	c.FollowerFetching = rng.Intn(2) == 0
	nb := 1 + rng.Intn(4)
	for id := 1; id <= nb; id++ {
		c.Brokers = append(c.Brokers, Broker{id, racks[rng.Intn(len(racks))]})
	}
	topics := []string{"logs", "metrics", "audit"}[:1+rng.Intn(3)]
	np := 1 + rng.Intn(maxParts)
	for i := range np {
		t := topics[rng.Intn(len(topics))]
		rf := 1 + rng.Intn(nb)
		replicas := rng.Perm(nb)[:rf]
		for r := range replicas {
			replicas[r]++
		}
		isr := slices.Clone(replicas[:1+rng.Intn(rf)])
		leader := replicas[0]
		if rng.Intn(10) == 0 {
			leader = -1
		}
		c.Partitions = append(c.Partitions, Partition{Topic: t, ID: i, Leader: leader, Replicas: replicas, ISR: isr})
	}
	memberRacks := append(racks, "az-d")
	nm := 1 + rng.Intn(maxMembers)
	members := make([]Member, nm)
	for i := range members {
		m := Member{ID: fmt.Sprintf("m%d", i), Rack: memberRacks[rng.Intn(len(memberRacks))]}
		if rng.Intn(4) == 0 {
			for _, t := range topics {
				if rng.Intn(2) == 0 {
					m.Topics = append(m.Topics, t)
				}
			}
		} else {
			m.Topics = slices.Clone(topics)
		}
		members[i] = m
	}
	for _, p := range c.Partitions {
		if rng.Intn(3) > 0 {
			m := &members[rng.Intn(nm)]
			m.Owned = append(m.Owned, TopicPartition{p.Topic, p.ID})
		}
	}
	return c, members
}

// TestPlanMatchesExhaustiveSearch compares Plan with every assignment of
// small random topologies: Plan must reach the least sum of squared counts
// (balance), then the most local reads, then the most kept partitions.
func TestPlanMatchesExhaustiveSearch(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for n := range 400 {
		c, members := randomTopology(rng, 7, 4)
		got := Plan(c, members)
		best := exhaustive(c, members)
		score := scoreOf(c, members, got)
		if score != best {
			t.Fatalf("case %d: plan scores %+v, best is %+v\ncluster %+v\nmembers %+v\nplan %v",
				n, score, best, c, members, got.Assignments)
		}
		if score.local != got.Local {
			t.Fatalf("case %d: Local says %d, counted %d", n, got.Local, score.local)
		}
		if uniform(members) && spreadOf(got) > 1 {
			t.Fatalf("case %d: same subscriptions, counts %v", n, counts(got))
		}
		again := Plan(c, withOwned(members, got))
		if !maps.EqualFunc(got.Assignments, again.Assignments, slices.Equal) {
			t.Fatalf("case %d: fed back, the plan changed:\n%v\n%v", n, got.Assignments, again.Assignments)
		}
	}
}

func uniform(members []Member) bool {
	for _, m := range members {
		if !slices.Equal(m.Topics, members[0].Topics) {
			return false
		}
	}
	return true
}

type planScore struct {
	squares int // sum of squared counts, less is more balanced
	local   int
	kept    int
}

func (s planScore) better(o planScore) bool {
	if s.squares != o.squares {
		return s.squares < o.squares
	}
	if s.local != o.local {
		return s.local > o.local
	}
	return s.kept > o.kept
}

// ownersOf resolves claims the way Plan documents: first claimant in ID
// order that subscribes to the topic.
func ownersOf(members []Member) map[TopicPartition]string {
	sorted := slices.Clone(members)
	slices.SortFunc(sorted, compareMembers)
	owners := make(map[TopicPartition]string)
	for _, m := range sorted {
		for _, tp := range m.Owned {
			if _, taken := owners[tp]; !taken && slices.Contains(m.Topics, tp.Topic) {
				owners[tp] = m.ID
			}
		}
	}
	return owners
}

func localTo(c Cluster, p Partition, rack string) bool {
	if rack == "" {
		return false
	}
	rackOf := func(id int) string {
		for _, b := range c.Brokers {
			if b.ID == id {
				return b.Rack
			}
		}
		return ""
	}
	if rackOf(p.Leader) == rack {
		return true
	}
	if c.FollowerFetching {
		for _, b := range p.ISR {
			if rackOf(b) == rack {
				return true
			}
		}
	}
	return false
}

func scoreOf(c Cluster, members []Member, r PlanResult) planScore {
	owners := ownersOf(members)
	var s planScore
	for _, m := range members {
		tps := r.Assignments[m.ID]
		s.squares += len(tps) * len(tps)
		for _, tp := range tps {
			if owners[tp] == m.ID {
				s.kept++
			}
			for _, p := range c.Partitions {
				if p.Topic == tp.Topic && p.ID == tp.Partition && localTo(c, p, m.Rack) {
					s.local++
				}
			}
		}
	}
	return s
}

// exhaustive tries every assignment of partitions to subscribed members.
func exhaustive(c Cluster, members []Member) planScore {
	owners := ownersOf(members)
	type choice struct {
		member       int
		local, owned bool
	}
	var options [][]choice
	for _, p := range c.Partitions {
		var opts []choice
		for mi, m := range members {
			if slices.Contains(m.Topics, p.Topic) {
				opts = append(opts, choice{mi, localTo(c, p, m.Rack), owners[TopicPartition{p.Topic, p.ID}] == m.ID})
			}
		}
		if len(opts) > 0 {
			options = append(options, opts)
		}
	}
	best := planScore{squares: 1 << 30}
	load := make([]int, len(members))
	var walk func(i int, s planScore)
	walk = func(i int, s planScore) {
		if i == len(options) {
			for _, l := range load {
				s.squares += l * l
			}
			if s.better(best) {
				best = s
			}
			return
		}
		for _, o := range options[i] {
			load[o.member]++
			next := s
			if o.local {
				next.local++
			}
			if o.owned {
				next.kept++
			}
			walk(i+1, next)
			load[o.member]--
		}
	}
	walk(0, planScore{})
	return best
}

func TestFitsInt64(t *testing.T) {
	for _, tt := range []struct {
		factors []int64
		want    bool
	}{
		{[]int64{1000, 1002, 1000, 10}, true},
		{[]int64{1 << 20, 1 << 21, 1 << 21}, true},
		{[]int64{1 << 20, 1 << 21, 1<<21 + 1}, false},
		{[]int64{100_000, 100_002, 100_000, 100_000}, false},
	} {
		if got := fitsInt64(tt.factors...); got != tt.want {
			t.Errorf("fitsInt64%v = %v", tt.factors, got)
		}
	}
}
