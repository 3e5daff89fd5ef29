package rack

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/segmentio/kafka-go"
)

// contender is a group balancer under comparison; newBalancer makes the
// one a member in rack runs.
type contender struct {
	name        string
	newBalancer func(rack string, follower bool) kafka.GroupBalancer
}

var contenders = []contender{
	{"logstore", func(rack string, follower bool) kafka.GroupBalancer { return NewBalancer(rack, follower) }},
	{"kafka-go RackAffinity", func(rack string, _ bool) kafka.GroupBalancer { return &kafka.RackAffinityGroupBalancer{Rack: rack} }},
	{"kafka-go RoundRobin", func(string, bool) kafka.GroupBalancer { return kafka.RoundRobinGroupBalancer{} }},
	{"kafka-go Range", func(string, bool) kafka.GroupBalancer { return kafka.RangeGroupBalancer{} }},
}

// group is one generation's members, each running its own balancer.
type group struct {
	ids       []string
	rackOf    map[string]string
	balancers map[string]kafka.GroupBalancer
}

func newGroup(rng *rand.Rand, c contender, follower bool, racks []string) *group {
	g := &group{rackOf: make(map[string]string), balancers: make(map[string]kafka.GroupBalancer)}
	for _, r := range racks {
		g.join(rng, c, follower, r)
	}
	return g
}

// join adds a member with a random ID, as kafka-go's client ID plus UUID.
func (g *group) join(rng *rand.Rand, c contender, follower bool, rack string) {
	id := fmt.Sprintf("logstore-%08x", rng.Uint32())
	g.ids = append(g.ids, id)
	g.rackOf[id] = rack
	g.balancers[id] = c.newBalancer(rack, follower)
}

func (g *group) leave(id string) {
	g.ids = slices.DeleteFunc(g.ids, func(m string) bool { return m == id })
	delete(g.rackOf, id)
	delete(g.balancers, id)
}

// rebalance runs a generation: JoinGroup user data from every member, the
// first member leads, and logstore members learn what they now own.
func (g *group) rebalance(topics []string, partitions []kafka.Partition) kafka.GroupMemberAssignments {
	members := make([]kafka.GroupMember, len(g.ids))
	for i, id := range g.ids {
		data, _ := g.balancers[id].UserData()
		members[i] = kafka.GroupMember{ID: id, Topics: topics, UserData: data}
	}
	a := g.balancers[g.ids[0]].AssignGroups(members, partitions)
	for id, b := range g.balancers {
		if lb, ok := b.(*Balancer); ok {
			lb.SetOwned(a[id])
		}
	}
	return a
}

// TestCompareBalancers measures, on the same topologies, the share of
// partitions read in the member's own rack, the spread of partition counts
// (most minus fewest), and how many partitions change hands when a member
// leaves or joins, for logstore's Balancer and kafka-go's. kafka-go's
// answers depend on member IDs (sorted by round-robin and range) and on map
// order (rack affinity), so each row draws 200 sets of random member IDs:
// shares and moves are means, spreads the worst seen. Run with -v for the
// tables in docs/zones.md.
func TestCompareBalancers(t *testing.T) {
	const trials = 200
	// skewed: az-c's broker restarted and leads nothing until the next
	// preferred-leader election.
	skewed := spread("logs", 12, 2, threeRacks)
	for i := range skewed {
		if skewed[i].Leader == 3 {
			skewed[i].Leader = skewed[i].Replicas[1]
		}
	}
	topologies := []struct {
		name    string
		cluster Cluster
		racks   []string // one member per entry
	}{
		{"12 partitions, RF 3, a member in each of 3 zones",
			Cluster{Brokers: threeRacks, Partitions: spread("logs", 12, 3, threeRacks)},
			[]string{"az-a", "az-b", "az-c"}},
		{"12 partitions, RF 2, a member in each of 3 zones, leader only",
			Cluster{Brokers: threeRacks, Partitions: spread("logs", 12, 2, threeRacks)},
			[]string{"az-a", "az-b", "az-c"}},
		{"12 partitions, RF 2, members in 2 of 3 zones, leader only",
			Cluster{Brokers: threeRacks, Partitions: spread("logs", 12, 2, threeRacks)},
			[]string{"az-a", "az-b"}},
		{"12 partitions, RF 2, members in 2 of 3 zones, follower fetching",
			Cluster{Brokers: threeRacks, Partitions: spread("logs", 12, 2, threeRacks), FollowerFetching: true},
			[]string{"az-a", "az-b"}},
		{"12 partitions, RF 2, az-c leads none, follower fetching",
			Cluster{Brokers: threeRacks, Partitions: skewed, FollowerFetching: true},
			[]string{"az-a", "az-b", "az-c"}},
		{"48 partitions, RF 3, members 2+2+1 over 3 zones",
			Cluster{Brokers: threeRacks, Partitions: spread("logs", 48, 3, threeRacks)},
			[]string{"az-a", "az-a", "az-b", "az-b", "az-c"}},
		{"24 partitions, RF 1, members 2+1+1 over 3 zones",
			Cluster{Brokers: threeRacks, Partitions: spread("logs", 24, 1, threeRacks)},
			[]string{"az-a", "az-a", "az-b", "az-c"}},
		{"2 topics of 4 partitions, RF 3, a member in each of 3 zones",
			Cluster{Brokers: threeRacks, Partitions: append(spread("logs", 4, 3, threeRacks), spread("audit", 4, 3, threeRacks)...)},
			[]string{"az-a", "az-b", "az-c"}},
	}

	locality := tableHead("topology")
	rng := rand.New(rand.NewSource(42))
	for _, topo := range topologies {
		topics, partitions := topicsOf(topo.cluster), kafkaView(topo.cluster)
		results := make([]comparison, len(contenders))
		for range trials {
			for ci, c := range contenders {
				g := newGroup(rng, c, topo.cluster.FollowerFetching, topo.racks)
				local, spread := judge(topo.cluster, g.rackOf, g.rebalance(topics, partitions))
				results[ci].add(float64(local)/float64(len(partitions)), spread)
			}
		}
		ours := results[0]
		for ci, r := range results[1:] {
			if r.worstSpread <= 1 && r.sum > ours.sum+1e-9 {
				t.Errorf("%s: %s is more local within balance than logstore", topo.name, contenders[ci+1].name)
			}
		}
		if ours.worstSpread > 1 {
			t.Errorf("%s: logstore spread %d", topo.name, ours.worstSpread)
		}
		tableRow(locality, topo.name, results, func(c comparison) string {
			return fmt.Sprintf("%.0f %% · %d", 100*c.sum/float64(c.n), c.worstSpread)
		})
	}

	// Stickiness: 48 partitions, RF 3, members 2+2+1, leader only. Moves
	// count partitions whose owner stays in the group but that change hands
	// anyway: a leaver's own partitions must move and are not counted; on a
	// join the newcomer's 8 are. (logstore moves 9 on the join: before it,
	// one az-a member led-read 9 of az-a's 16 leaders, after it may hold 8.)
	c := Cluster{Brokers: threeRacks, Partitions: spread("logs", 48, 3, threeRacks)}
	topics, partitions := topicsOf(c), kafkaView(c)
	racks := []string{"az-a", "az-a", "az-b", "az-b", "az-c"}
	moves := tableHead("48 partitions, RF 3, members 2+2+1")
	for _, change := range []string{"an az-a member leaves", "an az-b member joins"} {
		results := make([]comparison, len(contenders))
		for range trials {
			for ci, ct := range contenders {
				g := newGroup(rng, ct, false, racks)
				before := g.rebalance(topics, partitions)
				if change == "an az-a member leaves" {
					g.leave(g.ids[slices.Index(racks, "az-a")])
				} else {
					g.join(rng, ct, false, "az-b")
				}
				after := g.rebalance(topics, partitions)
				results[ci].add(float64(moved(before, after, g.rackOf)), 0)
			}
		}
		for ci, r := range results[1:] {
			if r.sum < results[0].sum {
				t.Errorf("%s: %s moves fewer partitions than logstore", change, contenders[ci+1].name)
			}
		}
		tableRow(moves, change, results, func(c comparison) string {
			return fmt.Sprintf("%.1f", c.sum/float64(c.n))
		})
	}
	t.Logf("local reads (mean over %d draws of member IDs) · spread of partition counts (worst)\n\n%s", trials, locality.String())
	t.Logf("partitions that change hands, mean over %d draws\n\n%s", trials, moves.String())
}

func tableHead(first string) *strings.Builder {
	b := new(strings.Builder)
	b.WriteString("| " + first + " |")
	for _, c := range contenders {
		b.WriteString(" " + c.name + " |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(contenders)) + "\n")
	return b
}

func tableRow(b *strings.Builder, name string, results []comparison, cell func(comparison) string) {
	b.WriteString("| " + name + " |")
	for _, r := range results {
		b.WriteString(" " + cell(r) + " |")
	}
	b.WriteString("\n")
}

// moved counts partitions whose owner before is still a member and that
// have another owner after.
func moved(before, after kafka.GroupMemberAssignments, members map[string]string) int {
	n := 0
	for id, topics := range before {
		if _, stays := members[id]; !stays {
			continue
		}
		for topic, ids := range topics {
			for _, p := range ids {
				if !slices.Contains(after[id][topic], p) {
					n++
				}
			}
		}
	}
	return n
}

type comparison struct {
	sum         float64 // of a measure over trials
	n           int
	worstSpread int
}

func (c *comparison) add(measure float64, spread int) {
	c.sum += measure
	c.n++
	c.worstSpread = max(c.worstSpread, spread)
}

// judge counts local reads and the spread of an assignment by kafka-go.
func judge(c Cluster, rackOf map[string]string, a kafka.GroupMemberAssignments) (local, spread int) {
	p := newPlanner(c, nil)
	byName := make(map[TopicPartition]Partition)
	for _, part := range c.Partitions {
		byName[TopicPartition{part.Topic, part.ID}] = part
	}
	var counts []int
	for id := range rackOf {
		n := 0
		for topic, ids := range a[id] {
			for _, pid := range ids {
				n++
				if r := rackOf[id]; r != "" && slices.Contains(p.localRacks(byName[TopicPartition{topic, pid}]), r) {
					local++
				}
			}
		}
		counts = append(counts, n)
	}
	return local, slices.Max(counts) - slices.Min(counts)
}

func topicsOf(c Cluster) []string {
	var topics []string
	for _, p := range c.Partitions {
		if !slices.Contains(topics, p.Topic) {
			topics = append(topics, p.Topic)
		}
	}
	return topics
}

// kafkaView is the cluster as kafka-go's metadata reports it.
func kafkaView(c Cluster) []kafka.Partition {
	broker := func(id int) kafka.Broker {
		for _, b := range c.Brokers {
			if b.ID == id {
				return kafka.Broker{ID: id, Host: fmt.Sprintf("kafka-%d", id), Port: 9092, Rack: b.Rack}
			}
		}
		return kafka.Broker{ID: id}
	}
	brokers := func(ids []int) []kafka.Broker {
		out := make([]kafka.Broker, len(ids))
		for i, id := range ids {
			out[i] = broker(id)
		}
		return out
	}
	out := make([]kafka.Partition, len(c.Partitions))
	for i, p := range c.Partitions {
		out[i] = kafka.Partition{Topic: p.Topic, ID: p.ID, Leader: broker(p.Leader), Replicas: brokers(p.Replicas), Isr: brokers(p.ISR)}
	}
	return out
}
