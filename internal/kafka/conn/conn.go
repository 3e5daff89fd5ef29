package conn

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/apiversions"
	"github.com/segmentio/kafka-go/protocol/saslauthenticate"
	"github.com/segmentio/kafka-go/protocol/saslhandshake"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// RequestTimeout bounds a request whose context has no deadline of its
// own, and a dial whose Dialer sets no Timeout.
const RequestTimeout = 10 * time.Second

// Conn is one authenticated connection to one broker, carrying one request
// at a time: the fetch client's control and session connections, the group
// member's coordinator connection and the producer's connections are all
// one. It is dialled with the settings of a kafka.Dialer (DialFunc,
// Timeout, Resolver, TLS, SASLMechanism, ClientID) because kafka-go's
// Dialer hands out a *kafka.Conn, whose socket cannot carry
// protocol-package requests, and kafka-go's Transport always routes a
// Fetch to the leader. Its SASL session is renewed in place between two
// requests when due (KIP-368). Any error of a request leaves the stream
// out of step: the caller closes the connection.
type Conn struct {
	// mu makes one request at a time: a protocol.Conn is a single stream.
	mu       sync.Mutex
	addr     string
	pc       *protocol.Conn
	clientID string
	// versions is what requests go at: the highest version both the broker
	// and kafka-go speak; brokerMax is the broker's own highest, for
	// requests encoded here or with kmsg.
	versions  map[protocol.ApiKey]int16
	brokerMax map[protocol.ApiKey]int16
	nextID    int32
	// reused is set once the connection carried a request after its
	// handshake: only such a connection can have gone stale in a pool.
	reused bool
	// SASL re-authentication (KIP-368): the mechanism, the host and port it
	// signs for, and when to authenticate again (zero: the broker set no
	// session lifetime).
	mech     sasl.Mechanism
	saslMeta sasl.Metadata
	reauthAt time.Time
}

// Dial opens a Conn to addr with d's settings, TLS and SASL done, and
// negotiates API versions.
func Dial(ctx context.Context, d *kafka.Dialer, addr string) (*Conn, error) {
	timeout := d.Timeout
	if _, ok := ctx.Deadline(); !ok && timeout <= 0 {
		timeout = RequestTimeout
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

	c := &Conn{addr: addr, pc: protocol.NewConn(nc, d.ClientID), clientID: d.ClientID}
	if err := c.negotiate(ctx); err != nil {
		c.Close()
		return nil, err
	}
	if d.SASLMechanism != nil {
		portNum, _ := strconv.Atoi(port)
		c.saslMeta = sasl.Metadata{Host: host, Port: portNum}
		sctx := sasl.WithMetadata(ctx, &c.saslMeta)
		if err := c.authenticate(sctx, d.SASLMechanism); err != nil {
			c.Close()
			return nil, fmt.Errorf("SASL %s with %s: %w", d.SASLMechanism.Name(), addr, err)
		}
	}
	c.reused = false // the handshake does not count
	return c, nil
}

// negotiate picks, for every API, the highest version both sides speak.
func (c *Conn) negotiate(ctx context.Context) error {
	msg, err := c.roundTrip(ctx, &apiversions.Request{})
	if err != nil {
		return fmt.Errorf("api versions: %w", err)
	}
	res := msg.(*apiversions.Response)
	if res.ErrorCode != 0 {
		return fmt.Errorf("api versions: %w", kafka.Error(res.ErrorCode))
	}
	c.versions = make(map[protocol.ApiKey]int16, len(res.ApiKeys))
	c.brokerMax = make(map[protocol.ApiKey]int16, len(res.ApiKeys))
	for _, k := range res.ApiKeys {
		key := protocol.ApiKey(k.ApiKey)
		c.versions[key] = key.SelectVersion(k.MinVersion, k.MaxVersion)
		c.brokerMax[key] = k.MaxVersion
	}
	c.pc.SetVersions(c.versions)
	return nil
}

func (c *Conn) authenticate(ctx context.Context, mech sasl.Mechanism) error {
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

// Request sends req at the version negotiated for it and decodes the
// answer.
func (c *Conn) Request(ctx context.Context, req protocol.Message) (protocol.Message, error) {
	msg, _, err := c.RequestReused(ctx, req)
	return msg, err
}

// RequestReused is Request, saying also whether the connection had carried
// a request before, for Stale.
func (c *Conn) RequestReused(ctx context.Context, req protocol.Message) (msg protocol.Message, reused bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	reused = c.reused
	if err := c.reauthenticateIfDue(ctx); err != nil {
		return nil, reused, err
	}
	msg, err = c.roundTrip(ctx, req)
	return msg, reused, err
}

// RequestInto sends req at its negotiated version and returns the answer's
// body after the correlation id, undecoded, read into buffer(size): for
// the fetch client, which parses Fetch answers itself into its own buffers.
func (c *Conn) RequestInto(ctx context.Context, req protocol.Message, buffer func(int) []byte) (version int16, body []byte, reused bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	reused = c.reused
	if err := c.reauthenticateIfDue(ctx); err != nil {
		return 0, nil, reused, err
	}
	version = c.versions[req.ApiKey()]
	body, err = c.exchangeAt(ctx, version, req, buffer)
	return version, body, reused, err
}

// RequestRaw sends req at version and returns the answer's body after the
// correlation id, undecoded: for answers kafka-go's protocol package lays
// out in another order than the broker (Heartbeat and LeaveGroup put the
// throttle time before the error code from v1 on).
func (c *Conn) RequestRaw(ctx context.Context, version int16, req protocol.Message) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.reauthenticateIfDue(ctx); err != nil {
		return nil, err
	}
	return c.exchangeAt(ctx, version, req, func(n int) []byte { return make([]byte, n) })
}

// Exchange sends a request kafka-go's protocol package does not know
// (ConsumerGroupHeartbeat, OffsetCommit v9, Metadata v12): body is the
// request's fields at version, encoded by the caller. A flexible request
// gets header v2 (client id, then an empty tagged-field section); its
// answer's header tagged fields are skipped, so the body returned starts
// at the answer's first field.
func (c *Conn) Exchange(ctx context.Context, key, version int16, flexible bool, body []byte) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.reauthenticateIfDue(ctx); err != nil {
		return nil, err
	}
	var answer []byte
	err := c.within(ctx, func() error {
		c.nextID++
		id := c.nextID
		head := binary.BigEndian.AppendUint16(nil, uint16(key))
		head = binary.BigEndian.AppendUint16(head, uint16(version))
		head = binary.BigEndian.AppendUint32(head, uint32(id))
		head = binary.BigEndian.AppendUint16(head, uint16(len(c.clientID)))
		head = append(head, c.clientID...)
		if flexible {
			head = append(head, 0) // no tagged fields
		}
		msg := binary.BigEndian.AppendUint32(nil, uint32(len(head)+len(body)))
		msg = append(append(msg, head...), body...)
		if _, err := c.pc.Write(msg); err != nil {
			return err
		}
		var err error
		answer, err = c.readAnswer(id, func(n int) []byte { return make([]byte, n) })
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("api key %d v%d: %w", key, version, err)
	}
	if flexible {
		return skipTaggedFields(answer)
	}
	return answer, nil
}

// Kmsg is Exchange for a request kmsg encodes, at the version set in it.
func (c *Conn) Kmsg(ctx context.Context, req kmsg.Request) ([]byte, error) {
	return c.Exchange(ctx, req.Key(), req.GetVersion(), req.IsFlexible(), req.AppendTo(nil))
}

// skipTaggedFields drops a flexible header's tagged-field section: a
// count, then per field a tag, a size and the data, all unsigned varints
// but the data.
func skipTaggedFields(b []byte) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, fmt.Errorf("an answer header with no tagged-field section")
	}
	b = b[k:]
	for range n {
		_, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, fmt.Errorf("an answer header with a broken tagged field")
		}
		size, k2 := binary.Uvarint(b[k:])
		if k2 <= 0 || uint64(len(b)-k-k2) < size {
			return nil, fmt.Errorf("an answer header with a broken tagged field")
		}
		b = b[k+k2+int(size):]
	}
	return b, nil
}

// roundTrip sends req and decodes the answer, on a connection the caller
// holds alone (under mu, or not yet shared).
func (c *Conn) roundTrip(ctx context.Context, req protocol.Message) (protocol.Message, error) {
	var res protocol.Message
	err := c.within(ctx, func() (err error) {
		res, err = c.pc.RoundTrip(req)
		return err
	})
	return res, err
}

// exchangeAt sends req at version and reads the answer's body into
// buffer(size), on a connection the caller holds alone.
func (c *Conn) exchangeAt(ctx context.Context, version int16, req protocol.Message, buffer func(int) []byte) (body []byte, err error) {
	err = c.within(ctx, func() error {
		c.nextID++
		id := c.nextID
		if err := protocol.WriteRequest(c.pc, version, id, c.clientID, req); err != nil {
			return err
		}
		body, err = c.readAnswer(id, buffer)
		return err
	})
	return body, err
}

// readAnswer reads one answer's size and correlation id, checks the id is
// id and reads the rest into buffer(size).
func (c *Conn) readAnswer(id int32, buffer func(int) []byte) ([]byte, error) {
	var head [8]byte
	if _, err := io.ReadFull(c.pc, head[:]); err != nil {
		return nil, err
	}
	size := int32(binary.BigEndian.Uint32(head[:4]))
	if size < 4 {
		return nil, fmt.Errorf("an answer of %d bytes", size)
	}
	if got := int32(binary.BigEndian.Uint32(head[4:])); got != id {
		return nil, fmt.Errorf("correlation id mismatch (sent %d, got %d)", id, got)
	}
	body := buffer(int(size - 4))
	_, err := io.ReadFull(c.pc, body)
	return body, err
}

// within runs one request/response on the connection bounded by ctx: its
// deadline (or RequestTimeout) becomes the socket deadline and its
// cancellation unblocks I/O.
func (c *Conn) within(ctx context.Context, do func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(RequestTimeout)
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

// Version is the version Request sends key at; -1 when the broker does not
// serve key.
func (c *Conn) Version(key protocol.ApiKey) int16 { return versionOf(c.versions, key) }

// BrokerMax is the highest version of key the broker speaks, whatever
// kafka-go does; -1 when it does not serve key.
func (c *Conn) BrokerMax(key protocol.ApiKey) int16 { return versionOf(c.brokerMax, key) }

func versionOf(versions map[protocol.ApiKey]int16, key protocol.ApiKey) int16 {
	if v, ok := versions[key]; ok {
		return v
	}
	return -1
}

// Addr is the broker's host:port, as dialled.
func (c *Conn) Addr() string { return c.addr }

// Close closes the connection.
func (c *Conn) Close() error { return c.pc.Close() }

// Stale says whether err, from a request on a connection a pool had kept
// (reused), may only mean that the connection outlived its broker process:
// a broker that restarted (a rolling upgrade, MSK patching) resets every
// connection from before, and the first request on one fails at once with
// EOF or a reset. Such a connection is dialled again, once, before the
// broker counts as failed. A timeout is no such sign: the broker, or the
// path to it, is slow or gone, and a redial would only wait again.
func Stale(reused bool, err error) bool {
	if !reused || err == nil {
		return false
	}
	var ne net.Error
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	// net.ErrClosed: the client closed it itself (Close during a fetch).
	return !errors.Is(err, net.ErrClosed) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// reauthTime is when a session of lifetimeMs that began at began should be
// renewed: brokers with connections.max.reauth.ms set (and Amazon MSK with
// IAM, whose sessions end with their credentials) close a connection whose
// session expired at its next request (KIP-368), which a client would take
// for a lost broker. Like the Java client, renew at 85-95 % of the
// lifetime, spread so that a member's connections do not all renew at once.
func reauthTime(began time.Time, lifetimeMs int64) time.Time {
	if lifetimeMs <= 0 {
		return time.Time{}
	}
	life := time.Duration(lifetimeMs) * time.Millisecond
	return began.Add(life * time.Duration(85+rand.IntN(11)) / 100)
}

// reauthenticateIfDue runs the SASL exchange again on the open connection
// when its session is near its end, between two requests, as KIP-368
// allows. The mechanism starts afresh, so it signs with the credentials
// current now (MSK IAM: IRSA and Pod Identity rotate them).
func (c *Conn) reauthenticateIfDue(ctx context.Context) error {
	if c.mech == nil || c.reauthAt.IsZero() || time.Now().Before(c.reauthAt) {
		return nil
	}
	meta := c.saslMeta
	if err := c.authenticate(sasl.WithMetadata(ctx, &meta), c.mech); err != nil {
		return fmt.Errorf("SASL %s re-authentication with %s: %w", c.mech.Name(), c.addr, err)
	}
	return nil
}
