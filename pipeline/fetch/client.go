package fetch

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
)

// DefaultFetchRequestMaxBytes is the most one Fetch returns over all its
// partitions, as the Java consumer's fetch.max.bytes.
const DefaultFetchRequestMaxBytes = 50 << 20

// ClientConfig configures a Client.
type ClientConfig struct {
	// Brokers are the seed addresses, host:port.
	Brokers []string
	// Dialer carries the connection settings: ClientID, Timeout, DialFunc,
	// Resolver, TLS and SASLMechanism. Nil means kafka.DefaultDialer.
	Dialer *kafka.Dialer
	// Isolation is ReadUncommitted (the default) or ReadCommitted.
	Isolation string
	// MinBytes and MaxWait: the broker answers a fetch when it has MinBytes
	// over all its partitions or MaxWait has passed. Defaults 1 byte and
	// 500ms.
	MinBytes int
	MaxWait  time.Duration
	// RequestMaxBytes caps one Fetch over all its partitions (each
	// partition is capped by its reader's MaxBytes); the broker still
	// returns a first batch larger than this. Default 50 MiB.
	RequestMaxBytes int
	// Stats, if set, counts fetched bytes, fetch requests and connections.
	Stats *Stats
	// Log defaults to slog.Default().
	Log *slog.Logger
}

// Client is a member's connection layer, shared by all of its partition
// readers and kept across group generations: per broker, one control
// connection (metadata, ListOffsets, OffsetForLeaderEpoch) and one fetch
// session (KIP-227) with its own connection, which sends one Fetch for every
// partition whose reader waits for records from that broker. A member with
// 600 partitions on 3 brokers thus sends about 3 fetches per round instead
// of 600, over 6 connections instead of 1,800, and an idle incremental
// fetch names no partition at all. A partition reader still decides, alone,
// which broker to fetch from and what to do with its part of the answer.
// A Client is safe for concurrent use.
type Client struct {
	cfg       ClientConfig
	pool      *brokerPool
	log       *slog.Logger
	isolation int8
	cfgErr    error

	// ctx ends with Close and aborts every session's fetch in flight.
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	sessions map[sessionKey]*fetchSession
}

// NewClient returns a client; it connects on first use.
func NewClient(cfg ClientConfig) *Client {
	if cfg.Dialer == nil {
		cfg.Dialer = kafka.DefaultDialer
	}
	if cfg.MinBytes <= 0 {
		cfg.MinBytes = 1
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = DefaultFetchMaxWait
	}
	if cfg.RequestMaxBytes <= 0 {
		cfg.RequestMaxBytes = DefaultFetchRequestMaxBytes
	}
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	iso, err := isolationLevel(cfg.Isolation)
	ctx, cancel := context.WithCancel(context.Background())
	return &Client{
		cfg:       cfg,
		pool:      newBrokerPool(cfg.Dialer, cfg.Brokers, log, cfg.Stats),
		log:       log,
		isolation: iso,
		cfgErr:    err,
		ctx:       ctx,
		cancel:    cancel,
		sessions:  make(map[sessionKey]*fetchSession),
	}
}

// Close ends the fetch sessions and closes every connection; readers still
// using the client fail.
func (c *Client) Close() error {
	c.cancel()
	c.pool.close()
	return nil
}

func (c *Client) closed() bool { return c.ctx.Err() != nil }

// fetch hands w to the fetch session of (broker, rack) and waits for its
// partition's part of the session's next Fetch. closing is the reader's:
// Close of the reader ends the wait.
func (c *Client) fetch(ctx context.Context, closing <-chan struct{}, broker int32, rack string, w *fetchWant) (*fetchedPartition, error) {
	s := c.enqueue(sessionKey{broker: broker, rack: rack}, w)
	if s == nil {
		return nil, errPoolClosed
	}
	select {
	case res := <-w.done:
		return res.part, res.err
	case <-ctx.Done():
		s.withdraw(w)
		return nil, ctx.Err()
	case <-closing:
		s.withdraw(w)
		return nil, errPoolClosed
	case <-c.ctx.Done():
		return nil, errPoolClosed
	}
}

// enqueue adds w to the session of key, starting the session if there is
// none (or the last one ended idle). Under c.mu, so that a session cannot
// end between being found and being given w.
func (c *Client) enqueue(key sessionKey, w *fetchWant) *fetchSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed() {
		return nil
	}
	s := c.sessions[key]
	if s == nil {
		s = newFetchSession(c, key)
		c.sessions[key] = s
		go s.run()
	}
	s.add(w)
	return s
}

// retire removes s once it has had nothing to do for a while; false when a
// reader gave it work meanwhile.
func (c *Client) retire(s *fetchSession) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !s.idle() {
		return false
	}
	if c.sessions[s.key] == s {
		delete(c.sessions, s.key)
	}
	return true
}
