//go:build !nodemo

package main

import (
	"encoding/binary"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// demoZones gives the demo's embedded brokers (franz-go's kfake) what a
// three-zone cluster has and kfake lacks: kfake runs several brokers and
// lets followers serve fetches (SetFollowers), but names every broker's
// rack "krack" and never answers with a preferred read replica. Broker i
// is put in zones[i] on the wire: Metadata names its rack and every broker
// as a replica in sync, and a Fetch from a reader in another zone is
// answered as Kafka's RackAwareReplicaSelector answers it (no records, the
// replica in the reader's zone preferred, KIP-392). The reader's side —
// zone, balancer, fetch-from-follower, byte counts by rack — is the job's
// own code; the zones are labels on one machine (`make zones` measures
// real cross-zone bytes).
type demoZones struct {
	zones []string
	mu    sync.Mutex
	nodes int32 // listeners made so far: kfake makes broker i's i-th
}

// listen is kfake's ListenFn.
func (z *demoZones) listen(network, address string) (net.Listener, error) {
	ln, err := net.Listen(network, address)
	if err != nil {
		return nil, err
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	node := z.nodes
	z.nodes++
	return &zoneListener{Listener: ln, zones: z, node: node}, nil
}

// serveFromEveryZone lets every broker serve every partition of topic,
// as in a cluster with one replica per zone.
func (z *demoZones) serveFromEveryZone(c *kfake.Cluster, topic string) {
	for _, p := range c.PartitionInfos(topic) {
		var followers []int32
		for n := range int32(len(z.zones)) {
			if n != p.Leader {
				followers = append(followers, n)
			}
		}
		c.SetFollowers(topic, p.Partition, followers)
	}
}

func (z *demoZones) zone(node int32) string {
	if node >= 0 && int(node) < len(z.zones) {
		return z.zones[node]
	}
	return ""
}

type zoneListener struct {
	net.Listener
	zones *demoZones
	node  int32
}

func (l *zoneListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &zoneConn{Conn: c, zones: l.zones, node: l.node, asked: map[int32]askedFor{}}, nil
}

// zoneConn sees a client's requests as kfake reads them and rewrites the
// Metadata and Fetch answers kfake writes back.
type zoneConn struct {
	net.Conn
	zones *demoZones
	node  int32

	mu    sync.Mutex
	asked map[int32]askedFor // by correlation ID
	in    []byte             // request bytes not yet a whole frame
	out   []byte             // answer bytes not yet a whole frame
}

type askedFor struct {
	key, version int16
	rack         string // a Fetch's reader zone
}

func (c *zoneConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	c.in = append(c.in, p[:n]...)
	for {
		frame, rest, ok := nextFrame(c.in)
		if !ok {
			break
		}
		c.noteRequest(frame)
		c.in = rest
	}
	c.mu.Unlock()
	return n, err
}

func (c *zoneConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.out = append(c.out, p...)
	var send []byte
	for {
		frame, rest, ok := nextFrame(c.out)
		if !ok {
			break
		}
		send = c.answer(send, frame)
		c.out = rest
	}
	c.mu.Unlock()
	if len(send) > 0 {
		if _, err := c.Conn.Write(send); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// nextFrame splits a size-prefixed Kafka frame off b.
func nextFrame(b []byte) (frame, rest []byte, ok bool) {
	if len(b) < 4 {
		return nil, b, false
	}
	n := int(binary.BigEndian.Uint32(b))
	if len(b) < 4+n {
		return nil, b, false
	}
	return b[4 : 4+n], b[4+n:], true
}

func (c *zoneConn) noteRequest(frame []byte) {
	r := kbin.Reader{Src: frame}
	key, version, corr := r.Int16(), r.Int16(), r.Int32()
	r.NullableString() // client ID
	if key != int16(kmsg.Metadata) && key != int16(kmsg.Fetch) {
		return
	}
	a := askedFor{key: key, version: version}
	if key == int16(kmsg.Fetch) {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(version)
		if req.IsFlexible() {
			kmsg.SkipTags(&r)
		}
		if r.Complete() != nil || req.ReadFrom(r.Src) != nil {
			return
		}
		a.rack = req.Rack
	}
	c.asked[corr] = a
}

// answer appends the frame to send, rewritten when it answers a Metadata
// or Fetch request; anything it cannot read goes out as kfake wrote it.
func (c *zoneConn) answer(send, frame []byte) []byte {
	unchanged := binary.BigEndian.AppendUint32(send, uint32(len(frame)))
	unchanged = append(unchanged, frame...)
	if len(frame) < 4 {
		return unchanged
	}
	corr := int32(binary.BigEndian.Uint32(frame))
	a, ok := c.asked[corr]
	if !ok {
		return unchanged
	}
	delete(c.asked, corr)
	resp := kmsg.ResponseForKey(a.key)
	resp.SetVersion(a.version)
	r := kbin.Reader{Src: frame[4:]}
	if resp.IsFlexible() {
		kmsg.SkipTags(&r)
	}
	if r.Complete() != nil || resp.ReadFrom(r.Src) != nil {
		return unchanged
	}
	switch resp := resp.(type) {
	case *kmsg.MetadataResponse:
		c.zones.label(resp)
	case *kmsg.FetchResponse:
		c.zones.preferLocal(resp, c.node, a.rack)
	}
	body := binary.BigEndian.AppendUint32(nil, uint32(corr))
	if resp.IsFlexible() {
		body = append(body, 0) // no tagged fields
	}
	body = resp.AppendTo(body)
	send = binary.BigEndian.AppendUint32(send, uint32(len(body)))
	return append(send, body...)
}

// label names each broker's zone, and every broker a replica in sync.
func (z *demoZones) label(resp *kmsg.MetadataResponse) {
	for i := range resp.Brokers {
		if zone := z.zone(resp.Brokers[i].NodeID); zone != "" {
			resp.Brokers[i].Rack = &zone
		}
	}
	for t := range resp.Topics {
		for p := range resp.Topics[t].Partitions {
			part := &resp.Topics[t].Partitions[p]
			if part.ErrorCode != 0 || part.Leader < 0 {
				continue
			}
			replicas := []int32{part.Leader}
			for n := range int32(len(z.zones)) {
				if n != part.Leader {
					replicas = append(replicas, n)
				}
			}
			part.Replicas, part.ISR = replicas, slices.Clone(replicas)
		}
	}
}

// preferLocal answers a reader in another zone than the broker's as a
// rack-aware leader does: no records, and the replica in its zone.
func (z *demoZones) preferLocal(resp *kmsg.FetchResponse, node int32, rack string) {
	local := int32(slices.Index(z.zones, rack))
	if rack == "" || local < 0 || local == node {
		return
	}
	for t := range resp.Topics {
		for p := range resp.Topics[t].Partitions {
			part := &resp.Topics[t].Partitions[p]
			if part.ErrorCode != 0 {
				continue
			}
			part.PreferredReadReplica = local
			part.RecordBatches = nil
			part.AbortedTransactions = nil
		}
	}
}

// delayFirstRebalance gives no member an assignment until members have
// joined the group or wait has passed, as Kafka's
// group.initial.rebalance.delay.ms (3 s by default) does and kfake does
// not: without it the first member to join took every partition and, on
// a small topic, read it all before the others joined. Holding the first
// JoinGroups is not enough: each member sends two (the first is answered
// MEMBER_ID_REQUIRED), so three requests came from two members, and kfake
// completes a rebalance as soon as every member it knows has joined — the
// first member alone. So the members are counted by the ids they join
// with, and every SyncGroup (where a member learns its assignment) waits
// until all have joined: a SyncGroup of an outdated generation is refused
// and its member joins again, with the others.
func delayFirstRebalance(c *kfake.Cluster, members int, wait time.Duration) {
	var (
		mu       sync.Mutex
		joined   = make(map[string]bool)
		released = make(chan struct{})
		deadline *time.Timer
	)
	release := sync.OnceFunc(func() { close(released) })
	isReleased := func() bool {
		select {
		case <-released:
			return true
		default:
			return false
		}
	}
	c.ControlKey(int16(kmsg.JoinGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if isReleased() {
			return nil, nil, false
		}
		mu.Lock()
		if deadline == nil {
			deadline = time.AfterFunc(wait, release)
		}
		if id := req.(*kmsg.JoinGroupRequest).MemberID; id != "" {
			joined[id] = true
		}
		if len(joined) >= members {
			release()
		}
		mu.Unlock()
		return nil, nil, false
	})
	c.ControlKey(int16(kmsg.SyncGroup), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if !isReleased() {
			c.SleepControl(func() { <-released })
		}
		return nil, nil, false
	})
}
