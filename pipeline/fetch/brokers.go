package fetch

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/apiversions"
	"github.com/segmentio/kafka-go/protocol/listoffsets"
	"github.com/segmentio/kafka-go/protocol/metadata"
	"github.com/segmentio/kafka-go/protocol/saslauthenticate"
	"github.com/segmentio/kafka-go/protocol/saslhandshake"
	"github.com/segmentio/kafka-go/sasl"
)

// ListOffsets timestamps with a special meaning (KIP-79).
const (
	listEarliest int64 = -2
	listLatest   int64 = -1
)

// brokerPool is a Client's view of the cluster: broker addresses and racks
// from metadata, and one control connection per broker for metadata,
// ListOffsets and OffsetForLeaderEpoch, shared by every partition reader of
// the Client and kept across group generations. A connection carries one
// request at a time (brokerConn.mu); fetches, which wait up to MaxWait at the
// broker, go over each fetch session's own connection instead, so a long
// poll never holds up a control request.
type brokerPool struct {
	dialer *kafka.Dialer
	seeds  []string
	log    *slog.Logger
	stats  *Stats // counts dials; nil counts nothing

	mu     sync.Mutex
	nodes  map[int32]brokerNode
	conns  map[int32]*brokerConn
	closed bool
	// dials and lookups in progress, which other readers wait for instead
	// of making their own: after a rebalance hundreds of readers ask at
	// once.
	dialing map[int32]*flight[*brokerConn]
	looking map[string]*flight[metadataAnswer]
}

// flight is one dial or request that several readers wait for.
type flight[T any] struct {
	done chan struct{}
	val  T
	err  error
}

type metadataAnswer struct {
	res     *metadata.Response
	version int16
}

type brokerNode struct {
	ID   int32
	Addr string
	Rack string
}

// partitionState is what metadata says about one partition. LeaderEpoch is -1
// when the broker answers a Metadata version older than v7; brokers then skip
// the epoch check.
type partitionState struct {
	Leader      int32
	LeaderEpoch int32
	Replicas    []int32
}

func newBrokerPool(dialer *kafka.Dialer, seeds []string, log *slog.Logger, stats *Stats) *brokerPool {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &brokerPool{
		dialer:  dialer,
		seeds:   seeds,
		log:     log,
		stats:   stats,
		nodes:   make(map[int32]brokerNode),
		conns:   make(map[int32]*brokerConn),
		dialing: make(map[int32]*flight[*brokerConn]),
		looking: make(map[string]*flight[metadataAnswer]),
	}
}

var errPoolClosed = errors.New("partition reader closed")

// node returns what the last metadata said about broker id.
func (p *brokerPool) node(id int32) (brokerNode, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n, ok := p.nodes[id]
	return n, ok
}

// conn returns the open control connection to broker id, dialling it if
// needed; readers asking while it is dialled wait for that dial.
func (p *brokerPool) conn(ctx context.Context, id int32) (*brokerConn, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errPoolClosed
	}
	if c := p.conns[id]; c != nil {
		p.mu.Unlock()
		return c, nil
	}
	if f := p.dialing[id]; f != nil {
		p.mu.Unlock()
		select {
		case <-f.done:
			return f.val, f.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f := &flight[*brokerConn]{done: make(chan struct{})}
	p.dialing[id] = f
	p.mu.Unlock()

	c, err := p.dialNode(ctx, id)
	p.mu.Lock()
	delete(p.dialing, id)
	if err == nil && p.closed {
		c.close()
		c, err = nil, errPoolClosed
	}
	if err == nil {
		p.conns[id] = c
	}
	p.mu.Unlock()
	f.val, f.err = c, err
	close(f.done)
	return c, err
}

// dialNode opens a new connection to broker id, at the address the last
// metadata gave, and counts it.
func (p *brokerPool) dialNode(ctx context.Context, id int32) (*brokerConn, error) {
	n, ok := p.node(id)
	if !ok {
		return nil, fmt.Errorf("broker %d is not in the cluster metadata", id)
	}
	p.stats.dialled(id, n.Rack)
	c, err := dialBroker(ctx, p.dialer, n.Addr)
	if err != nil {
		return nil, fmt.Errorf("broker %d (%s): %w", id, n.Addr, err)
	}
	return c, nil
}

// call sends req to broker id over its control connection. A failure on a
// connection the pool had kept, that can only mean the connection outlived
// its broker process (staleConn), or that its SASL session could not be
// renewed, dials once more and sends again before it counts as the broker's.
func (p *brokerPool) call(ctx context.Context, id int32, req protocol.Message) (protocol.Message, int16, error) {
	for attempt := 0; ; attempt++ {
		c, err := p.conn(ctx, id)
		if err != nil {
			return nil, 0, err
		}
		msg, reused, err := c.request(ctx, req)
		if err == nil {
			return msg, c.versions[req.ApiKey()], nil
		}
		p.drop(id, c)
		if attempt > 0 || ctx.Err() != nil || !staleConn(reused, err) {
			return nil, 0, err
		}
		p.log.Info("pooled connection is stale (the broker restarted?); dialling again", "broker", id, "err", err)
	}
}

// drop closes the connection to broker id after an I/O error: its stream is
// out of step and cannot carry another request.
func (p *brokerPool) drop(id int32, c *brokerConn) {
	p.mu.Lock()
	if p.conns[id] == c {
		delete(p.conns, id)
	}
	p.mu.Unlock()
	c.close()
}

func (p *brokerPool) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

func (p *brokerPool) close() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.closed = true
	p.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
}

// partition asks for fresh metadata of one topic and returns the partition's
// leader. It tries the brokers it knows, then the seed brokers, so it finds
// the cluster again after the broker it last talked to has gone.
func (p *brokerPool) partition(ctx context.Context, topic string, partition int) (partitionState, error) {
	res, version, err := p.sharedMetadata(ctx, topic)
	if err != nil {
		return partitionState{}, err
	}
	for _, t := range res.Topics {
		if t.Name != topic {
			continue
		}
		if t.ErrorCode != 0 {
			return partitionState{}, fmt.Errorf("metadata for topic %q: %w", topic, kafka.Error(t.ErrorCode))
		}
		for _, part := range t.Partitions {
			if int(part.PartitionIndex) != partition {
				continue
			}
			if part.ErrorCode != 0 && part.LeaderID < 0 {
				return partitionState{}, fmt.Errorf("metadata for %s/%d: %w", topic, partition, kafka.Error(part.ErrorCode))
			}
			if part.LeaderID < 0 {
				return partitionState{}, fmt.Errorf("metadata for %s/%d: %w", topic, partition, kafka.LeaderNotAvailable)
			}
			epoch := part.LeaderEpoch
			if version < 7 {
				epoch = -1
			}
			return partitionState{Leader: part.LeaderID, LeaderEpoch: epoch, Replicas: part.ReplicaNodes}, nil
		}
		return partitionState{}, fmt.Errorf("metadata for topic %q has no partition %d: %w", topic, partition, kafka.UnknownTopicOrPartition)
	}
	return partitionState{}, fmt.Errorf("metadata has no topic %q: %w", topic, kafka.UnknownTopicOrPartition)
}

// sharedMetadata is metadata, with readers that ask for the same topic
// while a request is out waiting for its answer: it is as fresh as one of
// their own.
func (p *brokerPool) sharedMetadata(ctx context.Context, topic string) (*metadata.Response, int16, error) {
	p.mu.Lock()
	if f := p.looking[topic]; f != nil {
		p.mu.Unlock()
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
		if f.err == nil || !isContextErr(f.err) {
			return f.val.res, f.val.version, f.err
		}
		// The reader that asked was stopped; ask anew.
		return p.metadata(ctx, topic)
	}
	f := &flight[metadataAnswer]{done: make(chan struct{})}
	p.looking[topic] = f
	p.mu.Unlock()
	f.val.res, f.val.version, f.err = p.metadata(ctx, topic)
	p.mu.Lock()
	delete(p.looking, topic)
	p.mu.Unlock()
	close(f.done)
	return f.val.res, f.val.version, f.err
}

func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// metadata returns the answer and the Metadata version it came in.
func (p *brokerPool) metadata(ctx context.Context, topic string) (*metadata.Response, int16, error) {
	if p.isClosed() {
		return nil, 0, errPoolClosed
	}
	req := &metadata.Request{TopicNames: []string{topic}}
	var errs []error

	p.mu.Lock()
	ids := make([]int32, 0, len(p.nodes))
	for id := range p.nodes {
		ids = append(ids, id)
	}
	p.mu.Unlock()
	for _, id := range ids {
		msg, version, err := p.call(ctx, id, req)
		if err == nil {
			res := msg.(*metadata.Response)
			p.learn(res)
			return res, version, nil
		}
		if ctx.Err() != nil || errors.Is(err, errPoolClosed) {
			return nil, 0, err
		}
		errs = append(errs, err)
	}

	for _, addr := range p.seeds {
		p.stats.dialledSeed()
		c, err := dialBroker(ctx, p.dialer, addr)
		if err == nil {
			var msg protocol.Message
			msg, err = c.roundTrip(ctx, req)
			c.close()
			if err == nil {
				res := msg.(*metadata.Response)
				p.learn(res)
				return res, c.versions[protocol.Metadata], nil
			}
		}
		if ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		errs = append(errs, fmt.Errorf("seed %s: %w", addr, err))
	}
	if len(errs) == 0 {
		return nil, 0, errors.New("metadata: no seed brokers configured")
	}
	return nil, 0, fmt.Errorf("metadata: no broker answered: %w", errors.Join(errs...))
}

// learn replaces the broker list with the one in res and closes connections
// to brokers that left or changed address.
func (p *brokerPool) learn(res *metadata.Response) {
	nodes := make(map[int32]brokerNode, len(res.Brokers))
	for _, b := range res.Brokers {
		nodes[b.NodeID] = brokerNode{
			ID:   b.NodeID,
			Addr: net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))),
			Rack: b.Rack,
		}
	}
	var stale []*brokerConn
	p.mu.Lock()
	for id, c := range p.conns {
		if n, ok := nodes[id]; !ok || n.Addr != c.addr {
			stale = append(stale, c)
			delete(p.conns, id)
		}
	}
	p.nodes = nodes
	p.mu.Unlock()
	for _, c := range stale {
		c.close()
	}
}

// listOffset sends ListOffsets for one partition to its leader. ts is a
// Unix-millisecond timestamp or listEarliest/listLatest; under read_committed
// listLatest answers the last stable offset.
func (p *brokerPool) listOffset(ctx context.Context, st partitionState, topic string, partition int, ts int64, isolation int8) (int64, error) {
	msg, _, err := p.call(ctx, st.Leader, &listoffsets.Request{
		ReplicaID:      -1,
		IsolationLevel: isolation,
		Topics: []listoffsets.RequestTopic{{
			Topic: topic,
			Partitions: []listoffsets.RequestPartition{{
				Partition:          int32(partition),
				CurrentLeaderEpoch: st.LeaderEpoch,
				Timestamp:          ts,
			}},
		}},
	})
	if err != nil {
		return 0, err
	}
	for _, t := range msg.(*listoffsets.Response).Topics {
		for _, part := range t.Partitions {
			if t.Topic != topic || int(part.Partition) != partition {
				continue
			}
			if part.ErrorCode != 0 {
				return 0, fmt.Errorf("list offsets of %s/%d at broker %d: %w", topic, partition, st.Leader, kafka.Error(part.ErrorCode))
			}
			return part.Offset, nil
		}
	}
	return 0, fmt.Errorf("list offsets of %s/%d: broker %d did not answer for the partition", topic, partition, st.Leader)
}

// brokerConn is one authenticated connection to one broker. It is dialled
// with the settings of a kafka.Dialer (DialFunc, Timeout, Resolver, TLS,
// SASLMechanism, ClientID) because kafka-go's Dialer hands out a *kafka.Conn,
// whose socket cannot carry protocol-package requests, and kafka-go's
// Transport always routes a Fetch to the leader.
type brokerConn struct {
	// mu makes one request at a time: a protocol.Conn is a single stream.
	mu       sync.Mutex
	addr     string
	pc       *protocol.Conn
	clientID string
	versions map[protocol.ApiKey]int16
	nextID   int32
	// reused is set once the connection carried a request after its
	// handshake: only such a connection can have gone stale in the pool.
	reused bool
	// SASL re-authentication (KIP-368): the mechanism, the host and port it
	// signs for, and when to authenticate again (zero: the broker set no
	// session lifetime).
	mech     sasl.Mechanism
	saslMeta sasl.Metadata
	reauthAt time.Time
}

func dialBroker(ctx context.Context, d *kafka.Dialer, addr string) (*brokerConn, error) {
	timeout := d.Timeout
	if _, ok := ctx.Deadline(); !ok && timeout <= 0 {
		timeout = requestTimeout
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	if !d.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Deadline)
		defer cancel()
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("broker address %q: %w", addr, err)
	}
	target := addr
	if d.Resolver != nil {
		hosts, err := d.Resolver.LookupHost(ctx, host)
		if err != nil {
			return nil, fmt.Errorf("resolve %s: %w", host, err)
		}
		if len(hosts) > 0 {
			target = hosts[0]
			if _, _, err := net.SplitHostPort(target); err != nil {
				target = net.JoinHostPort(target, port)
			}
		}
	}

	dial := d.DialFunc
	if dial == nil {
		dial = (&net.Dialer{LocalAddr: d.LocalAddr, KeepAlive: d.KeepAlive}).DialContext
	}
	nc, err := dial(ctx, "tcp", target)
	if err != nil {
		return nil, err
	}
	if d.TLS != nil {
		cfg := d.TLS
		if cfg.ServerName == "" {
			cfg = cfg.Clone()
			cfg.ServerName = host
		}
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
		}
		nc = tc
	}

	c := &brokerConn{addr: addr, pc: protocol.NewConn(nc, d.ClientID), clientID: d.ClientID}
	if err := c.negotiate(ctx); err != nil {
		c.close()
		return nil, err
	}
	if d.SASLMechanism != nil {
		portNum, _ := strconv.Atoi(port)
		c.saslMeta = sasl.Metadata{Host: host, Port: portNum}
		sctx := sasl.WithMetadata(ctx, &c.saslMeta)
		if err := c.authenticate(sctx, d.SASLMechanism); err != nil {
			c.close()
			return nil, fmt.Errorf("SASL %s with %s: %w", d.SASLMechanism.Name(), addr, err)
		}
	}
	c.reused = false // the handshake does not count
	return c, nil
}

// negotiate picks, for every API, the highest version both sides speak.
func (c *brokerConn) negotiate(ctx context.Context) error {
	msg, err := c.roundTrip(ctx, &apiversions.Request{})
	if err != nil {
		return fmt.Errorf("api versions: %w", err)
	}
	res := msg.(*apiversions.Response)
	if res.ErrorCode != 0 {
		return fmt.Errorf("api versions: %w", kafka.Error(res.ErrorCode))
	}
	c.versions = make(map[protocol.ApiKey]int16, len(res.ApiKeys))
	for _, k := range res.ApiKeys {
		key := protocol.ApiKey(k.ApiKey)
		c.versions[key] = key.SelectVersion(k.MinVersion, k.MaxVersion)
	}
	c.pc.SetVersions(c.versions)
	return nil
}

func (c *brokerConn) authenticate(ctx context.Context, mech sasl.Mechanism) error {
	msg, err := c.roundTrip(ctx, &saslhandshake.Request{Mechanism: mech.Name()})
	if err != nil {
		return err
	}
	if code := msg.(*saslhandshake.Response).ErrorCode; code != 0 {
		return kafka.Error(code)
	}
	// The session starts when the broker checks the last message; counting
	// from before the first is the safe side.
	began := time.Now()
	sess, state, err := mech.Start(ctx)
	if err != nil {
		return err
	}
	var lifetimeMs int64
	for done := false; !done; {
		msg, err := c.roundTrip(ctx, &saslauthenticate.Request{AuthBytes: state})
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			// Brokers may end a failed exchange by hanging up.
			return fmt.Errorf("%w (the broker hung up)", kafka.SASLAuthenticationFailed)
		}
		if err != nil {
			return err
		}
		res := msg.(*saslauthenticate.Response)
		if res.ErrorCode != 0 {
			return fmt.Errorf("%w: %s", kafka.Error(res.ErrorCode), res.ErrorMessage)
		}
		lifetimeMs = res.SessionLifetimeMs
		if done, state, err = sess.Next(ctx, res.AuthBytes); err != nil {
			return err
		}
	}
	c.mech = mech
	c.reauthAt = reauthTime(began, lifetimeMs)
	return nil
}

// request sends req and decodes the answer, renewing the SASL session first
// when it is due (KIP-368 allows that only between requests, hence under
// mu). reused says whether the connection had carried a request before, for
// staleConn. Any error leaves the connection unusable; the caller drops it.
func (c *brokerConn) request(ctx context.Context, req protocol.Message) (msg protocol.Message, reused bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	reused = c.reused
	if err := c.reauthenticateIfDue(ctx); err != nil {
		return nil, reused, err
	}
	msg, err = c.roundTrip(ctx, req)
	return msg, reused, err
}

// fetch is request for a Fetch, whose raw answer the caller parses.
func (c *brokerConn) fetch(ctx context.Context, req protocol.Message, buffer func(int) []byte) (version int16, body []byte, reused bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	reused = c.reused
	if err := c.reauthenticateIfDue(ctx); err != nil {
		return 0, nil, reused, err
	}
	version, body, err = c.exchangeInto(ctx, req, buffer)
	return version, body, reused, err
}

// roundTrip sends req and decodes the answer, on a connection the caller
// holds alone (under mu, or not yet shared). Any error leaves the connection
// unusable; the caller drops it.
func (c *brokerConn) roundTrip(ctx context.Context, req protocol.Message) (protocol.Message, error) {
	var res protocol.Message
	err := c.within(ctx, func() (err error) {
		res, err = c.pc.RoundTrip(req)
		return err
	})
	return res, err
}

// exchange sends req and returns the raw response body (after the
// correlation id), for callers that read fields kafka-go does not decode.
func (c *brokerConn) exchange(ctx context.Context, req protocol.Message) (version int16, body []byte, err error) {
	return c.exchangeInto(ctx, req, func(n int) []byte { return make([]byte, n) })
}

// exchangeInto is exchange, reading the body into buffer(size).
func (c *brokerConn) exchangeInto(ctx context.Context, req protocol.Message, buffer func(int) []byte) (version int16, body []byte, err error) {
	version = c.versions[req.ApiKey()]
	body, err = c.exchangeAt(ctx, version, req, buffer)
	return version, body, err
}

// exchangeAt is exchangeInto at a version the caller chose.
func (c *brokerConn) exchangeAt(ctx context.Context, version int16, req protocol.Message, buffer func(int) []byte) (body []byte, err error) {
	err = c.within(ctx, func() error {
		c.nextID++
		id := c.nextID
		if err := protocol.WriteRequest(c.pc, version, id, c.clientID, req); err != nil {
			return err
		}
		var head [8]byte
		if _, err := io.ReadFull(c.pc, head[:]); err != nil {
			return err
		}
		size := int32(binary.BigEndian.Uint32(head[:4]))
		if size < 4 {
			return fmt.Errorf("response of %d bytes from %s", size, c.addr)
		}
		if got := int32(binary.BigEndian.Uint32(head[4:])); got != id {
			return fmt.Errorf("correlation id mismatch from %s (sent %d, got %d)", c.addr, id, got)
		}
		body = buffer(int(size - 4))
		_, err := io.ReadFull(c.pc, body)
		return err
	})
	return body, err
}

// within runs one request/response on the connection bounded by ctx: its
// deadline (or requestTimeout) becomes the socket deadline and its
// cancellation unblocks I/O.
func (c *brokerConn) within(ctx context.Context, do func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(requestTimeout)
	}
	c.pc.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { c.pc.SetDeadline(time.Unix(1, 0)) })
	err := do()
	stop()
	c.reused = true
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		return fmt.Errorf("%s: %w", c.addr, err)
	}
	return nil
}

func (c *brokerConn) close() { c.pc.Close() }

// staleConn says whether err, from a request on a connection the pool had
// kept, may only mean that the connection outlived its broker process: a
// broker that restarted (a rolling upgrade, MSK patching) resets every
// connection from before, and the first request on one fails at once with
// EOF or a reset. Such a connection is dialled again, once, before the
// broker counts as failed. A timeout is no such sign: the broker, or the
// path to it, is slow or gone, and a redial would only wait again.
func staleConn(reused bool, err error) bool {
	if !reused || err == nil {
		return false
	}
	var ne net.Error
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	// net.ErrClosed: the reader closed it itself (Close during a fetch).
	return !errors.Is(err, net.ErrClosed) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// reauthTime is when a session of lifetimeMs that began at began should be
// renewed: brokers with connections.max.reauth.ms set (and Amazon MSK with
// IAM, whose sessions end with their credentials) close a connection whose
// session expired at its next request (KIP-368), which a reader would take
// for a lost broker. Like the Java client, renew at 85-95 % of the lifetime,
// spread so that a member's connections do not all renew at once.
func reauthTime(began time.Time, lifetimeMs int64) time.Time {
	if lifetimeMs <= 0 {
		return time.Time{}
	}
	life := time.Duration(lifetimeMs) * time.Millisecond
	return began.Add(life * time.Duration(85+rand.IntN(11)) / 100)
}

// reauthenticateIfDue runs the SASL exchange again on the open connection
// when its session is near its end, between two requests, as KIP-368 allows.
// The mechanism starts afresh, so it signs with the credentials current now
// (MSK IAM: IRSA and Pod Identity rotate them).
func (c *brokerConn) reauthenticateIfDue(ctx context.Context) error {
	if c.mech == nil || c.reauthAt.IsZero() || time.Now().Before(c.reauthAt) {
		return nil
	}
	meta := c.saslMeta
	if err := c.authenticate(sasl.WithMetadata(ctx, &meta), c.mech); err != nil {
		return fmt.Errorf("SASL %s re-authentication with %s: %w", c.mech.Name(), c.addr, err)
	}
	return nil
}
