package producer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
	"github.com/segmentio/kafka-go/protocol/initproducerid"

	"github.com/logstore/logstore/internal/kafka/conn"
)

// Config is how a Producer writes. Zero values take the defaults below.
type Config struct {
	// Brokers are the bootstrap addresses.
	Brokers []string
	// Dial opens broker connections with TLS and SASL; nil is plain TCP.
	Dial     DialFunc
	ClientID string
	// Rack is the producer's own (its zone), for RackAware and for
	// counting bytes by locality; "" matches no broker.
	Rack        string
	Partitioner Partitioner
	Compression compress.Compression
	// BatchRecords and BatchBytes close a partition's batch; Linger is how
	// long a batch that is not full waits for more records while nobody
	// waits for it (Sent.Wait, Produce): default 0, sent as soon as its
	// broker's connection is free.
	BatchRecords int
	BatchBytes   int
	Linger       time.Duration
	// RequestTimeout bounds one Produce request (default 10s).
	RequestTimeout time.Duration
	// MaxAttempts is how often a batch is sent before its records fail
	// (default 10); a batch also fails once MaxAttempts×RequestTimeout
	// passed since it was closed.
	MaxAttempts int
	// MetadataMaxAge is how often leaders are asked for even without an
	// error (default 2s): a leader that moves back to this rack after a
	// broker restart is seen within it.
	MetadataMaxAge time.Duration
	// AutoCreateTopics lets metadata requests create a missing topic (for
	// brokers with auto.create.topics.enable).
	AutoCreateTopics bool
	// TransactionalID makes the producer transactional (txn.go): it
	// writes only inside transactions, and a producer started later with
	// the same id fences this one. "" is idempotent only.
	TransactionalID string
	// TransactionTimeout is how long the coordinator lets a transaction
	// stay open before aborting it (default 60s): what a read_committed
	// consumer of the output may wait when a producer dies mid-transaction.
	TransactionTimeout time.Duration
	Stats              *Stats
	Log                *slog.Logger
}

func (c *Config) setDefaults() {
	if c.BatchRecords <= 0 {
		c.BatchRecords = 1000
	}
	if c.BatchBytes <= 0 {
		c.BatchBytes = 1 << 20
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 10 * time.Second
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 10
	}
	if c.MetadataMaxAge <= 0 {
		c.MetadataMaxAge = 2 * time.Second
	}
	if c.TransactionTimeout <= 0 {
		c.TransactionTimeout = 60 * time.Second
	}
	if c.ClientID == "" {
		c.ClientID = "logstore"
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
}

// Producer writes records idempotently (see the package comment). It is
// safe for concurrent use; concurrent calls share batches and requests.
type Producer struct {
	cfg  Config
	ctl  *control
	life context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	wake    chan struct{} // the dispatcher has something to look at
	refresh chan struct{} // metadata is wanted now (a leader moved)
	lookup  sync.Mutex    // one first lookup of a topic at a time

	mu      sync.Mutex
	brokers map[int32]broker
	topics  map[string]*topicState
	busy    map[int32]bool // brokers with a request out
	conns   map[int32]*conn.Conn
	// The producer id and epoch, and the generation they belong to: a
	// batch stamped in an older generation is never stamped again with
	// new numbers while it may have been written (it is pinned).
	pid     int64
	epoch   int16
	gen     int
	needPID bool
	initing bool
	pidWait time.Time // no InitProducerId before this, after a failed one
	closed  bool
	// waiting counts the Waits under way: while any is, no batch lingers.
	waiting atomic.Int32
	// txn is the transaction state; nil without a TransactionalID.
	txn *txnState
}

// New starts a producer; nothing is dialled until the first Produce.
func New(cfg Config) (*Producer, error) {
	cfg.setDefaults()
	if len(cfg.Brokers) == 0 {
		return nil, errors.New("producer: no brokers")
	}
	if cfg.Compression != compress.None && cfg.Compression.Codec() == nil {
		return nil, fmt.Errorf("producer: compression %d is not one kafka-go knows", cfg.Compression)
	}
	life, stop := context.WithCancel(context.Background())
	p := &Producer{
		cfg:  cfg,
		ctl:  &control{dial: cfg.Dial, clientID: cfg.ClientID, seeds: cfg.Brokers, timeout: cfg.RequestTimeout, autoTopic: cfg.AutoCreateTopics},
		life: life, stop: stop,
		wake:    make(chan struct{}, 1),
		refresh: make(chan struct{}, 1),
		brokers: make(map[int32]broker),
		topics:  make(map[string]*topicState),
		busy:    make(map[int32]bool),
		conns:   make(map[int32]*conn.Conn),
		pid:     -1,
		needPID: true,
	}
	if cfg.TransactionalID != "" {
		p.txn = newTxnState(p, cfg.TransactionalID)
	}
	p.wg.Add(2)
	go p.dispatch()
	go p.refreshLoop()
	return p, nil
}

// call is one Produce call waiting for its records.
type call struct {
	mu        sync.Mutex
	pending   int
	failed    []RecordError
	done      chan struct{}
	cancelled atomic.Bool
}

// resolve settles one record of the call; err nil is written.
func (c *call) resolve(idx int, partition int32, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.failed = append(c.failed, RecordError{Index: idx, Partition: partition, Err: err})
	}
	if c.pending--; c.pending == 0 {
		close(c.done)
	}
}

// Produce writes records to topic and returns once every one is
// acknowledged by all in-sync replicas (acks=all) or has failed. The
// records' bytes must stay unchanged until it returns. When ctx ends, the
// records not yet sent are dropped and Produce returns once the ones on
// the wire are answered. A non-nil error is an *Error naming the records
// that failed, or the error that kept all of them from being sent.
func (p *Producer) Produce(ctx context.Context, topic string, records []Record) error {
	s, err := p.Send(ctx, topic, records)
	if err != nil || s == nil {
		return err
	}
	return s.Wait(ctx)
}

// Sent is records given to Send, on their way: Wait says how they ended.
type Sent struct {
	p     *Producer
	topic string
	total int
	c     *call
}

// Send queues records for topic and returns without waiting for them
// (nil when there are none): batches fill and go as the brokers take
// them, the ones nobody waits for after Linger. The records' bytes must
// stay unchanged until Wait returned. Records of one Send, and of Sends
// one after the other, reach each partition in the order given.
func (p *Producer) Send(ctx context.Context, topic string, records []Record) (*Sent, error) {
	if len(records) == 0 {
		return nil, nil
	}
	if p.txn != nil {
		p.mu.Lock()
		err := p.txn.usable()
		p.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
	ts, err := p.topic(ctx, topic)
	if err != nil {
		return nil, err
	}
	c := &call{pending: len(records), done: make(chan struct{})}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrClosed
	}
	if p.txn != nil {
		if err := p.txn.usable(); err != nil {
			p.mu.Unlock()
			return nil, err
		}
	}
	parts := make(map[*partState]bool)
	for i := range records {
		parts[p.enqueue(ts, c, i, &records[i])] = true
	}
	var adding []*partState
	if p.txn != nil {
		adding = toAdd(parts)
	}
	p.mu.Unlock()
	if len(adding) > 0 {
		// Failure fails the records held for these partitions: c ends.
		p.addPartitions(ctx, adding)
	}
	p.poke()
	return &Sent{p: p, topic: topic, total: len(records), c: c}, nil
}

// Done is closed once every record of the Send is written or failed.
func (s *Sent) Done() <-chan struct{} { return s.c.done }

// Wait returns once every record of the Send is acknowledged or has
// failed, as Produce does. While anyone waits, no batch lingers: what is
// waited for goes at once (the Java client's flush). When ctx ends, the
// records not yet sent are dropped.
func (s *Sent) Wait(ctx context.Context) error {
	c := s.c
	select {
	case <-c.done:
	default:
		s.p.waiting.Add(1)
		s.p.poke()
		select {
		case <-c.done:
		case <-ctx.Done():
			c.cancelled.Store(true)
			s.p.poke()
			<-c.done
		}
		s.p.waiting.Add(-1)
	}
	if len(c.failed) == 0 {
		return nil
	}
	c.mu.Lock()
	failed := slices.Clone(c.failed)
	c.mu.Unlock()
	slices.SortFunc(failed, func(a, b RecordError) int { return a.Index - b.Index })
	return &Error{Topic: s.topic, Total: s.total, Records: failed}
}

// poke wakes the dispatcher.
func (p *Producer) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// wantMetadata asks the refresher for fresh leaders now.
func (p *Producer) wantMetadata() {
	select {
	case p.refresh <- struct{}{}:
	default:
	}
}

// topic returns the topic's state, asking for its metadata the first
// time: a topic that does not exist fails here, naming it.
func (p *Producer) topic(ctx context.Context, name string) (*topicState, error) {
	p.mu.Lock()
	ts := p.topics[name]
	p.mu.Unlock()
	if ts != nil {
		return ts, nil
	}
	p.lookup.Lock()
	defer p.lookup.Unlock()
	p.mu.Lock()
	ts = p.topics[name]
	p.mu.Unlock()
	if ts != nil {
		return ts, nil
	}
	// A topic being created (auto-creation) has no leaders for a moment.
	for attempt := 0; ; attempt++ {
		brokers, layouts, err := p.ctl.metadata(ctx, []string{name})
		l, ok := layouts[name]
		if err == nil && ok && len(l.Partitions) > 0 {
			p.mu.Lock()
			p.brokers = brokers
			ts = newTopicState(name, l)
			p.topics[name] = ts
			p.mu.Unlock()
			return ts, nil
		}
		if err == nil {
			err = fmt.Errorf("topic %q: %w", name, kafka.UnknownTopicOrPartition)
		}
		var ke kafka.Error
		if attempt >= 10 || !errors.As(err, &ke) || !ke.Temporary() || errors.Is(err, kafka.UnknownTopicOrPartition) && !p.cfg.AutoCreateTopics {
			return nil, fmt.Errorf("producer: %w", err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// refreshLoop asks for the leaders of every topic in use every
// MetadataMaxAge, and at once when a request found a leader gone.
func (p *Producer) refreshLoop() {
	defer p.wg.Done()
	tick := time.NewTicker(p.cfg.MetadataMaxAge)
	defer tick.Stop()
	for {
		select {
		case <-p.life.Done():
			return
		case <-tick.C:
		case <-p.refresh:
		}
		p.refreshNow()
		// A burst of NOT_LEADER answers asks many times; one answer
		// serves them all.
		select {
		case <-p.life.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (p *Producer) refreshNow() {
	p.mu.Lock()
	names := make([]string, 0, len(p.topics))
	for n := range p.topics {
		names = append(names, n)
	}
	p.mu.Unlock()
	if len(names) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(p.life, p.cfg.RequestTimeout)
	defer cancel()
	brokers, layouts, err := p.ctl.metadata(ctx, names)
	if brokers == nil {
		p.cfg.Log.Warn("producer: metadata refresh failed; keeping the leaders known", "err", err)
		return
	}
	p.mu.Lock()
	p.brokers = brokers
	for name, l := range layouts {
		if ts := p.topics[name]; ts != nil {
			ts.update(l)
		}
	}
	for id, c := range p.conns {
		if b, ok := brokers[id]; !ok || b.Addr != c.Addr() {
			delete(p.conns, id)
			if !p.busy[id] {
				c.Close()
			}
		}
	}
	p.mu.Unlock()
	p.poke()
}

// initPID asks for a producer id (InitProducerId without a transactional
// id: any broker answers) and starts a new generation with it.
func (p *Producer) initPID() {
	defer p.wg.Done()
	ctx, cancel := context.WithTimeout(p.life, p.cfg.RequestTimeout)
	defer cancel()
	msg, err := p.ctl.call(ctx, &initproducerid.Request{TransactionTimeoutMs: -1, ProducerID: -1, ProducerEpoch: -1})
	if err == nil {
		if res := msg.(*initproducerid.Response); res.ErrorCode != 0 {
			err = kafka.Error(res.ErrorCode)
		} else {
			p.mu.Lock()
			p.pid, p.epoch = res.ProducerID, res.ProducerEpoch
			p.gen++
			p.needPID, p.initing = false, false
			p.mu.Unlock()
			p.cfg.Log.Debug("producer id", "producer_id", res.ProducerID, "epoch", res.ProducerEpoch)
			p.poke()
			return
		}
	}
	p.cfg.Log.Warn("producer: InitProducerId failed; asking again in a second", "err", err)
	p.mu.Lock()
	p.initing = false
	p.pidWait = time.Now().Add(time.Second)
	p.mu.Unlock()
	p.poke()
}

// resetPID gives up the producer id of generation gen: the brokers no
// longer know it (UNKNOWN_PRODUCER_ID), their sequence is not ours
// (OUT_OF_ORDER_SEQUENCE_NUMBER), or a batch that may have been written
// was given up, so the next batch's sequence could not follow it. Every
// partition starts again at sequence 0 under a new id, which the brokers
// take as a new producer. The caller holds mu.
func (p *Producer) resetPID(gen int, why string, err error) {
	if gen != p.gen || p.needPID {
		return
	}
	p.cfg.Log.Warn("producer: starting again with a new producer id", "producer_id", p.pid, "epoch", p.epoch, "why", why, "err", err)
	p.needPID = true
}

// Close stops the producer; records still queued fail with ErrClosed.
func (p *Producer) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	p.stop()
	p.wg.Wait()
	p.mu.Lock()
	for _, ts := range p.topics {
		for _, part := range ts.parts {
			for _, b := range part.queue {
				b.fail(ErrClosed)
			}
			part.queue = nil
		}
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	if p.txn != nil {
		p.txn.coord.Reset()
		for _, g := range p.txn.groups {
			g.Reset()
		}
	}
	p.ctl.close()
	return nil
}

// Partitions returns how many partitions topic has, asking the brokers the
// first time: the check that the topic exists (the error wraps
// kafka.UnknownTopicOrPartition when it does not).
func (p *Producer) Partitions(ctx context.Context, topic string) (int, error) {
	ts, err := p.topic(ctx, topic)
	if err != nil {
		return 0, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(ts.parts), nil
}
