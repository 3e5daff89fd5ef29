package rack

import "math"

// flowNetwork is a min-cost flow network with integer capacities and
// non-negative costs, solved by the primal-dual method: Dijkstra on reduced
// costs finds the length of the cheapest augmenting path, then a Dinic
// blocking-flow pass pushes every augmenting path of that length at once.
// The planner's network has few distinct path lengths, so a plan takes a
// handful of phases, not one Dijkstra per partition.
type flowNetwork struct {
	adj   [][]int32 // edge indices leaving each node
	edges []flowEdge
}

// flowEdge i and i^1 are an edge and its residual twin.
type flowEdge struct {
	to   int32
	cap  int32 // residual capacity
	cost int64
}

func newFlowNetwork(nodes int) *flowNetwork {
	return &flowNetwork{adj: make([][]int32, nodes)}
}

func (n *flowNetwork) addNode() int {
	n.adj = append(n.adj, nil)
	return len(n.adj) - 1
}

// addEdge adds an edge and returns its index; flowOn reads how much the
// solution sends through it.
func (n *flowNetwork) addEdge(from, to, capacity int, cost int64) int {
	if cost < 0 {
		panic("rack: flow edge with negative cost")
	}
	i := len(n.edges)
	n.edges = append(n.edges,
		flowEdge{to: int32(to), cap: int32(capacity), cost: cost},
		flowEdge{to: int32(from), cap: 0, cost: -cost})
	n.adj[from] = append(n.adj[from], int32(i))
	n.adj[to] = append(n.adj[to], int32(i+1))
	return i
}

// flowOn is the flow the solution sends through edge i.
func (n *flowNetwork) flowOn(i int) int { return int(n.edges[i^1].cap) }

// minCostMaxFlow sends as much flow as possible from s to t and, among the
// maximum flows, one of least cost.
//
// Why it is exact: potentials pot keep every residual edge's reduced cost
// cost+pot[u]-pot[v] non-negative (true at the start, all costs being
// non-negative), so Dijkstra is valid; after adding the distances to pot,
// the edges on cheapest paths have reduced cost zero, and a max flow through
// zero-cost edges only adds twins of zero reduced cost. A flow built from
// cheapest augmenting paths is a min-cost flow of its value (successive
// shortest paths), and the phases stop when t is unreachable.
func (n *flowNetwork) minCostMaxFlow(s, t int) (flow int, cost int64) {
	nodes := len(n.adj)
	pot := make([]int64, nodes)
	dist := make([]int64, nodes)
	level := make([]int32, nodes)
	next := make([]int, nodes)
	queue := make([]int32, 0, nodes)
	var h distHeap
	for {
		if !n.dijkstra(s, t, pot, dist, &h) {
			return flow, cost
		}
		for v := range nodes {
			if dist[v] != math.MaxInt64 {
				pot[v] += dist[v]
			}
		}
		for n.levels(s, t, pot, level, queue) {
			clear(next)
			for {
				f := n.push(s, t, math.MaxInt32, pot, level, next)
				if f == 0 {
					break
				}
				flow += f
				cost += int64(f) * (pot[t] - pot[s])
			}
		}
	}
}

func (n *flowNetwork) reduced(u int, e *flowEdge, pot []int64) int64 {
	return e.cost + pot[u] - pot[e.to]
}

// dijkstra fills dist with reduced-cost distances from s and reports whether
// t is reachable.
func (n *flowNetwork) dijkstra(s, t int, pot, dist []int64, h *distHeap) bool {
	for i := range dist {
		dist[i] = math.MaxInt64
	}
	dist[s] = 0
	h.reset()
	h.push(0, int32(s))
	for h.len() > 0 {
		d, u := h.pop()
		if d != dist[u] {
			continue
		}
		for _, ei := range n.adj[u] {
			e := &n.edges[ei]
			if e.cap == 0 {
				continue
			}
			nd := d + n.reduced(int(u), e, pot)
			if nd < dist[e.to] {
				dist[e.to] = nd
				h.push(nd, e.to)
			}
		}
	}
	return dist[t] != math.MaxInt64
}

// levels builds Dinic's BFS levels over the admissible edges (residual
// capacity, reduced cost zero) and reports whether t is reachable.
func (n *flowNetwork) levels(s, t int, pot []int64, level []int32, queue []int32) bool {
	for i := range level {
		level[i] = -1
	}
	level[s] = 0
	queue = append(queue[:0], int32(s))
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for _, ei := range n.adj[u] {
			e := &n.edges[ei]
			if e.cap > 0 && level[e.to] < 0 && n.reduced(int(u), e, pot) == 0 {
				level[e.to] = level[u] + 1
				queue = append(queue, e.to)
			}
		}
	}
	return level[t] >= 0
}

// push finds one augmenting path along increasing levels and sends up to
// limit through it.
func (n *flowNetwork) push(u, t int, limit int32, pot []int64, level []int32, next []int) int {
	if u == t {
		return int(limit)
	}
	for ; next[u] < len(n.adj[u]); next[u]++ {
		ei := n.adj[u][next[u]]
		e := &n.edges[ei]
		if e.cap == 0 || level[e.to] != level[u]+1 || n.reduced(u, e, pot) != 0 {
			continue
		}
		if f := n.push(int(e.to), t, min(limit, e.cap), pot, level, next); f > 0 {
			e.cap -= int32(f)
			n.edges[ei^1].cap += int32(f)
			return f
		}
	}
	return 0
}

// distHeap is a binary min-heap of (distance, node), with stale entries
// skipped by the caller.
type distHeap struct {
	d []int64
	v []int32
}

func (h *distHeap) reset()   { h.d, h.v = h.d[:0], h.v[:0] }
func (h *distHeap) len() int { return len(h.d) }

func (h *distHeap) push(d int64, v int32) {
	h.d, h.v = append(h.d, d), append(h.v, v)
	for i := len(h.d) - 1; i > 0; {
		p := (i - 1) / 2
		if h.d[p] <= h.d[i] {
			break
		}
		h.swap(i, p)
		i = p
	}
}

func (h *distHeap) pop() (int64, int32) {
	d, v := h.d[0], h.v[0]
	last := len(h.d) - 1
	h.swap(0, last)
	h.d, h.v = h.d[:last], h.v[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && h.d[l] < h.d[m] {
			m = l
		}
		if r < last && h.d[r] < h.d[m] {
			m = r
		}
		if m == i {
			break
		}
		h.swap(i, m)
		i = m
	}
	return d, v
}

func (h *distHeap) swap(i, j int) {
	h.d[i], h.d[j] = h.d[j], h.d[i]
	h.v[i], h.v[j] = h.v[j], h.v[i]
}
