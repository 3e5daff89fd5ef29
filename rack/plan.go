package rack

import (
	"cmp"
	"slices"
	"strings"
)

// Broker is a broker as the planner sees it: where it stands.
type Broker struct {
	ID   int    `json:"id"`
	Rack string `json:"rack"`
}

// Partition is a topic partition and where its replicas live.
type Partition struct {
	Topic    string
	ID       int
	Leader   int // broker ID; -1 when the partition has no leader
	Replicas []int
	ISR      []int
}

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string `json:"topic"`
	Partition int    `json:"partition"`
}

func (tp TopicPartition) compare(o TopicPartition) int {
	return cmp.Or(strings.Compare(tp.Topic, o.Topic), cmp.Compare(tp.Partition, o.Partition))
}

// Member is a consumer group member: its rack ("" when unknown), the topics
// it subscribes to and the partitions it owned in the previous generation.
type Member struct {
	ID     string
	Rack   string
	Topics []string
	Owned  []TopicPartition
}

// Cluster is what the planner knows about the brokers and partitions.
type Cluster struct {
	Brokers    []Broker
	Partitions []Partition
	// FollowerFetching says the brokers serve fetches from in-sync followers
	// (KIP-392, replica.selector.class=RackAwareReplicaSelector), so a
	// partition is local to every rack that holds an in-sync replica, not
	// only to the leader's.
	FollowerFetching bool
}

// PlanResult is an assignment and how much of it reads within the rack.
type PlanResult struct {
	// Assignments maps every member to its partitions, sorted; a member with
	// nothing to read has an empty list.
	Assignments map[string][]TopicPartition `json:"assignments"`
	// Local counts assigned partitions that the member reads in its own rack.
	Local int `json:"local"`
	// Total counts assigned partitions.
	Total int `json:"total"`
	// Unassigned lists partitions of topics that no member subscribes to.
	Unassigned []TopicPartition `json:"unassigned,omitempty"`

	members []plannedMember // for WriteText; empty when decoded from JSON
}

type plannedMember struct {
	id, rack string
	local    []bool // parallel to Assignments[id]
}

// Plan assigns the cluster's partitions to the group's members. In order of
// priority the assignment is
//
//  1. balanced: when every member subscribes to the same topics, every
//     member's partition count is within one of every other's. When
//     subscriptions differ, as even as they allow, as Kafka's sticky
//     assignor means it: no member could hand a partition to one with two
//     fewer (see sinkMixed);
//  2. as local as any balanced assignment can be: a partition is local to a
//     member whose rack holds its leader or, with follower fetching, an
//     in-sync replica. Members without a rack, or whose rack holds no
//     replica, read across racks;
//  3. sticky: a partition stays with the member that owned it unless balance
//     or locality needs it elsewhere, so a plan fed back as the owned
//     partitions comes back unchanged;
//  4. deterministic: the order of brokers, partitions, replicas and members
//     does not matter.
//
// Each objective is met exactly, not approximately: Plan solves a min-cost
// flow (see solve). The one exception: with mixed subscriptions past about
// 10⁵ partitions, stickiness is dropped to keep costs within int64.
// Partitions of topics nobody subscribes to come back in Unassigned.
func Plan(c Cluster, members []Member) PlanResult {
	p := newPlanner(c, members)
	p.solve()
	return p.result()
}

// planner holds one Plan call's state. Members are indexed in ID order,
// partitions in (topic, ID) order, groups in subscription order.
type planner struct {
	members    []Member
	partitions []Partition // only partitions some member subscribes to
	unassigned []TopicPartition
	brokerRack map[int]string
	follower   bool

	groups      []memberGroup // members with identical subscriptions
	subscribers map[string][]int
	owner       []int // partition index → owning member index, or -1
	assign      []int // partition index → member index: the answer
}

type memberGroup struct {
	topics  []string // subscribed topics that have partitions, sorted
	members []int
}

func newPlanner(c Cluster, members []Member) *planner {
	p := &planner{
		brokerRack:  make(map[int]string, len(c.Brokers)),
		follower:    c.FollowerFetching,
		subscribers: make(map[string][]int),
	}
	brokers := slices.Clone(c.Brokers)
	slices.SortFunc(brokers, func(a, b Broker) int {
		return cmp.Or(cmp.Compare(a.ID, b.ID), strings.Compare(a.Rack, b.Rack))
	})
	for _, b := range brokers {
		if _, seen := p.brokerRack[b.ID]; !seen {
			p.brokerRack[b.ID] = b.Rack
		}
	}

	// Member IDs are unique within a group; should one repeat, the entry
	// that sorts first wins, so the answer stays deterministic.
	p.members = slices.Clone(members)
	slices.SortFunc(p.members, compareMembers)
	p.members = slices.CompactFunc(p.members, func(a, b Member) bool { return a.ID == b.ID })

	hasPartitions := make(map[string]bool)
	for _, part := range c.Partitions {
		hasPartitions[part.Topic] = true
	}
	groupIndex := make(map[string]int)
	for mi, m := range p.members {
		var topics []string
		for _, t := range m.Topics {
			if hasPartitions[t] {
				topics = append(topics, t)
			}
		}
		slices.Sort(topics)
		topics = slices.Compact(topics)
		if len(topics) == 0 {
			continue // reads nothing
		}
		for _, t := range topics {
			p.subscribers[t] = append(p.subscribers[t], mi)
		}
		key := strings.Join(topics, "\x00")
		gi, ok := groupIndex[key]
		if !ok {
			gi = len(p.groups)
			groupIndex[key] = gi
			p.groups = append(p.groups, memberGroup{topics: topics})
		}
		p.groups[gi].members = append(p.groups[gi].members, mi)
	}

	parts := slices.Clone(c.Partitions)
	slices.SortFunc(parts, func(a, b Partition) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.ID, b.ID))
	})
	parts = slices.CompactFunc(parts, func(a, b Partition) bool { return a.Topic == b.Topic && a.ID == b.ID })
	for _, part := range parts {
		if len(p.subscribers[part.Topic]) == 0 {
			p.unassigned = append(p.unassigned, TopicPartition{part.Topic, part.ID})
			continue
		}
		p.partitions = append(p.partitions, part)
	}
	p.setOwners()
	return p
}

// compareMembers orders by ID, then by content, so that even a repeated ID
// resolves the same way whatever the input order.
func compareMembers(a, b Member) int {
	return cmp.Or(strings.Compare(a.ID, b.ID), strings.Compare(a.Rack, b.Rack),
		slices.Compare(a.Topics, b.Topics),
		slices.CompareFunc(a.Owned, b.Owned, TopicPartition.compare))
}

// setOwners resolves who owned each partition. A partition claimed by two
// members (a stale claim after a missed generation) goes to the first in ID
// order; a claim by a member no longer subscribed to the topic is ignored.
func (p *planner) setOwners() {
	index := make(map[TopicPartition]int, len(p.partitions))
	for i, part := range p.partitions {
		index[TopicPartition{part.Topic, part.ID}] = i
	}
	p.owner = make([]int, len(p.partitions))
	for i := range p.owner {
		p.owner[i] = -1
	}
	for mi, m := range p.members {
		for _, tp := range m.Owned {
			i, ok := index[tp]
			if ok && p.owner[i] < 0 && slices.Contains(p.subscribers[tp.Topic], mi) {
				p.owner[i] = mi
			}
		}
	}
}

// localRacks lists, sorted, the racks from which the partition can be read
// without crossing racks.
func (p *planner) localRacks(part Partition) []string {
	var racks []string
	add := func(broker int) {
		if r := p.brokerRack[broker]; r != "" && !slices.Contains(racks, r) {
			racks = append(racks, r)
		}
	}
	add(part.Leader)
	if p.follower {
		for _, b := range part.ISR {
			add(b)
		}
	}
	slices.Sort(racks)
	return racks
}

func (p *planner) isLocal(part Partition, member int) bool {
	r := p.members[member].Rack
	return r != "" && slices.Contains(p.localRacks(part), r)
}

// solve builds the flow network and reads the assignment off its min-cost
// maximum flow. One unit of flow is one partition:
//
//	source → partition ─┬→ owner ───────────────────┐
//	                    ├→ (group, rack) → members ─┼→ member ⇒ sink
//	                    └→ (group, any)  → members ─┘
//
// A partition reaches a member through its owner edge (the member that owned
// it), the hub of a rack local to it, or the "any" hub of a group that
// subscribes to its topic. The hubs stand for several members, so the
// network has O(partitions × racks) edges, not O(partitions × members).
//
// Costs rank the objectives. Reading across racks costs w, more than all
// moves together, and moving a partition away from its owner costs 1: owner
// edge 0 when local else w, rack hub 1, any hub w+1. A path never costs less
// than the pairing it makes (a hub path to the owner costs more than the
// owner edge) and each pairing has a path of exactly its cost, so a min-cost
// flow is an optimal assignment. Fed its own plan as owned, the plan costs
// w × (cross-rack reads), the least possible, and any other assignment with
// as many local reads moves a partition and costs more: the plan is the
// unique optimum and comes back unchanged.
//
// The member ⇒ sink part holds balance; see sinkUniform and sinkMixed.
func (p *planner) solve() {
	parts := len(p.partitions)
	p.assign = make([]int, parts)
	if parts == 0 {
		return
	}
	const source, sink = 0, 1
	net := newFlowNetwork(2 + parts + len(p.members))
	partNode := func(i int) int { return 2 + i }
	memberNode := func(mi int) int { return 2 + parts + mi }

	w, move := int64(parts)+1, int64(1)
	var memberCap int
	if len(p.groups) == 1 {
		memberCap = p.sinkUniform(net, memberNode, sink)
	} else {
		memberCap = p.leastMaxCount()
		if !fitsInt64(int64(parts), w+move, int64(parts), int64(memberCap)) {
			// Past about 10⁵ partitions the balance costs would overflow:
			// give up stickiness, never balance or locality.
			w, move = 1, 0
		}
		p.sinkMixed(net, memberNode, sink, memberCap, int64(parts)*(w+move)+1)
	}

	// hubs: per group, one node per rack its members are in, and one "any".
	type hub struct {
		members []int // member indices behind the hub
		out     []int // the edge to each of them
	}
	hubs := make(map[int]*hub)
	addHub := func(ms []int) int {
		n := net.addNode()
		h := &hub{members: ms}
		for _, mi := range ms {
			h.out = append(h.out, net.addEdge(n, memberNode(mi), memberCap, 0))
		}
		hubs[n] = h
		return n
	}
	rackHub := make([]map[string]int, len(p.groups))
	anyHub := make([]int, len(p.groups))
	for gi, g := range p.groups {
		byRack := make(map[string][]int)
		var racks []string
		for _, mi := range g.members {
			r := p.members[mi].Rack
			if r == "" {
				continue
			}
			if byRack[r] == nil {
				racks = append(racks, r)
			}
			byRack[r] = append(byRack[r], mi)
		}
		slices.Sort(racks)
		rackHub[gi] = make(map[string]int, len(racks))
		for _, r := range racks {
			rackHub[gi][r] = addHub(byRack[r])
		}
		anyHub[gi] = addHub(g.members)
	}

	type route struct{ edge, to int }
	routes := make([][]route, parts)
	for i, part := range p.partitions {
		net.addEdge(source, partNode(i), 1, 0)
		add := func(to int, cost int64) {
			routes[i] = append(routes[i], route{net.addEdge(partNode(i), to, 1, cost), to})
		}
		if o := p.owner[i]; o >= 0 {
			if p.isLocal(part, o) {
				add(memberNode(o), 0)
			} else {
				add(memberNode(o), w)
			}
		}
		racks := p.localRacks(part)
		for gi, g := range p.groups {
			if _, ok := slices.BinarySearch(g.topics, part.Topic); !ok {
				continue
			}
			for _, r := range racks {
				if n, ok := rackHub[gi][r]; ok {
					add(n, move)
				}
			}
			add(anyHub[gi], w+move)
		}
	}

	net.minCostMaxFlow(source, sink)

	// Owner edges name the member. Partitions that went through a hub are
	// dealt to the hub's members in order, as many to each as the flow sends
	// it. The deal does not change the cost: an optimal flow never sends a
	// partition through a hub to its own owner (the owner edge is cheaper),
	// nor through an "any" hub to a member local to it (the rack hub is).
	queued := make(map[int][]int) // hub node → partition indices
	for i := range p.partitions {
		p.assign[i] = -1
		for _, r := range routes[i] {
			if net.flowOn(r.edge) == 0 {
				continue
			}
			if _, ok := hubs[r.to]; ok {
				queued[r.to] = append(queued[r.to], i)
			} else {
				p.assign[i] = r.to - memberNode(0)
			}
		}
	}
	order := make([]int, 0, len(queued))
	for n := range queued {
		order = append(order, n)
	}
	slices.Sort(order)
	for _, n := range order {
		h, queue := hubs[n], queued[n]
		for k, mi := range h.members {
			for range net.flowOn(h.out[k]) {
				p.assign[queue[0]] = mi
				queue = queue[1:]
			}
		}
	}
}

// sinkUniform holds balance when every member subscribes to the same topics:
// with P partitions and M members, each member takes floor(P/M) or one
// more, and exactly P mod M members take one more. Each member sends floor
// units straight to the sink and at most one more through a shared spare
// node of capacity P mod M. Capacities sum to P, so a maximum flow assigns
// every partition and uses every spare slot, and the flow, not a rule
// fixed in advance, chooses which members take the extra partition: the
// ones that make it local. Returns the most one member can take.
func (p *planner) sinkUniform(net *flowNetwork, memberNode func(int) int, sink int) int {
	g := p.groups[0]
	floor, spare := len(p.partitions)/len(g.members), len(p.partitions)%len(g.members)
	spareNode := -1
	if spare > 0 {
		spareNode = net.addNode()
		net.addEdge(spareNode, sink, spare, 0)
	}
	for _, mi := range g.members {
		if floor > 0 {
			net.addEdge(memberNode(mi), sink, floor, 0)
		}
		if spareNode >= 0 {
			net.addEdge(memberNode(mi), spareNode, 1, 0)
		}
	}
	if spare > 0 {
		return floor + 1
	}
	return floor
}

// sinkMixed holds balance when subscriptions differ, where "within one" may
// be impossible (a topic with 10 partitions and one subscriber). Balance is
// then the spread with the least sum of squared counts, which is also the
// one whose counts sorted high to low are least (Frank and Murota,
// "decreasingly minimal" elements), and which leaves no member two
// partitions ahead of another that could take one of them, directly or
// through a chain of swaps: what Kafka's sticky assignor calls balanced,
// and where all subscribe alike, exactly within one.
//
// The k-th partition a member takes costs k×unit, unit exceeding every
// locality and move cost together, so the sum of squares comes first. A
// member is offered at most `most` partitions, the least maximum count a
// complete assignment allows: every balanced spread has that maximum.
func (p *planner) sinkMixed(net *flowNetwork, memberNode func(int) int, sink, most int, unit int64) {
	eligible := make([]int, len(p.members))
	for _, part := range p.partitions {
		for _, mi := range p.subscribers[part.Topic] {
			eligible[mi]++
		}
	}
	for mi := range p.members {
		for k := 1; k <= min(most, eligible[mi]); k++ {
			net.addEdge(memberNode(mi), sink, 1, unit*int64(k))
		}
	}
}

// fitsInt64 reports whether the product of the factors, all positive, is at
// most 2⁶², leaving room for sums of such products.
func fitsInt64(factors ...int64) bool {
	product := int64(1)
	for _, f := range factors {
		if f > 0 && product > (1<<62)/f {
			return false
		}
		product *= f
	}
	return true
}

// leastMaxCount is the smallest per-member cap under which every partition
// still finds a subscribed member.
func (p *planner) leastMaxCount() int {
	perTopic := make(map[string]int)
	var topics []string
	for _, part := range p.partitions {
		if perTopic[part.Topic] == 0 {
			topics = append(topics, part.Topic)
		}
		perTopic[part.Topic]++
	}
	fits := func(limit int) bool {
		const source, sink = 0, 1
		net := newFlowNetwork(2 + len(topics) + len(p.members))
		for ti, t := range topics {
			net.addEdge(source, 2+ti, perTopic[t], 0)
			for _, mi := range p.subscribers[t] {
				net.addEdge(2+ti, 2+len(topics)+mi, perTopic[t], 0)
			}
		}
		for mi := range p.members {
			net.addEdge(2+len(topics)+mi, sink, limit, 0)
		}
		flow, _ := net.minCostMaxFlow(source, sink)
		return flow == len(p.partitions)
	}
	lo, hi := 1, len(p.partitions) // fits(hi) always holds
	for lo < hi {
		mid := (lo + hi) / 2
		if fits(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

func (p *planner) result() PlanResult {
	r := PlanResult{
		Assignments: make(map[string][]TopicPartition, len(p.members)),
		Unassigned:  p.unassigned,
		members:     make([]plannedMember, len(p.members)),
	}
	for mi, m := range p.members {
		r.Assignments[m.ID] = []TopicPartition{}
		r.members[mi] = plannedMember{id: m.ID, rack: m.Rack}
	}
	// Partitions are in (topic, ID) order, so each member's list is sorted.
	for i, part := range p.partitions {
		mi := p.assign[i]
		if mi < 0 {
			continue // unreachable: the capacities always fit every partition
		}
		local := p.isLocal(part, mi)
		r.Assignments[p.members[mi].ID] = append(r.Assignments[p.members[mi].ID], TopicPartition{part.Topic, part.ID})
		r.members[mi].local = append(r.members[mi].local, local)
		r.Total++
		if local {
			r.Local++
		}
	}
	return r
}
